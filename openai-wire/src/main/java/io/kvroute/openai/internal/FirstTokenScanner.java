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
 * {@code content}, {@code reasoning_content}, {@code reasoning} or {@code tool_calls}; or {@code [DONE]}, or data
 * that is not a JSON object, so that nothing unusual holds a booking's prefill back. An event that only opens the
 * assistant's turn ({@code "delta":{"role":"assistant","content":""}}) or carries usage does not count.
 * Lines may end with CR LF, LF or CR. Any other body holds it in its first byte. An event longer than
 * {@link #MAX_EVENT_BYTES} counts without being parsed, which bounds what one response can make it hold.
 *
 * <p>An error event is not a token: it is the engine failing after its 200 ({@link #failed()}). vLLM ends a stream
 * whose generation raised with {@code data: {"error": {"message": ..., "type": ..., "code": ...}}} and then
 * {@code data: [DONE]} ({@code create_streaming_error_response} in {@code vllm/entrypoints/openai/serving_engine.py},
 * yielded by {@code serving_chat.py}'s and {@code serving_completion.py}'s stream generators); once it is seen,
 * nothing later counts as the first token. After the first token only the head of each line is kept, to find such an
 * event ({@code data:} then a JSON object whose first key is {@code "error"}, as vLLM's {@code json.dumps} writes it).
 */
public final class FirstTokenScanner {
  /** An event larger than this many bytes is taken as the first token without being parsed. */
  public static final int MAX_EVENT_BYTES = 1 << 20;
  private static final int HEAD_BYTES = 32;
  private static final int NONE = 0;
  private static final int TOKEN = 1;
  private static final int ERROR = 2;

  private final boolean eventStream;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private int eventBytes;
  private boolean seen;
  private boolean failed;
  private boolean lastWasCr;
  // After the first token: the head of the current line, enough to tell an error event.
  private final byte[] head = new byte[HEAD_BYTES];
  private int headLength;

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
   * Whether the stream carried an error event (the engine failed after answering 200).
   *
   * @return true once an error event was seen, before or after the first token
   */
  public boolean failed() {
    return failed;
  }

  /**
   * Looks at the next byte of the body.
   *
   * @param b the byte
   * @return true for the byte that completes the first token, false before it and for every byte after it
   */
  public boolean accept(byte b) {
    if (failed || (seen && !eventStream)) {
      return false;
    }
    if (!eventStream) {
      return seen = true;
    }
    // A line ends at CR LF, LF or CR alone (the event stream grammar); the LF of a CR LF ends nothing more.
    boolean afterCr = lastWasCr;
    lastWasCr = b == '\r';
    boolean lineEnd = b == '\r' || (b == '\n' && !afterCr);
    if (seen) {
      if (lineEnd) {
        failed = isErrorLine(head, headLength);
        headLength = 0;
      } else if (b != '\n' && headLength < HEAD_BYTES) {
        head[headLength++] = b;
      }
      return false;
    }
    if (lineEnd) {
      return seen = onLine();
    }
    if (b == '\n') {
      return false;
    }
    line.write(b);
    if (++eventBytes > MAX_EVENT_BYTES) {
      head[0] = 0; // the rest of this line is no error event's head
      headLength = HEAD_BYTES;
      return seen = true;
    }
    return false;
  }

  /** Whether a line's head is {@code data:} and a JSON object whose first key is {@code "error"}. */
  private static boolean isErrorLine(byte[] head, int length) {
    int i = 0;
    for (byte c : DATA) {
      if (i >= length || head[i++] != c) {
        return false;
      }
    }
    i = skipSpaces(head, i, length);
    if (i >= length || head[i++] != '{') {
      return false;
    }
    i = skipSpaces(head, i, length);
    for (byte c : ERROR_KEY) {
      if (i >= length || head[i++] != c) {
        return false;
      }
    }
    return true;
  }

  private static int skipSpaces(byte[] head, int i, int length) {
    while (i < length && (head[i] == ' ' || head[i] == '\t')) {
      i++;
    }
    return i;
  }

  private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] ERROR_KEY = "\"error\"".getBytes(StandardCharsets.US_ASCII);

  /** One complete line; true when it ends an event that carries output. */
  private boolean onLine() {
    byte[] bytes = line.toByteArray();
    line.reset();
    int length = bytes.length;
    if (length == 0) {
      int kind = hasData ? classify(data.toString()) : NONE;
      data.setLength(0);
      hasData = false;
      eventBytes = 0;
      failed = kind == ERROR;
      return kind == TOKEN;
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
    return classify(eventData) == TOKEN;
  }

  private static int classify(String eventData) {
    String trimmed = eventData.strip();
    if (trimmed.equals("[DONE]")) {
      return TOKEN;
    }
    Object parsed;
    try {
      parsed = Json.parse(trimmed);
    } catch (JsonException e) {
      return TOKEN;
    }
    if (!(parsed instanceof Map<?, ?> event)) {
      return TOKEN;
    }
    if (event.get("error") != null) {
      return ERROR;
    }
    if (!(event.get("choices") instanceof List<?> choices)) {
      return NONE; // a usage-only or unknown chunk
    }
    for (Object c : choices) {
      if (!(c instanceof Map<?, ?> choice)) {
        continue;
      }
      if (nonEmpty(choice.get("text"))) {
        return TOKEN;
      }
      if (choice.get("delta") instanceof Map<?, ?> delta && (nonEmpty(delta.get("content"))
          || nonEmpty(delta.get("reasoning_content")) || nonEmpty(delta.get("reasoning"))
          || nonEmpty(delta.get("tool_calls")))) {
        return TOKEN;
      }
    }
    return NONE;
  }

  private static boolean nonEmpty(@Nullable Object value) {
    return (value instanceof String s && !s.isEmpty()) || (value instanceof List<?> l && !l.isEmpty());
  }
}
