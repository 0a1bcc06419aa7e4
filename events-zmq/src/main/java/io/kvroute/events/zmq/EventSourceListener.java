package io.kvroute.events.zmq;

import io.kvroute.EventStreamState;
import io.kvroute.WorkerId;

/**
 * Receives what happens on a {@link KvEventSubscriber}'s event streams, for metrics and logging; implementations must
 * be thread-safe, and every method must execute fast, without external locking, and must not throw.
 *
 * <p>All methods run on the subscriber's I/O thread; a slow listener delays event ingestion. The {@code worker} of
 * stream-level callbacks (gaps, replays, restarts) is the worker name with the rank of the socket; batch-level
 * callbacks use the rank the batch names. All methods default to doing nothing; {@link #NONE} is the no-op instance.
 */
public interface EventSourceListener {
  /** A listener that ignores everything. */
  EventSourceListener NONE = new EventSourceListener() {};

  /** Why a worker's index entries were purged. */
  enum PurgeReason {
    /** The sequence went backwards: the engine restarted with an empty cache. */
    RESTART,
    /** Batches were lost and the engine has no replay endpoint (or replay is cooling down after a failure). */
    GAP_NOT_RECOVERABLE,
    /** The replay began after the first lost batch: the engine's replay buffer no longer held it. */
    REPLAY_INCOMPLETE,
    /** The replay request failed or timed out. */
    REPLAY_FAILED,
    /** The worker was removed from the subscriber. */
    REMOVED,
    /**
     * The connection was lost and renewed, and whether the engine is still the same one could not be checked (no
     * replay endpoint, or replays cooling down after a failure): a restarted engine would look the same.
     */
    RECONNECTED,
    /**
     * A replay was to show that the engine is the one whose batches were applied, but none of them could be
     * compared (for example right after a skipped batch).
     */
    UNVERIFIED,
    /** The engine stayed disconnected longer than the stale and purge times together. */
    DISCONNECTED,
    /**
     * A batch could never be received (for example over the message size limit) while the engine answered
     * otherwise; it was skipped, and with it whatever it removed, so the entries applied before it were dropped.
     */
    BATCH_UNRECEIVABLE
  }

  /**
   * A batch was applied to the sink.
   *
   * @param worker the worker the batch came from (with the batch's data-parallel rank)
   * @param seq the batch's sequence number
   * @param events how many events of the batch were applied
   * @param storedBlocks how many blocks its stored events carried
   */
  default void onBatch(WorkerId worker, long seq, int events, int storedBlocks) {}

  /**
   * A sequence gap was detected: batches {@code expected} up to {@code received - 1} were lost.
   *
   * @param worker the worker whose stream has the gap
   * @param expected the sequence number that was due
   * @param received the sequence number that arrived, greater than {@code expected}
   */
  default void onGap(WorkerId worker, long expected, long received) {}

  /**
   * A replay request from {@code fromSeq} was sent.
   *
   * @param worker the worker asked for a replay
   * @param fromSeq the first sequence number asked for
   */
  default void onReplayStarted(WorkerId worker, long fromSeq) {}

  /**
   * A replay ended with its end marker after delivering {@code batches} batches not seen live.
   *
   * @param worker the worker that replayed
   * @param batches how many replayed batches were applied, zero or more
   */
  default void onReplayFinished(WorkerId worker, int batches) {}

  /**
   * A replay failed (timed out, could not be sent); the worker's entries are purged if it had any.
   *
   * @param worker the worker whose replay failed
   * @param reason what went wrong, for logs
   */
  default void onReplayFailed(WorkerId worker, String reason) {}

  /**
   * The engine restarted: the sequence went back from {@code lastSeq} to {@code seq}, or a replayed batch differed
   * from the one applied under its number, or the engine's replay ended before the last applied batch.
   *
   * @param worker the restarted worker
   * @param lastSeq the last sequence number applied before the restart
   * @param seq the sequence number that revealed it
   */
  default void onRestart(WorkerId worker, long lastSeq, long seq) {}

  /**
   * The worker's index entries were purged; it rebuilds from new events.
   *
   * @param worker the purged worker
   * @param reason why the entries were purged (a restart, a lost gap, a failed or incomplete replay, a removal, a
   *     reconnect, ...)
   */
  default void onPurged(WorkerId worker, PurgeReason reason) {}

  /**
   * A message of {@code worker}'s stream was malformed (frames, sequence or payload) and was dropped.
   *
   * @param worker the stream's worker (name and the socket's rank)
   * @param reason what was wrong
   */
  default void onDecodeError(WorkerId worker, String reason) {}

  /**
   * A stream's health changed (see {@link KvEventSubscriber.Builder#reportTo} for how states are derived).
   *
   * @param worker the stream's worker and rank
   * @param state the new state
   */
  default void onStreamState(WorkerId worker, EventStreamState state) {}

  /**
   * Events of a batch were not applied: unknown event types, malformed events, events of KV cache groups that do
   * not count toward prefix matches (sliding window, Mamba, …), or events of a worker or rank the sink does not
   * accept (see {@link KvEventSubscriber} on unregistered workers).
   *
   * @param worker the worker whose batch it was
   * @param events how many events were dropped, at least 1
   * @param reason the kind of events, for logs
   */
  default void onEventsDropped(WorkerId worker, int events, String reason) {}
}
