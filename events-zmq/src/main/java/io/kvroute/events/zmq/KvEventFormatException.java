package io.kvroute.events.zmq;

/**
 * Thrown when a KV event payload is not valid msgpack or does not have the shape of an event batch; instances are
 * immutable and thread-safe.
 *
 * <p>The subscriber counts and drops such payloads; it never lets this exception escape its I/O thread. The
 * exception carries no stack trace, since malformed input is an expected condition, not a bug.
 */
public final class KvEventFormatException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  KvEventFormatException(String message) {
    super(message, null, false, false);
  }
}
