package io.kvroute.transport.okhttp;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Reads the prompt of OpenAI-compatible request bodies; stateless, thread-safe. */
final class OpenAiBodies {
  private OpenAiBodies() {}

  /** Exactly one of tokens, text and messages is set. */
  record Prompt(@Nullable String model, int @Nullable [] tokens, @Nullable String text,
      @Nullable List<ChatMessage> messages) {}

  /**
   * Reads the prompt of a completion or chat completion body.
   *
   * @throws IllegalArgumentException if the body is not a JSON object with exactly one usable prompt
   */
  static Prompt prompt(byte[] body) {
    Object parsed;
    try {
      parsed = Json.parse(body);
    } catch (Json.JsonException e) {
      throw new IllegalArgumentException("the request body is not valid JSON: " + e.getMessage(), e);
    }
    if (!(parsed instanceof Map<?, ?> map)) {
      throw new IllegalArgumentException("the request body must be a JSON object");
    }
    String model = model(map.get("model"));
    boolean hasPrompt = map.containsKey("prompt");
    boolean hasMessages = map.containsKey("messages");
    if (hasPrompt == hasMessages) {
      throw new IllegalArgumentException("the request body must have exactly one of prompt and messages");
    }
    if (hasPrompt) {
      Object prompt = map.get("prompt");
      if (prompt instanceof String text) {
        return new Prompt(model, null, text, null);
      }
      if (prompt instanceof List<?> list && list.size() == 1 && list.get(0) instanceof String text) {
        return new Prompt(model, null, text, null);
      }
      return new Prompt(model, tokenIds(prompt), null, null);
    }
    return new Prompt(model, null, null, messages(map.get("messages")));
  }

  static @Nullable String model(@Nullable Object model) {
    if (model == null) {
      return null;
    }
    if (!(model instanceof String name)) {
      throw new IllegalArgumentException("model must be a string");
    }
    return name;
  }

  /**
   * The ids of a token prompt: a list of ids, or a list holding one list of ids.
   *
   * @throws IllegalArgumentException if {@code prompt} is neither, or holds more than one prompt
   */
  static int[] tokenIds(@Nullable Object prompt) {
    if (!(prompt instanceof List<?> list) || list.isEmpty()) {
      throw new IllegalArgumentException("prompt must be a string, a list of token ids, or a list of one of these");
    }
    if (list.get(0) instanceof List<?> inner) {
      if (list.size() != 1) {
        throw new IllegalArgumentException("batched prompts (" + list.size() + ") cannot be routed as one request");
      }
      return tokenIds(inner);
    }
    if (list.get(0) instanceof String) {
      throw new IllegalArgumentException("batched prompts (" + list.size() + ") cannot be routed as one request");
    }
    int[] tokens = new int[list.size()];
    for (int i = 0; i < tokens.length; i++) {
      if (!(list.get(i) instanceof Long id) || id < 0 || id > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("prompt[" + i + "] must be a token id in [0, 2^31) but was "
            + list.get(i));
      }
      tokens[i] = (int) (long) id;
    }
    return tokens;
  }

  /**
   * Reads chat messages whose contents are strings, null, or lists of text parts (joined with a newline).
   *
   * @throws IllegalArgumentException on anything else
   */
  static List<ChatMessage> messages(@Nullable Object messages) {
    if (!(messages instanceof List<?> list) || list.isEmpty()) {
      throw new IllegalArgumentException("messages must be a non-empty list");
    }
    List<ChatMessage> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      if (!(list.get(i) instanceof Map<?, ?> message)) {
        throw new IllegalArgumentException("messages[" + i + "] must be an object");
      }
      if (!(message.get("role") instanceof String role)) {
        throw new IllegalArgumentException("messages[" + i + "].role must be a string");
      }
      Object content = message.get("content");
      String text;
      if (content == null) {
        text = "";
      } else if (content instanceof String s) {
        text = s;
      } else if (content instanceof List<?> parts) {
        StringBuilder sb = new StringBuilder();
        boolean first = true;
        for (Object part : parts) {
          if (!(part instanceof Map<?, ?> p) || !"text".equals(p.get("type")) || !(p.get("text") instanceof String t)) {
            throw new IllegalArgumentException("messages[" + i + "].content parts other than text need the server's"
                + " tokenizer");
          }
          if (!first) {
            sb.append('\n');
          }
          sb.append(t);
          first = false;
        }
        text = sb.toString();
      } else {
        throw new IllegalArgumentException("messages[" + i + "].content must be a string or a list of text parts");
      }
      out.add(new ChatMessage(role, text));
    }
    return out;
  }
}
