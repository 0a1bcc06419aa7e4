package io.kvroute.spring.gateway;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.buffer.DataBuffer;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Watches a response body's chunks, as they pass through unchanged, for the first output token; not thread-safe
 * (one per response; Reactor delivers a body's chunks serially).
 *
 * <p>In a server-sent event stream the first token is the first event whose {@code data} carries output: a choice
 * with non-empty {@code text}, or a {@code delta} with non-empty {@code content}, {@code reasoning_content},
 * {@code reasoning} or {@code tool_calls}; or {@code [DONE]}, an error, or data that is not a JSON object, so that
 * nothing unusual holds the booking's prefill back. An event that only opens the assistant's turn
 * ({@code "delta":{"role":"assistant","content":""}}) or carries usage does not count. In any other body the first
 * byte is the first token. Only the bytes up to the first token are examined; an event longer than
 * {@link #MAX_EVENT_BYTES} counts without being parsed, which bounds the memory one response can make it hold.
 */
final class FirstTokenWatch {
  static final int MAX_EVENT_BYTES = 1 << 20;

  private final boolean eventStream;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private int eventBytes;
  private boolean seen;

  FirstTokenWatch(boolean eventStream) {
    this.eventStream = eventStream;
  }

  /** Whether the first token was seen. */
  boolean seen() {
    return seen;
  }

  /** Looks at a chunk without moving its read position; returns true when this chunk holds the first token. */
  boolean onChunk(DataBuffer buffer) {
    if (seen) {
      return false;
    }
    int start = buffer.readPosition();
    int end = buffer.writePosition();
    if (end <= start) {
      return false;
    }
    if (!eventStream) {
      seen = true;
      return true;
    }
    for (int i = start; i < end; i++) {
      byte b = buffer.getByte(i);
      if (b == '\n') {
        if (onLine()) {
          seen = true;
          return true;
        }
      } else {
        line.write(b);
        if (++eventBytes > MAX_EVENT_BYTES) {
          seen = true;
          return true;
        }
      }
    }
    return false;
  }

  /** One complete line; true when it ends an event that carries output. */
  private boolean onLine() {
    byte[] bytes = line.toByteArray();
    line.reset();
    int length = bytes.length;
    if (length > 0 && bytes[length - 1] == '\r') {
      length--;
    }
    if (length == 0) {
      boolean token = hasData && isToken(data.toString());
      data.setLength(0);
      hasData = false;
      eventBytes = 0;
      return token;
    }
    String text = new String(bytes, 0, length, StandardCharsets.UTF_8);
    if (text.startsWith("data:")) {
      if (hasData) {
        data.append('\n');
      }
      data.append(text, text.startsWith("data: ") ? 6 : 5, text.length());
      hasData = true;
    }
    return false; // comments, event:, id:, retry:
  }

  /** Whether one event's data carries output (see the class comment). */
  static boolean isToken(String eventData) {
    String trimmed = eventData.strip();
    if (trimmed.equals("[DONE]")) {
      return true;
    }
    JsonNode event;
    try {
      event = JsonMapper.shared().readTree(trimmed);
    } catch (JacksonException e) {
      return true;
    }
    if (event == null || !event.isObject()) {
      return true;
    }
    JsonNode error = event.get("error");
    if (error != null && !error.isNull()) {
      return true;
    }
    JsonNode choices = event.get("choices");
    if (choices == null || !choices.isArray()) {
      return false; // a usage-only or unknown chunk
    }
    for (JsonNode choice : choices) {
      if (nonEmpty(choice.get("text"))) {
        return true;
      }
      JsonNode delta = choice.get("delta");
      if (delta != null && (nonEmpty(delta.get("content")) || nonEmpty(delta.get("reasoning_content"))
          || nonEmpty(delta.get("reasoning")) || nonEmpty(delta.get("tool_calls")))) {
        return true;
      }
    }
    return false;
  }

  private static boolean nonEmpty(@Nullable JsonNode value) {
    return value != null && ((value.isString() && !value.asString().isEmpty())
        || (value.isArray() && !value.isEmpty()));
  }
}
