package io.kvroute.tokenizers;

import com.fasterxml.jackson.core.JsonProcessingException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads OpenAI-compatible request bodies the way vLLM's OpenAI server does before it renders a chat template;
 * stateless, thread-safe.
 *
 * <p>vLLM's rules, followed here: a chat message's content is a string, null (""), or a list of text parts, which
 * are joined with {@code "\n"} for templates that do not loop over content ("string" content format) and kept as
 * {@code {"type": "text", "text": ...}} parts for those that do ("openai" format, where a string content becomes
 * one part too); an assistant's {@code tool_calls} keep their members, with {@code function.arguments} parsed from
 * the JSON string clients send into an object (empty or missing: {@code {}}) and an empty list dropped;
 * {@code reasoning}/{@code reasoning_content} are both set from either; a tool message keeps its
 * {@code tool_call_id}; a string {@code name} is kept. Tools are dumped as {@code {type, function: {name,
 * description, parameters, ...}}} with absent description and parameters as null, as pydantic's
 * {@code model_dump} writes them.
 */
final class OpenAiRequests {
  private OpenAiRequests() {}

  /** Part types that carry media, which the engine turns into placeholder tokens a text tokenizer cannot know. */
  private static final Set<String> MEDIA_PARTS = Set.of("image_url", "input_image", "image", "image_pil",
      "image_embeds", "input_audio", "audio_url", "audio", "video_url", "video", "file");
  /** Template variables that {@code chat_template_kwargs} may not replace. */
  private static final Set<String> RESERVED = Set.of("messages", "tools", "documents", "add_generation_prompt",
      "continue_final_message", "chat_template", "tokenize");

  /** A parsed body: a completion (text or ids) or a chat. */
  record Request(@Nullable String model, @Nullable String prompt, int @Nullable [] ids, boolean addSpecialTokens,
      @Nullable Chat chat) {}

  /** A chat as the template will see it. */
  record Chat(List<Map<String, Object>> messages, @Nullable List<Object> tools, boolean addGenerationPrompt,
      boolean continueFinalMessage, Map<String, Object> kwargs) {}

