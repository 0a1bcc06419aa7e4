package io.kvroute.openai;

/**
 * Malformed JSON, or a value {@link io.kvroute.openai.internal.Json} cannot write; immutable, thread-safe.
 *
 * <p>Its message names what was wrong and, for input, the character offset where it was found.
 */
public final class JsonException extends IllegalArgumentException {
  /** The serialized form's version. */
  private static final long serialVersionUID = 1L;

  /** Where in the input the error was found, or -1. */
  private final int offset;

  /**
   * A reading error.
   *
   * @param message what was wrong
   * @param offset the character offset in the input, or -1 when not reading
   */
  public JsonException(String message, int offset) {
    super(offset < 0 ? message : message + " at offset " + offset);
    this.offset = offset;
  }

  /**
   * The character offset in the input where the error was found (in characters of the decoded text), or -1 for a
   * writing error or invalid UTF-8.
   *
   * @return the offset, or -1
   */
  public int offset() {
    return offset;
  }
}
