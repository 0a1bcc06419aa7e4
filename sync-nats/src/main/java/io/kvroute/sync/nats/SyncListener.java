package io.kvroute.sync.nats;

/**
 * Hears of a {@link NatsLoadSync}'s membership and connection changes and of rejected frames, for logs and metrics;
 * implementations must be thread-safe, and every method must execute fast, without external locking, and must not
 * throw (an exception is logged and ignored).
 *
 * <p>Methods run on the sync's publisher thread, on the NATS dispatcher thread or on the NATS connection-event
 * thread. All default to doing nothing; {@link #NONE} is the no-op instance.
 */
public interface SyncListener {
  /** A listener that ignores everything. */
  SyncListener NONE = new SyncListener() {};

  /**
   * A peer replica was heard from for the first time (or again after it left).
   *
   * @param replica the peer's replica name
   */
  default void onPeerJoined(String replica) {}

  /**
   * A peer's bookings were dropped from the view.
   *
   * @param replica the peer's replica name
   * @param reason {@code "goodbye"}, {@code "expired"}, {@code "restarted"} (a new instance under the same name)
   *     or {@code "disconnected"} (this replica lost its NATS connection)
   */
  default void onPeerLeft(String replica, String reason) {}

  /**
   * A peer's state was replaced by its snapshot.
   *
   * @param replica the peer's replica name
   * @param bookings how many in-flight bookings the snapshot carried (the peer's load now in the view)
   */
  default void onSnapshotApplied(String replica, int bookings) {}

  /**
   * Frames from a peer were missed (sequence {@code expected} was due, {@code received} came); a snapshot is asked.
   *
   * @param replica the peer's replica name
   * @param expected the sequence number that was due next from the peer
   * @param received the sequence number that arrived instead (greater than {@code expected})
   */
  default void onGap(String replica, long expected, long received) {}

  /** The NATS connection is up (first connect or reconnect). */
  default void onConnected() {}

  /** The NATS connection is down: the view is local-only until it returns. */
  default void onDisconnected() {}

  /**
   * A received frame was malformed or incompatible (another block size) and was dropped.
   *
   * @param reason why, for logs: the block-size mismatch, the peer limit, or the decoding error's message
   */
  default void onFrameRejected(String reason) {}
}
