package io.kvroute;

import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Approximate mode: the router's own predictions of what each worker caches, namely the prompts it routed there,
 * each assumed cached for a time to live; not thread-safe for writes: {@link #record} and {@link #expire} run under
 * the admission lock, while {@link #match} runs concurrently under the prediction index's own read lock.
 *
 * <p>Used for every worker under {@link RouterPolicy#approximate()}, and under any other policy for the workers
 * whose KV event stream cannot be trusted ({@link EventStreamState#SILENT}, {@link EventStreamState#BROKEN}, or no
 * event yet): those are scored by what the router sent them rather than as workers with an empty cache, which the
 * smallest-tree tie-break would otherwise flood with every new prefix.
 *
 * <p>Memory is bounded by the entry budget of the prediction index (the least recently routed go first) and by
 * dropping the oldest predictions once they name more than twice that many blocks.
 *
 * <p>Peer replicas' predictions ({@link #recordRemote}, from a {@link SharedLoad} port) are kept in a queue of their
 * own, bounded by the budget, and expired by the thread that delivers them ({@link #expireRemote}), so that a
 * selection does not spend the index writes of removing its peers' predictions (as many as recording them took);
 * {@link #expire} removes a peer's prediction only once it is {@value #REMOTE_SLACK_NANOS} ns past its time to live
 * with no delivery since to expire it (a peer gone quiet).
 */
final class Predictions {
  /** The TTL and budget for event-less workers under a non-approximate policy: the approximate policy's defaults. */
  static final long DEFAULT_TTL_NANOS = 120_000_000_000L;
  static final int DEFAULT_BUDGET = 1 << 20;

  private final KvIndexer index;
  private final long ttlNanos;
  private final int budget;
  // Guarded by the admission lock.
  private final ArrayDeque<Prediction> queue = new ArrayDeque<>();
  private long blocks;
  private final ArrayDeque<Prediction> remoteQueue = new ArrayDeque<>();
  private long remoteBlocks;
  /** A selection expires a peer's prediction only this long after its time to live (see the class doc). */
  static final long REMOTE_SLACK_NANOS = 1_000_000_000L;
  // Written under the admission lock; read by selections to skip matching while nothing is predicted.
  private volatile boolean empty = true;

  Predictions(int blockSize, int maxWorkers, long ttlNanos, int budget) {
    this.index = KvIndexer.newBuilder().blockSize(blockSize).maxEntries(budget).maxWorkers(maxWorkers).build();
    this.ttlNanos = ttlNanos;
    this.budget = budget;
  }

  /** Registers a worker; returns its slot in the prediction index, or -1 if the worker bound is reached. */
  int register(WorkerId worker) {
    return index.register(worker);
  }

  /** Forgets a removed worker's predictions; under the admission lock. */
  void removed(WorkerId worker) {
    index.removeWorker(worker);
  }

  /** Matches a request against the predictions, like {@link KvIndexer#matchLocked}; any thread. */
  int match(long[] hashes, int count, PrefixTable.MatchScratch scratch) {
    return count == 0 || empty ? 0 : index.matchLocked(hashes, count, scratch);
  }

  /** Predicted entries of the worker in {@code slot}; racy read, for tie-breaking. */
  int entriesOfSlot(int slot) {
    return index.entriesOfSlot(slot);
  }

  /** Records that the request was routed to the worker; under the admission lock, for a registered worker. */
  void record(WorkerRegistry.WorkerState state, long[] hashes, int count, long nowNanos) {
    if (count == 0) {
      return;
    }
    long[] copy = Arrays.copyOf(hashes, count);
    index.storeSequence(state.predictedSlot, copy, count);
    queue.addLast(new Prediction(nowNanos + ttlNanos, state, copy));
    blocks += count;
    empty = false;
  }

  /**
   * Records a peer replica's prediction that the worker holds these blocks; under the admission lock, for a
   * registered worker.
   */
  void recordRemote(WorkerRegistry.WorkerState state, long[] hashes, int count, long nowNanos) {
    if (count == 0) {
      return;
    }
    long[] copy = count == hashes.length ? hashes : Arrays.copyOf(hashes, count);
    index.storeSequence(state.predictedSlot, copy, count);
    remoteQueue.addLast(new Prediction(nowNanos + ttlNanos, state, copy));
    remoteBlocks += count;
    empty = false;
  }

  /** Drops expired predictions, and the oldest beyond twice the budget; under the admission lock. */
  void expire(long nowNanos) {
    Prediction p;
    while ((p = queue.peekFirst()) != null && (p.expiresAtNanos - nowNanos <= 0 || blocks > 2L * budget)) {
      queue.pollFirst();
      blocks -= p.hashes.length;
      remove(p);
    }
    while ((p = remoteQueue.peekFirst()) != null && p.expiresAtNanos + REMOTE_SLACK_NANOS - nowNanos <= 0) {
      remoteQueue.pollFirst();
      remoteBlocks -= p.hashes.length;
      remove(p);
    }
    if (queue.isEmpty() && remoteQueue.isEmpty() && !empty) {
      empty = true;
    }
  }

  /** Drops peers' expired predictions, and their oldest beyond the budget; under the admission lock. */
  void expireRemote(long nowNanos) {
    Prediction p;
    while ((p = remoteQueue.peekFirst()) != null && (p.expiresAtNanos - nowNanos <= 0 || remoteBlocks > budget)) {
      remoteQueue.pollFirst();
      remoteBlocks -= p.hashes.length;
      remove(p);
    }
    if (queue.isEmpty() && remoteQueue.isEmpty() && !empty) {
      empty = true;
    }
  }

  private void remove(Prediction p) {
    // Under the admission lock a registered state's slot is still its own; a removed one's entries are gone.
    if (p.state.registered) {
      index.removeSequence(p.state.predictedSlot, p.hashes, p.hashes.length);
    }
  }

  /** The prediction index, for tests. */
  KvIndexer index() {
    return index;
  }

  private record Prediction(long expiresAtNanos, WorkerRegistry.WorkerState state, long[] hashes) {}
}
