package io.kvroute.openai;

import org.jspecify.annotations.Nullable;

/**
 * A request body that is valid JSON but not a usable OpenAI-compatible request (a member of the wrong type, no
 * prompt, a batched prompt); immutable, thread-safe. Servers answer it with 400 and {@link #param()} as OpenAI's
 * {@code error.param}.
 */
public final class OpenAiRequestException extends IllegalArgumentException {
  /** The serialized form's version. */
  private static final long serialVersionUID = 1L;

  /** The member at fault, or null. */
  private final @Nullable String param;

  /**
   * Creates the exception.
   *
   * @param message what is wrong, as a sentence
   * @param param the offending top-level member, or null
   */
  public OpenAiRequestException(String message, @Nullable String param) {
    super(message);
    this.param = param;
  }

  /**
   * The top-level member of the body that is wrong ({@code prompt}, {@code messages}, {@code model}, …), or null.
   *
   * @return the member's name, or null
   */
  public @Nullable String param() {
    return param;
  }
}
