package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The router's {@link RemoteLoad}: peers' deltas queue here and are applied under the admission lock into the same
 * {@link LoadTracker} as the router's own bookings, so policies see one total per worker and a prefix booked by
 * several replicas on one worker counts once; thread-safe: any thread enqueues, and the queues are applied under the
 * admission lock, by the delivering thread or a selection, before the delivering call returns.
 *
 * <p>Two queues, by cost. Bookings, phases and drops (a few hash-map updates per load key) are applied by the
 * delivering thread when the lock is free, else by the next selection before it scores (it must see them: they are
 * the load it weighs; a selection applies at most {@value #DRAIN_PER_SELECT} units of work of them). Predictions (an
 * index write per block, as costly as the peer's own selection was) are applied by the delivering thread only,
 * waiting for the lock, so that a selection's cost does not grow with the peers' approximate-mode request rate; a
 * selection can wait for the lock while one chunk of them is applied, {@value #CHUNK_WORK} predicted blocks, about
 * two prompts' worth of index writes, the order of one selection's own.
 */
final class RemoteBookings implements RemoteLoad {
  /**
   * At most about this much work is applied per hold of the admission lock, in units of a predicted block, a load
   * key or a phase; see the class doc.
   */
  static final int CHUNK_WORK = 256;
  /**
   * A selection applies at most this much of the queued bookings, phases and drops (about 200 bookings of 148
   * blocks); the rest wait for the next holder of the lock.
   */
  static final int DRAIN_PER_SELECT = 16 * CHUNK_WORK;
  /** The bound on peers' open bookings; beyond it new ones are counted nowhere (and still released correctly). */
  static final int MAX_REMOTE_BOOKINGS = Admission.MAX_OPEN_BOOKINGS;

  private final int blockSize;
  private final Admission admission;
  private final WorkerRegistry registry;
  private final Predictions predictions;
  private final boolean allApproximate;
  private final Ticker ticker;
  private final @Nullable PeerLearning learning;
  private final ConcurrentLinkedQueue<Delta> inbox = new ConcurrentLinkedQueue<>();
  private final AtomicInteger queued = new AtomicInteger();
  private final ConcurrentLinkedQueue<Prediction> predictionInbox = new ConcurrentLinkedQueue<>();
  private final AtomicInteger predictionsQueued = new AtomicInteger();
  // Guarded by the admission lock.
  private final Map<String, Long2ObjectOpenHashMap<Booking>> byReplica = new HashMap<>();
  private long open;
  private long uncounted;

  /** A queued delta. */
  private abstract static class Delta {
    final String replica;

    Delta(String replica) {
      this.replica = replica;
    }
  }

  /** A peer's open booking, and the delta that booked it. */
  private static final class Booking extends Delta {
    final long id;
    final WorkerId worker;
    long prefill;
    final int blocks;
    final long[] keys;
    WorkerRegistry.@Nullable WorkerState state; // null: counted nowhere
    // The peer policy's note (see PeerLearning); noted is false for a snapshot's bookings.
    final boolean noted;
    final int warmBlocks;
    final long warmKey;
    final boolean newPrefix;
    // For a noted booking, as this router saw it on arrival: what a peer's first token and close teach the policy.
    long arrivedAt;
    long queuedAtArrival;
    int activeAtArrival;
    // When its first token arrived (a noted booking's, as the policy was told); Long.MIN_VALUE before.
    long firstTokenAt = Long.MIN_VALUE;

    Booking(String replica, long id, WorkerId worker, long prefill, int blocks, long[] keys, boolean noted,
        int warmBlocks, long warmKey, boolean newPrefix) {
      super(replica);
      this.id = id;
      this.worker = worker;
      this.prefill = prefill;
      this.blocks = blocks;
      this.keys = keys;
      this.noted = noted;
      this.warmBlocks = warmBlocks;
      this.warmKey = warmKey;
      this.newPrefix = newPrefix;
    }
  }

  private static final class Phase extends Delta {
    final long id;
    final boolean close;

    Phase(String replica, long id, boolean close) {
      super(replica);
      this.id = id;
      this.close = close;
    }
  }

  private static final class Drop extends Delta {
    Drop(String replica) {
      super(replica);
    }
  }

  private static final class Prediction extends Delta {
    final WorkerId worker;
    final long[] hashes;

    Prediction(WorkerId worker, long[] hashes) {
      super("");
      this.worker = worker;
      this.hashes = hashes;
    }
  }

  RemoteBookings(int blockSize, Admission admission, WorkerRegistry registry, Predictions predictions,
      boolean allApproximate, Ticker ticker, @Nullable PeerLearning learning) {
    this.learning = learning;
    this.blockSize = blockSize;
    this.admission = admission;
    this.registry = registry;
    this.predictions = predictions;
    this.allApproximate = allApproximate;
    this.ticker = ticker;
  }

  @Override
  public int blockSize() {
    return blockSize;
  }

  @Override
  public void booked(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks, long[] keys,
      int keyCount) {
    enqueueBooking(replica, bookingId, worker, prefillTokens, blocks, keys, keyCount, false, 0, 0, false);
  }

  @Override
  public void booked(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks, long[] keys,
      int keyCount, int warmBlocks, long warmKey, boolean newPrefix) {
    if (warmBlocks < 0 || warmBlocks > blocks) {
      throw new IllegalArgumentException("warmBlocks must be in [0, blocks " + blocks + "] but was " + warmBlocks);
    }
    enqueueBooking(replica, bookingId, worker, prefillTokens, blocks, keys, keyCount, true, warmBlocks, warmKey,
        newPrefix);
  }

  private void enqueueBooking(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks,
      long[] keys, int keyCount, boolean noted, int warmBlocks, long warmKey, boolean newPrefix) {
    Objects.requireNonNull(replica, "replica");
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(keys, "keys");
    if (prefillTokens < 0 || blocks < 0) {
      throw new IllegalArgumentException("prefillTokens and blocks must not be negative but were " + prefillTokens
          + " and " + blocks);
    }
    if (keyCount != RemoteLoad.loadKeyCount(blocks) || keys.length < keyCount) {
      throw new IllegalArgumentException("a booking of " + blocks + " blocks has " + RemoteLoad.loadKeyCount(blocks)
          + " load keys but keyCount was " + keyCount + " (keys.length " + keys.length + ")");
    }
    enqueue(new Booking(replica, bookingId, worker, prefillTokens, blocks, Arrays.copyOf(keys, keyCount), noted,
        warmBlocks, warmKey, newPrefix));
  }

  @Override
  public void firstToken(String replica, long bookingId) {
    enqueue(new Phase(Objects.requireNonNull(replica, "replica"), bookingId, false));
  }

  @Override
  public void closed(String replica, long bookingId) {
    enqueue(new Phase(Objects.requireNonNull(replica, "replica"), bookingId, true));
  }

  @Override
  public void predicted(WorkerId worker, long[] hashes, int count) {
    Objects.requireNonNull(worker, "worker");
    if (count < 0 || count > hashes.length) {
      throw new IllegalArgumentException("count must be in [0, " + hashes.length + "] but was " + count);
    }
    if (count > 0) {
      predictionInbox.offer(new Prediction(worker, Arrays.copyOf(hashes, count)));
      predictionsQueued.incrementAndGet();
      // Applied here, waiting for the lock, a chunk per hold so that selections get in between; whichever delivering
      // thread holds the lock applies what others queued too, so each returns once its own is applied or being
      // applied under the lock. (A port's own threads call this, never a hook under a router's admission lock.)
      while (predictionsQueued.get() > 0) {
        admission.lock();
        try {
          drainPredictions(CHUNK_WORK);
        } finally {
          admission.unlock();
        }
      }
    }
  }

  @Override
  public void dropReplica(String replica) {
    enqueue(new Drop(Objects.requireNonNull(replica, "replica")));
  }

  @Override
  public int activeRequests(WorkerId worker) {
    Objects.requireNonNull(worker, "worker");
    admission.lock();
    try {
      drain(Integer.MAX_VALUE);
      int n = 0;
      for (Long2ObjectOpenHashMap<Booking> bookings : byReplica.values()) {
        for (Booking b : bookings.values()) {
          if (b.state != null && b.worker.equals(worker)) {
            n++;
          }
        }
      }
      return n;
    } finally {
      admission.unlock();
    }
  }

  @Override
  public long openBookings() {
    admission.lock();
    try {
      drain(Integer.MAX_VALUE);
      return open;
    } finally {
      admission.unlock();
    }
  }

  private void enqueue(Delta delta) {
    inbox.offer(delta);
    queued.incrementAndGet();
    // Apply now if no selection is running; otherwise the next selection does, before it scores.
    while (queued.get() > 0 && admission.tryLock()) {
      try {
        drain(CHUNK_WORK);
      } finally {
        admission.unlock();
      }
    }
  }

  /** Whether bookings, phases or drops wait; a plain read for the select path. */
  boolean hasQueued() {
    return queued.get() > 0;
  }

  /** Applies queued bookings, phases and drops until about {@code work} units are done; under the admission lock. */
  void drain(int work) {
    Delta d;
    for (int done = 0; done < work && (d = inbox.poll()) != null; ) {
      queued.decrementAndGet();
      if (d instanceof Booking b) {
        book(b);
        done += 1 + b.keys.length;
      } else if (d instanceof Phase p) {
        phase(p);
        done++;
      } else if (d instanceof Drop) {
        done += drop(d.replica);
      }
    }
  }

  /** Applies queued predictions until about {@code blocks} predicted blocks are done; under the admission lock. */
  private void drainPredictions(int blocks) {
    Prediction p;
    long now = ticker.read();
    predictions.expireRemote(now); // its removals count in no chunk: they are bounded by what was recorded
    for (int done = 0; done < blocks && (p = predictionInbox.poll()) != null; ) {
      predictionsQueued.decrementAndGet();
      predict(p, now);
      done += p.hashes.length;
    }
  }

  private void book(Booking b) {
    Long2ObjectOpenHashMap<Booking> bookings = byReplica.computeIfAbsent(b.replica,
        r -> new Long2ObjectOpenHashMap<>());
    if (bookings.containsKey(b.id)) {
      return; // a replayed delta
    }
    WorkerRegistry.WorkerState state = registry.state(b.worker);
    if (b.noted && state != null && admission.load.owns(state.slot, state.generation)) {
      b.arrivedAt = ticker.read();
      b.queuedAtArrival = admission.load.prefillTokens(state.slot);
      b.activeAtArrival = admission.load.activeRequests(state.slot);
    }
    if (open < MAX_REMOTE_BOOKINGS && state != null
        && admission.load.bookKeys(state.slot, state.generation, b.prefill, b.keys, b.blocks)) {
      b.state = state;
    } else {
      uncounted++;
    }
    bookings.put(b.id, b);
    open++;
    if (b.noted && learning != null && state != null && state.registered) {
      learning.peerBooked(b.worker, b.blocks, b.warmBlocks, b.warmKey, b.newPrefix, ticker.read());
    }
  }

  private void phase(Phase p) {
    Long2ObjectOpenHashMap<Booking> bookings = byReplica.get(p.replica);
    if (bookings == null) {
      return;
    }
    if (p.close) {
      Booking b = bookings.remove(p.id);
      if (b != null) {
        release(b);
        if (b.noted && learning != null && b.state != null && b.state.registered) {
          long now = ticker.read();
          learning.peerClosed(b.worker, now - b.arrivedAt, now);
          if (b.firstTokenAt != Long.MIN_VALUE) {
            learning.peerDecodeEnded(b.worker, b.arrivedAt, b.firstTokenAt);
          }
        }
        if (bookings.isEmpty()) {
          byReplica.remove(p.replica);
        }
      }
    } else {
      Booking b = bookings.get(p.id);
      if (b != null && b.prefill > 0) {
        if (b.state != null) {
          admission.load.releasePrefill(b.state.slot, b.state.generation, b.prefill);
          if (learning != null) {
            long now = ticker.read();
            learning.peerStepEnded(b.worker, now);
            if (b.noted) {
              learning.peerFirstToken(b.worker, b.queuedAtArrival, b.activeAtArrival, b.prefill,
                  now - b.arrivedAt);
              b.firstTokenAt = now;
              learning.peerDecodeStarted(b.worker, b.arrivedAt, now);
            }
          }
        }
        b.prefill = 0;
      }
    }
  }

  private void release(Booking b) {
    open--;
    WorkerRegistry.WorkerState s = b.state;
    if (s == null) {
      return;
    }
    if (b.prefill > 0) {
      admission.load.releasePrefill(s.slot, s.generation, b.prefill);
    }
    admission.load.releaseKeys(s.slot, s.generation, b.keys, b.blocks);
  }

  /** Returns the work done: the bookings released. */
  private int drop(String replica) {
    Long2ObjectOpenHashMap<Booking> bookings = byReplica.remove(replica);
    if (bookings == null) {
      return 1;
    }
    for (Booking b : bookings.values()) {
      release(b);
    }
    return 1 + bookings.size();
  }

  private void predict(Prediction p, long now) {
    WorkerRegistry.WorkerState state = registry.state(p.worker);
    if (state != null && state.registered && (allApproximate || state.approximate)
        && admission.load.owns(state.slot, state.generation)) {
      predictions.recordRemote(state, p.hashes, p.hashes.length, now);
    }
  }

  /** Peers' bookings on workers this router did not know when they arrived; under the admission lock. */
  long uncounted() {
    return uncounted;
  }

  @Override
  public String toString() {
    return "RemoteLoad{blockSize=" + blockSize + ", queued=" + queued.get() + "}";
  }
}
