package io.kvroute.openai.internal;

import io.kvroute.openai.JsonException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Watches an OpenAI-compatible response body, byte by byte as it passes through, for the first output token; not
 * thread-safe (one per response, fed by the thread reading it).
 *
 * <p>A server-sent event stream ({@code text/event-stream}) holds its first token in the first event whose
 * {@code data} carries output: a choice with non-empty {@code text}, or a {@code delta} with non-empty
 * {@code content}, {@code reasoning_content}, {@code reasoning} or {@code tool_calls}; or {@code [DONE]}, an error,
 * or data that is not a JSON object, so that nothing unusual holds a booking's prefill back. An event that only
 * opens the assistant's turn ({@code "delta":{"role":"assistant","content":""}}) or carries usage does not count.
 * Lines may end with CR LF, LF or CR. Any other body holds it in its first byte. Only the bytes up to the first token are examined; an event longer
 * than {@link #MAX_EVENT_BYTES} counts without being parsed, which bounds what one response can make it hold.
 */
public final class FirstTokenScanner {
  /** An event larger than this many bytes is taken as the first token without being parsed. */
  public static final int MAX_EVENT_BYTES = 1 << 20;

  private final boolean eventStream;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private int eventBytes;
  private boolean seen;
  private boolean lastWasCr;

  /**
   * Creates a scanner for one response body.
   *
   * @param eventStream whether the body is a server-sent event stream (its content type is
   *     {@code text/event-stream}); any other body holds the first token in its first byte
   */
  public FirstTokenScanner(boolean eventStream) {
    this.eventStream = eventStream;
  }

  /**
   * Whether the body is a server-sent event stream.
   *
   * @return the value given to the constructor
   */
  public boolean isEventStream() {
    return eventStream;
  }

  /**
   * Whether the first token has been seen.
   *
   * @return true once {@link #accept} returned true
   */
  public boolean seen() {
    return seen;
  }

  /**
   * Looks at the next byte of the body.
   *
   * @param b the byte
   * @return true for the byte that completes the first token, false before it and for every byte after it
   */
  public boolean accept(byte b) {
    if (seen) {
      return false;
    }
    if (!eventStream) {
      return seen = true;
    }
    // A line ends at CR LF, LF or CR alone (the event stream grammar); the LF of a CR LF ends nothing more.
    boolean afterCr = lastWasCr;
    lastWasCr = b == '\r';
    if (b == '\r' || (b == '\n' && !afterCr)) {
      return seen = onLine();
    }
    if (b == '\n') {
      return false;
    }
    line.write(b);
    return seen = ++eventBytes > MAX_EVENT_BYTES;
  }

  /** One complete line; true when it ends an event that carries output. */
  private boolean onLine() {
    byte[] bytes = line.toByteArray();
    line.reset();
    int length = bytes.length;
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
    return false; // comments, event:, id:, retry: lines
  }

  /**
   * Whether one event's data carries output (see the class comment).
   *
   * @param eventData the event's {@code data} lines, joined with newlines
   * @return true if the event holds the first token
   */
  public static boolean isToken(String eventData) {
    String trimmed = eventData.strip();
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
