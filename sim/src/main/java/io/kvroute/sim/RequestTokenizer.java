package io.kvroute.sim;

/**
 * Turns an OpenAI-compatible request body into the prompt token ids the simulated engine caches, in place of
 * {@link SimTokenizer}; implementations must be thread-safe (the server calls it from its HTTP threads).
 *
 * <p>Give it the tokenizer a gateway uses for the same model (for example kvroute-tokenizers' {@code HfTokenizer},
 * whose {@code tokenizeRequest} has this shape: {@code SimServer.newBuilder().requestTokenizer(hf::tokenizeRequest)})
 * so that the simulator's KV block hashes, its KV events and its {@code /tokenize} answers agree with what the
 * gateway predicts, as a real vLLM's do with a gateway that tokenizes as vLLM does. {@link SimMain}'s
 * {@code --tokenizer DIR} loads one from a model directory.
 */
@FunctionalInterface
public interface RequestTokenizer {
  /**
   * Tokenizes a {@code /v1/completions} body with a text prompt, or a {@code /v1/chat/completions} body (the
   * same bodies {@code /tokenize} takes).
   *
   * @param requestBody the JSON body as received
   * @return the prompt token ids
   * @throws RuntimeException if the body cannot be tokenized; the server answers 400 with its message
   */
  int[] tokenizeRequest(byte[] requestBody);
}
