package io.kvroute.tokenizers;

/**
 * A chat template could not be rendered: it uses a Jinja feature this module does not support (named in the
 * message), it raised an error itself ({@code raise_exception}, for example "Conversation roles must alternate"),
 * or it failed on the request's values; an immutable exception, thread-safe.
 *
 * <p>It is an {@link IllegalArgumentException} because most of these are the request's fault, which a gateway
 * answers with HTTP 400; {@link #isTemplateRaised()} tells the template's own errors apart.
 */
public final class ChatTemplateException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  /** Whether the template raised the error itself ({@code raise_exception}). */
  private final boolean templateRaised;

  /** @param message what failed, naming the feature, variable or template message */
  public ChatTemplateException(String message) {
    this(message, false, null);
  }

  ChatTemplateException(String message, boolean templateRaised, Throwable cause) {
    super(message, cause);
    this.templateRaised = templateRaised;
  }

  /**
   * Returns whether the template itself raised this error with {@code raise_exception(message)}.
   *
   * @return true for the template's own error, false for an engine failure or an unsupported feature
   */
  public boolean isTemplateRaised() {
    return templateRaised;
  }
}
