package io.kvroute.openai;

import io.kvroute.openai.internal.Json;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The parsed body of an OpenAI-compatible request ({@code /v1/completions}, {@code /v1/chat/completions},
 * {@code /tokenize}); an immutable value, thread-safe.
 *
 * <p>{@link #parse} reads the JSON strictly (see {@link io.kvroute.openai.internal.Json}) and checks the members every request may carry:
 * {@code model} (a string) and {@code stream} (a boolean). The other members are read, and checked, when asked
 * for: {@link #prompt()} (exactly one of {@code prompt} and {@code messages}), {@link #completionPrompt()},
 * {@link #chatMessages()}, {@link #maxTokens()}, {@link #includeUsage()}. A JSON {@code null} counts as absent, as
 * in OpenAI's and vLLM's servers.
 *
 * <p>Prompt shapes, as vLLM reads them: a completion's {@code prompt} is a string, a list of one string, a list of
 * token ids, or a list of one list of token ids (batches of several prompts cannot be routed as one request and
 * are refused); a chat message's {@code content} is a string, null (empty), or a list of {@code text} parts joined
 * with a newline (other part types need the server's own processing and are refused).
 */
public final class OpenAiRequest {
  private final Map<String, @Nullable Object> body;
  private final @Nullable String model;
  private final boolean stream;

  private OpenAiRequest(Map<String, @Nullable Object> body) {
    this.body = Collections.unmodifiableMap(body);
    this.model = optionalString(body, "model");
    Object s = body.get("stream");
    if (s != null && !(s instanceof Boolean)) {
      throw new OpenAiRequestException("stream must be a boolean but was " + Json.write(s) + ".", "stream");
    }
    this.stream = Boolean.TRUE.equals(s);
  }

  /**
   * Parses a request body.
   *
   * @param utf8 the body, UTF-8 encoded
   * @return the request
   * @throws JsonException if the body is not valid JSON or not an object
   * @throws OpenAiRequestException if {@code model} is not a string or {@code stream} not a boolean
   */
  public static OpenAiRequest parse(byte[] utf8) {
    return new OpenAiRequest(Json.parseObject(Objects.requireNonNull(utf8, "utf8")));
  }

  /**
   * Reads an already parsed body.
   *
   * @param body the body's members
   * @return the request
   * @throws OpenAiRequestException if {@code model} is not a string or {@code stream} not a boolean
   */
  public static OpenAiRequest of(Map<String, @Nullable Object> body) {
    return new OpenAiRequest(Objects.requireNonNull(body, "body"));
  }

  /**
   * Every member of the body, as the strict JSON reader read them.
   *
   * @return the members, unmodifiable
   */
  public Map<String, @Nullable Object> body() {
    return body;
  }

  /**
   * Whether the body has the member with a non-null value.
   *
   * @param member the member's name
   * @return whether it is present and not null
   */
  public boolean has(String member) {
    return body.get(member) != null;
  }

  /**
   * The model the request names.
   *
   * @return the model, or null when absent
   */
  public @Nullable String model() {
    return model;
  }

  /**
   * Whether the response is to be streamed as server-sent events.
   *
   * @return {@code stream}, false when absent
   */
  public boolean stream() {
    return stream;
  }

  /**
   * Whether a streamed response ends with a usage chunk ({@code stream_options.include_usage}).
   *
   * @return the option, false when absent
   * @throws OpenAiRequestException if {@code stream_options} is not an object or the option not a boolean
   */
  public boolean includeUsage() {
    Object options = body.get("stream_options");
    if (options == null) {
      return false;
    }
    if (!(options instanceof Map<?, ?> map)) {
      throw new OpenAiRequestException("stream_options must be an object.", "stream_options");
    }
    Object include = map.get("include_usage");
    if (include != null && !(include instanceof Boolean)) {
      throw new OpenAiRequestException("stream_options.include_usage must be a boolean.", "stream_options");
    }
    return Boolean.TRUE.equals(include);
  }

  /**
   * The most output tokens asked for: {@code max_completion_tokens} when present (chat), else {@code max_tokens}.
   *
   * @return the limit, or null when neither is present
   * @throws OpenAiRequestException if the member is not an integer in the range of an {@code int}
   */
  public @Nullable Integer maxTokens() {
    String name = has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    Object value = body.get(name);
    if (value == null) {
      return null;
    }
    if (value instanceof Long l && l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
      return (int) (long) l;
    }
    throw new OpenAiRequestException(name + " must be an integer but was " + Json.write(value) + ".", name);
  }

  /**
   * The prompt of a completion or chat completion body: exactly one of {@code prompt} and {@code messages}.
   *
   * @return the prompt
   * @throws OpenAiRequestException if both or neither are present, or the one present is not usable
   */
  public Prompt prompt() {
    boolean hasPrompt = has("prompt");
    if (hasPrompt == has("messages")) {
      throw new OpenAiRequestException("The request must have exactly one of prompt and messages.",
          hasPrompt ? "messages" : "prompt");
    }
    return hasPrompt ? completionPrompt() : new Prompt(null, null, chatMessages());
  }

  /**
   * The {@code prompt} of a completion body, as text or token ids.
   *
   * @return the prompt, with {@link Prompt#messages()} null
   * @throws OpenAiRequestException if {@code prompt} is absent or not one of the shapes described above
   */
  public Prompt completionPrompt() {
    Object prompt = body.get("prompt");
    if (prompt instanceof String text) {
      return new Prompt(null, text, null);
    }
    if (prompt instanceof List<?> list && !list.isEmpty()) {
      Object first = list.get(0);
      if (first instanceof String text) {
        if (list.size() != 1) {
          throw batched(list.size());
        }
        return new Prompt(null, text, null);
      }
      if (first instanceof List<?> inner) {
        if (list.size() != 1) {
          throw batched(list.size());
        }
        return new Prompt(tokenIds(inner), null, null);
      }
      return new Prompt(tokenIds(list), null, null);
    }
    throw new OpenAiRequestException("prompt is required and must be a string, a list of token ids, or a list of"
        + " one of these.", "prompt");
  }

  private static OpenAiRequestException batched(int prompts) {
    return new OpenAiRequestException("Batched prompts (" + prompts + ") cannot be routed as one request; send one"
        + " prompt per request.", "prompt");
  }

  private static int[] tokenIds(List<?> list) {
    if (list.isEmpty()) {
      throw new OpenAiRequestException("prompt must not be an empty list of token ids.", "prompt");
    }
    int[] tokens = new int[list.size()];
    for (int i = 0; i < tokens.length; i++) {
      Object o = list.get(i);
      if (!(o instanceof Long id) || id < 0 || id > Integer.MAX_VALUE) {
        throw new OpenAiRequestException("prompt[" + i + "] must be a token id in [0, 2^31) but was "
            + Json.write(o) + ".", "prompt");
      }
      tokens[i] = (int) (long) id;
    }
    return tokens;
  }

  /**
   * The {@code messages} of a chat completion body.
   *
   * @return the messages, in order
   * @throws OpenAiRequestException if {@code messages} is absent, empty, or holds a message without a string
   *     {@code role} or with a {@code content} other than a string, null, or a list of text parts
   */
  public List<ChatMessage> chatMessages() {
    Object messages = body.get("messages");
    if (!(messages instanceof List<?> list) || list.isEmpty()) {
      throw new OpenAiRequestException("messages is required and must be a non-empty list.", "messages");
    }
    List<ChatMessage> out = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      if (!(list.get(i) instanceof Map<?, ?> message)) {
        throw new OpenAiRequestException("messages[" + i + "] must be an object.", "messages");
      }
      if (!(message.get("role") instanceof String role)) {
        throw new OpenAiRequestException("messages[" + i + "].role must be a string.", "messages");
      }
      out.add(new ChatMessage(role, content(message.get("content"), i)));
    }
    return List.copyOf(out);
  }

  private static String content(@Nullable Object content, int index) {
    if (content == null) {
      return "";
    }
    if (content instanceof String text) {
      return text;
    }
    if (content instanceof List<?> parts) {
      StringBuilder sb = new StringBuilder();
      for (int p = 0; p < parts.size(); p++) {
        if (!(parts.get(p) instanceof Map<?, ?> part) || !"text".equals(part.get("type"))
            || !(part.get("text") instanceof String text)) {
          throw new OpenAiRequestException("messages[" + index + "].content[" + p + "] must be {\"type\": \"text\","
              + " \"text\": …}; other content types need the server's own processing.", "messages");
        }
        if (p > 0) {
          sb.append('\n');
        }
        sb.append(text);
      }
      return sb.toString();
    }
    throw new OpenAiRequestException("messages[" + index + "].content must be a string, null, or a list of text"
        + " parts.", "messages");
  }

  private static @Nullable String optionalString(Map<String, @Nullable Object> body, String name) {
    Object value = body.get(name);
    if (value == null) {
      return null;
    }
    if (!(value instanceof String s)) {
      throw new OpenAiRequestException(name + " must be a string but was " + Json.write(value) + ".", name);
    }
    return s;
  }

  @Override
  public String toString() {
    return "OpenAiRequest{model=" + model + ", stream=" + stream + ", members=" + body.keySet() + "}";
  }

  /**
   * A request's prompt: exactly one of token ids, text and chat messages is set; an immutable value (the token
   * array is the caller's to keep), thread-safe.
   *
   * @param tokens token ids given by the client, or null
   * @param text prompt text, or null
   * @param messages chat messages, or null
   */
  public record Prompt(int @Nullable [] tokens, @Nullable String text, @Nullable List<ChatMessage> messages) {
    /**
     * Checks that exactly one component is set.
     *
     * @param tokens token ids, or null
     * @param text prompt text, or null
     * @param messages chat messages, or null
     * @throws IllegalArgumentException unless exactly one component is set
     */
    public Prompt {
      int set = (tokens != null ? 1 : 0) + (text != null ? 1 : 0) + (messages != null ? 1 : 0);
      if (set != 1) {
        throw new IllegalArgumentException("exactly one of tokens, text and messages must be set but " + set
            + " were");
      }
    }
  }
}
