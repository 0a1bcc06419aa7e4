package io.kvroute.tokenizers;

/**
 * Encodes text to token ids the way one {@code tokenizer.json} does; implementations are thread-safe and throw
 * {@link IllegalStateException} once closed.
 */
interface TextEncoder extends AutoCloseable {
  /**
   * Encodes {@code text} (valid UTF-16: no unpaired surrogates).
   *
   * @param text the text
   * @param addSpecialTokens whether the post-processor's special tokens (BOS, ...) are added
   * @return the token ids
   */
  int[] encode(String text, boolean addSpecialTokens);

  /** What does the encoding, for messages: "java" or "native". */
  String kind();

  @Override
  void close();
}
