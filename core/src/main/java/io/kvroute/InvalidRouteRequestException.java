package io.kvroute;

import java.util.Objects;

/**
 * Thrown by {@link Router#select} when the request itself cannot be routed (status 400); immutable, thread-safe.
 */
public final class InvalidRouteRequestException extends RoutingException {
  private static final long serialVersionUID = 1L;

  /** What is wrong with the request; immutable (an enum), thread-safe. */
  public enum Reason {
    /** The prompt has no tokens. */
    EMPTY_PROMPT,
    /** The prompt is longer than {@link Router.Builder#maxPromptTokens}. */
    PROMPT_TOO_LONG,
    /** Another parameter is invalid. */
    INVALID_PARAMETER
  }

  /** What is wrong with the request. */
  private final Reason reason;

  /**
   * @param reason what is wrong
   * @param message the detail message, naming the field and value
   */
  public InvalidRouteRequestException(Reason reason, String message) {
    super(message, null);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  @Override
  public int httpStatus() {
    return 400;
  }

  @Override
  public Reason reason() {
    return reason;
  }
}
