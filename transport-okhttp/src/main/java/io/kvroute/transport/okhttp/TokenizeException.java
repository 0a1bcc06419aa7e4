package io.kvroute.transport.okhttp;

import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * A tokenizer server refused a request or answered something that is not a valid tokenization; immutable,
 * thread-safe.
 */
public final class TokenizeException extends IOException {
  private static final long serialVersionUID = 1L;

  /** The HTTP status of the refusal, or -1 for a malformed response. */
  private final int statusCode;

  /**
   * @param message what went wrong, for logs
   * @param statusCode the HTTP status, or -1 when the response was received but malformed
   * @param cause the underlying error, or null
   */
  public TokenizeException(String message, int statusCode, @Nullable Throwable cause) {
    super(message, cause);
    this.statusCode = statusCode;
  }

  /**
   * The HTTP status of a refusal (for example 400 or 404), or -1 when the response itself was malformed.
   *
   * @return the HTTP status (for example 400 or 404), or -1 for a malformed response
   */
  public int statusCode() {
    return statusCode;
  }
}
