package io.kvroute;

import java.util.Objects;

/**
 * Thrown by {@link Router#select} when no registered worker may serve the request, with the {@link Reason};
 * immutable, thread-safe.
 *
 * <p>The status is 404 for {@link Reason#NO_WORKER_FOR_MODEL} (the request names a model nobody serves) and 503
 * (no capacity right now) otherwise.
 */
public final class NoWorkerAvailableException extends RoutingException {
  private static final long serialVersionUID = 1L;

  /** Why no worker was available, checked in this order; immutable (an enum), thread-safe. */
  public enum Reason {
    /** No worker is registered. */
    NO_WORKERS,
    /** No registered worker serves the request's model. */
    NO_WORKER_FOR_MODEL,
    /** Workers serve the model, but none has the request's LoRA adapter. */
    NO_WORKER_FOR_LORA,
    /** The request's allow-list excludes every worker that serves it. */
    NONE_ALLOWED,
    /** Every worker that could serve it is draining. */
    ALL_DRAINING,
    /** Every worker that could serve it is ejected (or draining) after failures. */
    ALL_UNHEALTHY
  }

  /** Why no worker could take the request. */
  private final Reason reason;

  /**
   * @param reason why no worker was available
   * @param message the detail message
   */
  public NoWorkerAvailableException(Reason reason, String message) {
    super(message, null);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  @Override
  public int httpStatus() {
    return reason == Reason.NO_WORKER_FOR_MODEL ? 404 : 503;
  }

  @Override
  public Reason reason() {
    return reason;
  }
}
