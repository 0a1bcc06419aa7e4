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
 * <p>An error event is not a token: it is the engine answering with an error after its 200. vLLM ends a stream
 * whose generation raised with {@code data: {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}} and
 * then {@code data: [DONE]} ({@code create_streaming_error_response} in
 * {@code vllm/entrypoints/openai/serving_engine.py}, yielded by {@code serving_chat.py}'s and
 * {@code serving_completion.py}'s stream generators); once it is seen, nothing later counts as the first token.
 * Its {@code code} is an HTTP status ({@code ErrorInfo.code = status_code.value}), and it tells whose fault it was:
 * {@code create_error_response} maps {@code VLLMValidationError}, {@code ValueError}, {@code TypeError},
 * {@code RuntimeError}, {@code OverflowError} and jinja's {@code TemplateError} to 400 (the request's fault),
 * {@code NotImplementedError} to 501 and any other exception (such as {@code EngineDeadError} from
 * {@code vllm/v1/engine/exceptions.py}) to 500; a {@code GenerationError} (a request that finished with reason
 * {@code error}) is sent with its own status, 500. So:
 * <ul>
 *   <li>a code from 400 to 499 is the request's fault ({@link #rejected()}): not a token, and not the worker's
 *       failure, since any healthy worker would answer that request alike; a caller treats it as it treats an HTTP
 *       4xx answer (the worker is alive and answering), so that a client sending bad requests cannot get healthy
 *       workers ejected;
 *   <li>any other code (5xx), no code, or one that is not an integer (a string, {@code null}, a fraction) is the
 *       engine failing ({@link #failed()}).
 * </ul>
 * After the first token only the head of each line is kept, to find such an event ({@code data:} then a JSON
 * object whose first key is {@code "error"}, as vLLM's {@code json.dumps} writes it), and a fixed-size state
 * machine follows the line's JSON (nesting depth, strings, escapes) to read the integer {@code code} of the object
 * that {@code "error"} holds, wherever in it the key comes (vLLM's {@code ErrorInfo} writes it after the
 * message, which has any length). Neither allocates.
 */
public final class FirstTokenScanner {
  /** An event larger than this many bytes is taken as the first token without being parsed. */
  public static final int MAX_EVENT_BYTES = 1 << 20;
  private static final int HEAD_BYTES = 32;
  private static final int NONE = 0;
  private static final int TOKEN = 1;
  private static final int ERROR = 2;
  private static final int REJECTED = 3;

  private final boolean eventStream;
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private int eventBytes;
  private boolean seen;
  private boolean failed;
  private boolean rejected;
  private boolean lastWasCr;
  // After the first token: the head of the current line, enough to tell an error event.
  private final byte[] head = new byte[HEAD_BYTES];
  private int headLength;
  // After the first token: the state machine reading the error object's "code" on the current line.
  private final CodeFinder code = new CodeFinder();

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
   * Whether the stream carried an error event blaming the request: its {@code code} is from 400 to 499 (see the
   * class comment). Such a stream is neither a token nor the worker's failure.
   *
   * @return true once such an error event was seen, before or after the first token
   */
  public boolean rejected() {
    return rejected;
  }

  /**
   * Looks at the next byte of the body.
   *
   * @param b the byte
   * @return true for the byte that completes the first token, false before it and for every byte after it
   */
  public boolean accept(byte b) {
    if (failed || rejected || (seen && !eventStream)) {
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
        if (isErrorLine(head, headLength)) {
          int status = code.status();
          rejected = status >= 400 && status <= 499;
          failed = !rejected;
        }
        headLength = 0;
        code.reset();
      } else if (b != '\n') {
        if (headLength < HEAD_BYTES) {
          head[headLength++] = b;
        }
        code.accept(b);
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
      rejected = kind == REJECTED;
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
    Object error = event.get("error");
    if (error != null) {
      return error instanceof Map<?, ?> info && info.get("code") instanceof Long status && status >= 400
          && status <= 499 ? REJECTED : ERROR;
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

  /**
   * Reads, byte by byte, the integer {@code code} of the object that a line's first top-level key holds
   * ({@code data: {"error": {..., "code": 400}}}); fixed-size, never allocates. Bytes before the first {@code '{'}
   * (the {@code data:} field name) are outside any JSON value and pass through. Only the first {@code "code"} key of
   * that object counts; a string, {@code null}, a negative or fractional number reads as no code.
   */
  static final class CodeFinder {
    private static final byte[] KEY = {'c', 'o', 'd', 'e'};
    private static final int UNKNOWN = -1;
    private static final int IDLE = 0;
    private static final int COLON = 1; // the key "code" closed; a ':' follows a key
    private static final int VALUE = 2; // after "code":
    private static final int DIGITS = 3;
    private static final int DONE = 4;
    private static final int CAP = 1000; // any larger status reads as 1000: not a 4xx

    private int depth;
    private boolean inString;
    private boolean escaped;
    private int keyMatch = -1; // bytes of "code" matched in the current depth-2 string, -1 when it differs
    private int state = IDLE;
    private int value;
    private int status = UNKNOWN;

    void reset() {
      depth = 0;
      inString = false;
      escaped = false;
      keyMatch = -1;
      state = IDLE;
      value = 0;
      status = UNKNOWN;
    }

    /** The code read from the line so far, or -1 when there is none (yet). */
    int status() {
      return status;
    }

    void accept(byte c) {
      if (state == DONE) {
        return;
      }
      if (inString) {
        if (escaped) {
          escaped = false;
          keyMatch = -1;
        } else if (c == '\\') {
          escaped = true;
          keyMatch = -1;
        } else if (c == '"') {
          inString = false;
          if (keyMatch == KEY.length) {
            state = COLON;
          }
          keyMatch = -1;
        } else if (keyMatch >= 0) {
          keyMatch = keyMatch < KEY.length && c == KEY[keyMatch] ? keyMatch + 1 : -1;
        }
        return;
      }
      boolean space = c == ' ' || c == '\t';
      switch (state) {
        case COLON -> {
          if (space) {
            return;
          }
          if (c == ':') {
            state = VALUE;
            return;
          }
          state = IDLE; // "code" was a value, not a key
        }
        case VALUE -> {
          if (space) {
            return;
          }
          if (c >= '0' && c <= '9') {
            value = c - '0';
            state = DIGITS;
          } else {
            state = DONE; // a string, null, a negative number...: no code
          }
          return;
        }
        case DIGITS -> {
          if (c >= '0' && c <= '9') {
            value = Math.min(CAP, value * 10 + (c - '0'));
            return;
          }
          if (space || c == ',' || c == '}') {
            status = value;
          }
          state = DONE; // a fraction or exponent is no status
          if (c != '}') {
            return;
          }
        }
        default -> { }
      }
      if (c == '"') {
        inString = true;
        keyMatch = depth == 2 ? 0 : -1;
      } else if (c == '{' || c == '[') {
        depth++;
      } else if (c == '}' || c == ']') {
        if (--depth < 2) {
          state = DONE; // the first member's object closed
        }
      } else if (c == ',' && depth == 1) {
        state = DONE; // past the first member
      }
    }
  }
}
