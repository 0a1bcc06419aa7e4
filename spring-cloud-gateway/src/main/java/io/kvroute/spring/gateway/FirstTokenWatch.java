package io.kvroute.spring.gateway;

import io.kvroute.openai.internal.FirstTokenScanner;
import org.springframework.core.io.buffer.DataBuffer;

/**
 * Watches a response body's chunks, as they pass through unchanged, for the first output token by the rules of
 * {@link FirstTokenScanner}; not thread-safe (one per response; Reactor delivers a body's chunks serially).
 */
final class FirstTokenWatch {
  static final int MAX_EVENT_BYTES = FirstTokenScanner.MAX_EVENT_BYTES;

  private final FirstTokenScanner scanner;

  FirstTokenWatch(boolean eventStream) {
    this.scanner = new FirstTokenScanner(eventStream);
  }

  /** Whether the first token was seen. */
  boolean seen() {
    return scanner.seen();
  }

  /** Looks at a chunk without moving its read position; returns true when this chunk holds the first token. */
  boolean onChunk(DataBuffer buffer) {
    if (scanner.seen() && (!scanner.isEventStream() || scanner.failed() || scanner.rejected())) {
      return false; // after the first token an event stream is still watched for an error event
    }
    boolean token = false;
    for (int i = buffer.readPosition(), end = buffer.writePosition(); i < end; i++) {
      token |= scanner.accept(buffer.getByte(i));
    }
    return token;
  }

  /**
   * Whether the event stream carried an engine error event (a 5xx, missing or non-integer {@code code}): the engine
   * failed after its 200. An error event with a 4xx code is the request's fault: it leaves this false and ends the
   * watch, like a 4xx answer it reports nothing (see {@link FirstTokenScanner}).
   */
  boolean failed() {
    return scanner.failed();
  }

  /** Whether the event stream carried an error event with a 4xx code: the request's fault, not the worker's. */
  boolean rejected() {
    return scanner.rejected();
  }

  /** Whether one event's data carries output (see {@link FirstTokenScanner}). */
  static boolean isToken(String eventData) {
    return FirstTokenScanner.isToken(eventData);
  }
}
