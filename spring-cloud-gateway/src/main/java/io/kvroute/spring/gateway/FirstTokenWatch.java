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
    if (scanner.seen()) {
      return false;
    }
    for (int i = buffer.readPosition(), end = buffer.writePosition(); i < end; i++) {
      if (scanner.accept(buffer.getByte(i))) {
        return true;
      }
    }
    return false;
  }

  /** Whether one event's data carries output (see {@link FirstTokenScanner}). */
  static boolean isToken(String eventData) {
    return FirstTokenScanner.isToken(eventData);
  }
}
