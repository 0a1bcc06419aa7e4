package io.kvroute.transport.okhttp;

import io.kvroute.openai.ChatMessage;
import io.kvroute.openai.OpenAiRequest;
import java.io.IOException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Turns prompts into the token ids an engine will see, so that a gateway holding only text can route by prefix;
 * implementations must be thread-safe.
 *
 * <p>{@link OkHttpTokenizer} asks a vLLM server's {@code POST /tokenize}; an in-process tokenizer of the same model
 * may implement this interface as well. The ids must be the engine's own (same tokenizer, same chat template),
 * or prefixes will not match.
 */
public interface Tokenizer {
  /**
   * Tokenizes a completion prompt.
   *
   * @param model the model whose tokenizer to use, or null for the server's default
   * @param prompt the completion prompt text, as the engine receives it
   * @return the prompt's token ids, as the engine will see them; never empty for a non-empty prompt
   * @throws IOException if the tokenizer cannot be reached or refuses the prompt ({@link TokenizeException})
   */
  int[] tokenize(@Nullable String model, String prompt) throws IOException;

  /**
   * Tokenizes a chat conversation through the model's chat template, with the generation prompt added (as a chat
   * completion request sees it).
   *
   * @param model the model whose tokenizer to use, or null for the server's default
   * @param messages the conversation, in order, not empty
   * @return the token ids of the templated conversation, including the generation prompt
   * @throws IOException if the tokenizer cannot be reached or refuses the messages ({@link TokenizeException})
   */
  int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) throws IOException;

  /**
   * Tokenizes the prompt of an OpenAI-compatible request body: a completion's {@code prompt} (text, or token ids
   * taken as they are) or a chat completion's {@code messages} (string contents, or lists of text parts joined with
   * a newline); the body's {@code model} selects the tokenizer.
   *
   * <p>The default implementation parses the body and calls {@link #tokenize} or {@link #tokenizeChat};
   * {@link OkHttpTokenizer} instead sends the body's own {@code messages} (and tools, chat template options) to the
   * server unchanged.
   *
   * @param requestBody the OpenAI completion or chat completion request body, UTF-8 JSON
   * @return the token ids the engine will see for the body's prompt or messages
   * @throws IllegalArgumentException if the body is not a JSON object with a usable {@code prompt} or
   *     {@code messages}
   * @throws IOException if the tokenizer fails
   */
  default int[] tokenizeRequest(byte[] requestBody) throws IOException {
    OpenAiRequest request = OpenAiRequest.parse(requestBody);
    OpenAiRequest.Prompt prompt = request.prompt();
    if (prompt.tokens() != null) {
      return prompt.tokens();
    }
    if (prompt.text() != null) {
      return tokenize(request.model(), prompt.text());
    }
    return tokenizeChat(request.model(), prompt.messages());
  }
}