  static Map<String, Object> parseObject(byte[] body) {
    Object parsed;
    try {
      parsed = TokenizerFiles.JSON.readValue(body, Object.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("the request body is not valid JSON: " + e.getOriginalMessage(), e);
    } catch (IOException e) {
      throw new IllegalArgumentException("the request body cannot be read: " + e.getMessage(), e);
    }
    if (!(parsed instanceof Map<?, ?>)) {
      throw new IllegalArgumentException("the request body must be a JSON object");
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> map = (Map<String, Object>) parsed;
    return map;
  }

  /**
   * Reads a completion or chat completion body.
   *
   * @param openAiContent whether the template takes content as a list of parts
   * @param roles the roles a message may have
   * @throws IllegalArgumentException naming the member if the body is not a usable request
   * @throws UnsupportedOperationException if it holds media parts (images, audio, video) a text tokenizer cannot
   *     count
   */
  static Request parse(byte[] body, boolean openAiContent, Set<String> roles) {
    Map<String, Object> map = parseObject(body);
    String model = null;
    if (map.get("model") != null) {
      if (!(map.get("model") instanceof String m)) {
        throw new IllegalArgumentException("model must be a string");
      }
      model = m;
    }
    boolean hasPrompt = map.get("prompt") != null; // a JSON null counts as absent, as in vLLM's server
    boolean hasMessages = map.get("messages") != null;
    if (hasPrompt == hasMessages) {
      throw new IllegalArgumentException("the request body must have exactly one of prompt and messages");
    }
    if (hasPrompt) {
      boolean special = bool(map, "add_special_tokens", true);
      Object prompt = map.get("prompt");
      if (prompt instanceof String text) {
        return new Request(model, text, null, special, null);
      }
      if (prompt instanceof List<?> list && list.size() == 1 && list.get(0) instanceof String text) {
        return new Request(model, text, null, special, null);
      }
      return new Request(model, null, tokenIds(prompt), special, null);
    }
    boolean special = bool(map, "add_special_tokens", false);
    return new Request(model, null, null, special, chat(map, openAiContent, roles));
  }

  static Chat chat(Map<String, Object> map, boolean openAiContent, Set<String> roles) {
    if (!(map.get("messages") instanceof List<?> raw) || raw.isEmpty()) {
      throw new IllegalArgumentException("messages must be a non-empty list");
    }
    List<Map<String, Object>> messages = new ArrayList<>(raw.size());
    for (int i = 0; i < raw.size(); i++) {
      messages.add(message(raw.get(i), "messages[" + i + "]", openAiContent, roles));
    }
    boolean generation = bool(map, "add_generation_prompt", true);
    boolean continueFinal = bool(map, "continue_final_message", false);
    if (generation && continueFinal && map.get("add_generation_prompt") != null) {
      throw new IllegalArgumentException(
          "add_generation_prompt and continue_final_message cannot both be true");
    }
    if (continueFinal) {
      generation = false;
    }
    List<Object> tools = null;
    Object rawTools = map.get("tools");
    if (rawTools != null) {
      if (!(rawTools instanceof List<?> list)) {
        throw new IllegalArgumentException("tools must be a list");
      }
      tools = new ArrayList<>(list.size());
      for (int i = 0; i < list.size(); i++) {
        tools.add(tool(list.get(i), "tools[" + i + "]"));
      }
    }
    Map<String, Object> kwargs = new LinkedHashMap<>();
    Object rawKwargs = map.get("chat_template_kwargs");
    if (rawKwargs != null) {
      if (!(rawKwargs instanceof Map<?, ?> kw)) {
        throw new IllegalArgumentException("chat_template_kwargs must be an object");
      }
      kw.forEach((k, v) -> {
        if (!RESERVED.contains(String.valueOf(k))) {
          kwargs.put(String.valueOf(k), v);
        }
      });
    }
    if (map.get("chat_template") != null) {
      throw new UnsupportedOperationException("a request's own chat_template is not rendered locally");
    }
    return new Chat(messages, tools, generation, continueFinal, kwargs);
  }

  private static Map<String, Object> message(@Nullable Object raw, String where, boolean openAiContent,
      Set<String> roles) {
    if (!(raw instanceof Map<?, ?> m)) {
      throw new IllegalArgumentException(where + " must be an object");
    }
    if (!(m.get("role") instanceof String role)) {
      throw new IllegalArgumentException(where + ".role must be a string");
    }
    if (!roles.contains(role)) {
      throw new IllegalArgumentException(where + " has the unknown role '" + role + "' (known: "
          + String.join(", ", roles.stream().sorted().toList()) + ")");
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("role", role);
    out.put("content", content(m.get("content"), where + ".content", openAiContent));
    if (role.equals("assistant")) {
      Object calls = m.get("tool_calls");
      if (calls != null) {
        if (!(calls instanceof List<?> list)) {
          throw new IllegalArgumentException(where + ".tool_calls must be a list");
        }
        if (!list.isEmpty()) {
          List<Object> parsed = new ArrayList<>(list.size());
          for (int j = 0; j < list.size(); j++) {
            parsed.add(toolCall(list.get(j), where + ".tool_calls[" + j + "]"));
          }
          out.put("tool_calls", parsed);
        }
      }
      Object reasoning = m.get("reasoning") != null ? m.get("reasoning") : m.get("reasoning_content");
      if (reasoning != null) {
        if (!(reasoning instanceof String)) {
          throw new IllegalArgumentException(where + ".reasoning_content must be a string");
        }
        out.put("reasoning", reasoning);
        out.put("reasoning_content", reasoning);
      }
    } else if (role.equals("tool") && m.containsKey("tool_call_id")) {
      out.put("tool_call_id", m.get("tool_call_id"));
    }
    if (m.get("name") instanceof String name) {
      out.put("name", name);
    }
    return out;
  }

  private static Object content(@Nullable Object content, String where, boolean openAiContent) {
    if (content == null) {
      return openAiContent ? new ArrayList<>() : "";
    }
    if (content instanceof String s) {
      if (!openAiContent) {
        return s;
      }
      List<Object> parts = new ArrayList<>(1);
      parts.add(textPart(s));
      return parts;
    }
    if (!(content instanceof List<?> parts)) {
      throw new IllegalArgumentException(where + " must be a string, null, or a list of content parts, not "
          + describe(content));
    }
    List<String> texts = new ArrayList<>(parts.size());
    for (int j = 0; j < parts.size(); j++) {
      String at = where + "[" + j + "]";
      Object part = parts.get(j);
      if (part instanceof String s) {
        texts.add(s);
        continue;
      }
      if (!(part instanceof Map<?, ?> p)) {
        throw new IllegalArgumentException(at + " must be a content part object, not " + describe(part));
      }
      Object type = p.get("type");
      if (type == null && p.containsKey("text")) {
        type = "text";
      }
      if ("text".equals(type) || "input_text".equals(type)) {
        if (!(p.get("text") instanceof String text)) {
          throw new IllegalArgumentException(at + ".text must be a string, not " + describe(p.get("text")));
        }
        texts.add(text);
      } else if (type instanceof String t && MEDIA_PARTS.contains(t)) {
        throw new UnsupportedOperationException(at + " is a '" + t + "' part: media placeholders are only "
            + "counted by the engine (use its /tokenize)");
      } else if (type instanceof String t && t.equals("refusal") && p.get("refusal") instanceof String r) {
        texts.add(r);
      } else {
        throw new IllegalArgumentException(at + " has the unknown content part type " + describe(type));
      }
    }
    if (!openAiContent) {
      return String.join("\n", texts);
    }
    List<Object> out = new ArrayList<>(texts.size());
    for (String t : texts) {
      out.add(textPart(t));
    }
    return out;
  }

  private static Map<String, Object> textPart(String text) {
    Map<String, Object> part = new LinkedHashMap<>();
    part.put("type", "text");
    part.put("text", text);
    return part;
  }

  private static Map<String, Object> toolCall(@Nullable Object raw, String where) {
    if (!(raw instanceof Map<?, ?> call)) {
      throw new IllegalArgumentException(where + " must be an object");
    }
    Map<String, Object> out = copy(call);
    if (!(call.get("function") instanceof Map<?, ?> fn)) {
      throw new IllegalArgumentException(where + ".function must be an object");
    }
    if (!(fn.get("name") instanceof String)) {
      throw new IllegalArgumentException(where + ".function.name must be a string");
    }
    Map<String, Object> function = copy(fn);
    Object args = fn.get("arguments");
    if (args == null || (args instanceof String s && s.isEmpty())) {
      function.put("arguments", new LinkedHashMap<>());
    } else if (args instanceof String s) {
      try {
        function.put("arguments", TokenizerFiles.JSON.readValue(s, Object.class));
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException(where + ".function.arguments is not valid JSON: "
            + e.getOriginalMessage(), e);
      }
    } else if (!(args instanceof Map<?, ?> || args instanceof List<?>)) {
      throw new IllegalArgumentException(where + ".function.arguments must be a JSON string or an object");
    }
    out.put("function", function);
    return out;
  }

  private static Map<String, Object> tool(@Nullable Object raw, String where) {
    if (!(raw instanceof Map<?, ?> t)) {
      throw new IllegalArgumentException(where + " must be an object");
    }
    Object type = t.get("type") == null ? "function" : t.get("type");
    if (!"function".equals(type)) {
      throw new UnsupportedOperationException(where + " has type " + describe(type) + "; only function tools "
          + "are rendered locally");
    }
    if (!(t.get("function") instanceof Map<?, ?> fn)) {
      throw new IllegalArgumentException(where + ".function must be an object");
    }
    if (!(fn.get("name") instanceof String)) {
      throw new IllegalArgumentException(where + ".function.name must be a string");
    }
    if (fn.get("description") != null && !(fn.get("description") instanceof String)) {
      throw new IllegalArgumentException(where + ".function.description must be a string");
    }
    if (fn.get("parameters") != null && !(fn.get("parameters") instanceof Map<?, ?>)) {
      throw new IllegalArgumentException(where + ".function.parameters must be an object");
    }
    Map<String, Object> function = new LinkedHashMap<>();
    function.put("name", fn.get("name"));
    function.put("description", fn.get("description"));
    function.put("parameters", fn.get("parameters"));
    fn.forEach((k, v) -> function.putIfAbsent(String.valueOf(k), v));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("type", "function");
    out.put("function", function);
    t.forEach((k, v) -> out.putIfAbsent(String.valueOf(k), v));
    return out;
  }

  private static Map<String, Object> copy(Map<?, ?> m) {
    Map<String, Object> out = new LinkedHashMap<>();
    m.forEach((k, v) -> out.put(String.valueOf(k), v));
    return out;
  }

  private static boolean bool(Map<String, Object> map, String key, boolean fallback) {
    Object v = map.get(key);
    if (v == null) {
      return fallback;
    }
    if (!(v instanceof Boolean b)) {
      throw new IllegalArgumentException(key + " must be a boolean, not " + describe(v));
    }
    return b;
  }

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
    int[] ids = new int[list.size()];
    for (int i = 0; i < ids.length; i++) {
      Object v = list.get(i);
      if (!(v instanceof Integer || v instanceof Long) || ((Number) v).longValue() < 0
          || ((Number) v).longValue() > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("prompt[" + i + "] is not a token id: " + v);
      }
      ids[i] = ((Number) v).intValue();
    }
    return ids;
  }

  static String describe(@Nullable Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof String s) {
      return "'" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "'";
    }
    if (v instanceof Map<?, ?>) {
      return "an object";
    }
    if (v instanceof List<?>) {
      return "a list";
    }
    if (v instanceof Boolean) {
      return "a boolean";
    }
    if (v instanceof Number) {
      return "a number";
    }
    return v.getClass().getSimpleName();
  }
}
