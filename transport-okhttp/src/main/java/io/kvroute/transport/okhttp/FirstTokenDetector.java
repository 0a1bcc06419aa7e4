package io.kvroute.transport.okhttp;

import io.kvroute.openai.internal.FirstTokenScanner;
import okhttp3.MediaType;
import okio.Buffer;
import org.jspecify.annotations.Nullable;

/**
 * Watches a response body's bytes in an okio {@link Buffer} for the first output token, by the rules of
 * {@link FirstTokenScanner}; not thread-safe (one per response, fed by the reading thread).
 */
final class FirstTokenDetector {
  /** An event larger than this is taken as the first token without being parsed. */
  static final int MAX_EVENT_BYTES = FirstTokenScanner.MAX_EVENT_BYTES;

  private final FirstTokenScanner scanner;

  private FirstTokenDetector(boolean eventStream) {
    this.scanner = new FirstTokenScanner(eventStream);
  }

  static FirstTokenDetector of(@Nullable MediaType contentType) {
    boolean sse = contentType != null && contentType.type().equalsIgnoreCase("text")
        && contentType.subtype().equalsIgnoreCase("event-stream");
    return new FirstTokenDetector(sse);
  }

  boolean isEventStream() {
    return scanner.isEventStream();
  }

  /**
   * Looks at {@code count} bytes of {@code buffer} from {@code offset}; true once the first token was seen. After
   * it, an event stream's bytes are still watched for an error event ({@link #failed}).
   */
  boolean onBytes(Buffer buffer, long offset, long count) {
    if (scanner.seen() && (!scanner.isEventStream() || scanner.failed() || scanner.rejected())) {
      return true;
    }
    boolean token = false;
    for (long i = offset, end = offset + count; i < end; i++) {
      token |= scanner.accept(buffer.getByte(i));
    }
    return token || scanner.seen();
  }

  /**
   * Whether the event stream carried an engine error event (a 5xx, missing or non-integer {@code code}): the engine
   * failed after its 200. An error event with a 4xx code is the request's fault and leaves this false.
   */
  boolean failed() {
    return scanner.failed();
  }

  /** Whether one event's data carries output. */
  static boolean isToken(String data) {
    return FirstTokenScanner.isToken(data);
  }
}
