package io.kvroute;

/**
 * The state of a worker's KV event stream, as reported by its event source to {@link Router#reportEventStream};
 * an immutable enum, thread-safe.
 *
 * <p>A worker whose stream is {@link #SILENT} or {@link #BROKEN}, or that is {@link #UNKNOWN} and has never
 * delivered an event, is routed as an approximate-mode worker: the router scores it by its own predictions of what
 * it routed there (as {@link RouterPolicy#approximate()} does), never as a worker with an empty cache.
 */
public enum EventStreamState {
  /** Nothing reported yet (the default). Event mode once the router has applied an event for the worker. */
  UNKNOWN,
  /** Batches arrive: the index is authoritative for this worker. */
  LIVE,
  /** The source reconnected and is replaying missed events: the index is catching up. */
  REPLAYING,
  /** Connected or expected, but no batch for longer than the source's configured age. */
  SILENT,
  /** Disconnected, purged, or a replay failed: the index cannot be trusted for this worker. */
  BROKEN;

  /** Whether the router trusts the KV index for a worker in this state (events have arrived in UNKNOWN). */
  boolean trustsIndex(boolean eventSeen) {
    return this == LIVE || this == REPLAYING || (this == UNKNOWN && eventSeen);
  }
}
