package io.kvroute.sync.nats;

/**
 * Thrown when a sync frame is truncated, oversized or not in the kvroute load-sync format; instances are immutable
 * and thread-safe.
 *
 * <p>{@link NatsLoadSync} counts and drops such frames (see {@link SyncListener#onFrameRejected}); it never lets
 * this exception escape its dispatcher thread. The exception carries no stack trace, since malformed input is an
 * expected condition, not a bug.
 */
public final class SyncFormatException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  SyncFormatException(String message) {
    super(message, null, false, false);
  }
}
