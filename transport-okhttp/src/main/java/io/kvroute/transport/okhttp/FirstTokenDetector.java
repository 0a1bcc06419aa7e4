package io.kvroute.transport.okhttp;

import io.kvroute.openai.Json;
import io.kvroute.openai.JsonException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import okhttp3.MediaType;
import okio.Buffer;
import org.jspecify.annotations.Nullable;

/**
 * Watches a response body's bytes for the first output token; not thread-safe (one per response, fed by the
 * reading thread).
 *
 * <p>A server-sent event stream ({@code text/event-stream}) holds its first token in the first event that carries
 * output: a choice with non-empty {@code text}, or a {@code delta} with non-empty {@code content},
 * {@code reasoning_content}/{@code reasoning} or {@code tool_calls}; or {@code [DONE]}, an error, or anything not
 * JSON, so that nothing unusual holds the booking's prefill back. Events that only open the assistant's turn
 * ({@code {"delta":{"role":"assistant","content":""}}}) or carry usage do not count. Any other body holds it in its
 * first byte.
 */
final class FirstTokenDetector {
  /** An event larger than this is taken as the first token without being parsed. */
  static final int MAX_EVENT_BYTES = 1 << 20;

  private final boolean eventStream;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private int eventBytes;

  private FirstTokenDetector(boolean eventStream) {
    this.eventStream = eventStream;
  }

  static FirstTokenDetector of(@Nullable MediaType contentType) {
    boolean sse = contentType != null && contentType.type().equalsIgnoreCase("text")
        && contentType.subtype().equalsIgnoreCase("event-stream");
    return new FirstTokenDetector(sse);
  }

  boolean isEventStream() {
    return eventStream;
  }

  /** Looks at {@code count} bytes of {@code buffer} from {@code offset}; true once the first token was seen. */
  boolean onBytes(Buffer buffer, long offset, long count) {
    if (count <= 0) {
      return false;
    }
    if (!eventStream) {
      return true;
    }
    for (long i = offset, end = offset + count; i < end; i++) {
      byte b = buffer.getByte(i);
      if (b == '\n') {
        if (onLine()) {
          return true;
        }
      } else {
        line.write(b);
        if (++eventBytes > MAX_EVENT_BYTES) {
          return true;
        }
      }
    }
    return false;
  }

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
      String value = text.substring(text.startsWith("data: ") ? 6 : 5);
      if (hasData) {
        data.append('\n');
      }
      data.append(value);
      hasData = true;
    }
    return false; // comments, event:, id:, retry: lines
  }

  /** Whether one event's data carries output. */
  static boolean isToken(String data) {
    String trimmed = data.strip();
    if (trimmed.equals("[DONE]")) {
      return true;
    }
    Object parsed;
    try {
      parsed = Json.parse(trimmed);
    } catch (JsonException e) {
      return true;
    }
    if (!(parsed instanceof Map<?, ?> event)) {
      return true;
    }
    if (event.get("error") != null) {
      return true;
    }
    if (!(event.get("choices") instanceof List<?> choices)) {
      return false; // a usage-only or unknown chunk
    }
    for (Object c : choices) {
      if (!(c instanceof Map<?, ?> choice)) {
        continue;
      }
      if (nonEmpty(choice.get("text"))) {
        return true;
      }
      if (choice.get("delta") instanceof Map<?, ?> delta && (nonEmpty(delta.get("content"))
          || nonEmpty(delta.get("reasoning_content")) || nonEmpty(delta.get("reasoning"))
          || nonEmpty(delta.get("tool_calls")))) {
        return true;
      }
    }
    return false;
  }

  private static boolean nonEmpty(@Nullable Object value) {
    return (value instanceof String s && !s.isEmpty()) || (value instanceof List<?> l && !l.isEmpty());
  }
}
