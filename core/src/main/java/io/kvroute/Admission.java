package io.kvroute;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.SplittableRandom;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * The router's admission: the load booked on each worker, the open bookings and their release, under one short
 * lock; thread-safe: {@link #lock()} guards everything but {@link #released}, which any thread may call.
 *
 * <p>Every selection books under the lock, so that each sees the bookings of the ones before it (as Dynamo
 * serializes admission). The lifecycle of one booking has three hooks, all under the lock: {@link #book} when a
 * request is routed, {@code prefillDone} at its first token and {@code closed} when it ends (or expires).
 *
 * <h2>Bounds</h2>
 * <ul>
 *   <li>Only <em>open</em> bookings are tracked, in an intrusive list in booking order: a handle leaves it the moment
 *       its close is applied, so closed handles never pile up behind a long stream. Bookings open longer than the
 *       booking timeout are closed as stale, and at most {@value #MAX_OPEN_BOOKINGS} are open: a selection that finds
 *       the bound reached closes the oldest before it books (counted as expired, as a stale one).
 *   <li>Hash arrays of closed bookings are pooled per power-of-two size class, at most {@value #POOL_CLASS_BYTES}
 *       bytes per class (256 arrays of a 2,048-token prompt's 128 hashes; one array of 32 Ki hashes; none beyond):
 *       allocating a large array costs less than hashing the prompt that fills it, so pooling them saves nothing
 *       and would hold memory for the router's lifetime.
 * </ul>
 */
final class Admission {
  static final int MAX_OPEN_BOOKINGS = 1 << 20;
  static final int POOL_CLASS_BYTES = 256 * 1024;
  /**
   * At most this many of the router's own bookings are counted as young at once (see {@link #unseenCopies}); a
   * booking beyond it ends the oldest one's count early. 1,024 bookings within one delivery window (0.1 ms by
   * default) is ten million selections a second.
   */
  static final int MAX_YOUNG = 1024;
  private static final int ADMISSION_SPINS = Integer.getInteger("kvroute.admissionSpins", 200);

  private final ReentrantLock lock = new ReentrantLock();
  final int blockSize;
  private final long bookingTimeoutNanos;
  private final int maxOpenBookings;
  private final HealthReports health;
  // Handles whose phase advanced, newest first, linked through Routing.nextRelease (a lock-free stack).
  private volatile @Nullable Routing releases;
  // Guarded by lock.
  final SplittableRandom random;
  final LoadTracker load = new LoadTracker();
  private final HashArrayPool pool = new HashArrayPool();
  private @Nullable Routing oldest;
  private @Nullable Routing newest;
  private int open;

  private static final VarHandle RELEASES;

  static {
    try {
      RELEASES = MethodHandles.lookup().findVarHandle(Admission.class, "releases", Routing.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final SharedLoad shared;
  private long nextBookingId; // guarded by lock
  // The router's own bookings younger than the port's delivery window, oldest first (a ring; guarded by lock).
  private final int[] youngSlot = new int[MAX_YOUNG];
  private final long[] youngGeneration = new long[MAX_YOUNG];
  private final long[] youngPrefill = new long[MAX_YOUNG];
  private final long[] youngAt = new long[MAX_YOUNG];
  private int youngHead;
  private int youngSize;
  // The port's delivery window at the last selection (guarded by lock): with none, no booking is kept as young.
  private long youngWindowNanos;
  private boolean sharedFailed; // guarded by lock: the port threw once (logged once)

  Admission(int blockSize, long bookingTimeoutNanos, long randomSeed, HealthReports health, SharedLoad shared) {
    this(blockSize, bookingTimeoutNanos, MAX_OPEN_BOOKINGS, randomSeed, health, shared);
  }

  /**
   * An admission with its own bound on open bookings ({@link #MAX_OPEN_BOOKINGS} otherwise), for tests that reach
   * the bound without holding 2^20 handles.
   */
  Admission(int blockSize, long bookingTimeoutNanos, int maxOpenBookings, long randomSeed, HealthReports health,
      SharedLoad shared) {
    if (maxOpenBookings < 1) {
      throw new IllegalArgumentException("maxOpenBookings must be at least 1: " + maxOpenBookings);
    }
    this.blockSize = blockSize;
    this.bookingTimeoutNanos = bookingTimeoutNanos;
    this.maxOpenBookings = maxOpenBookings;
    this.random = new SplittableRandom(randomSeed);
    this.health = health;
    this.shared = shared;
  }

  /** Takes the lock only if it is free at once. */
  boolean tryLock() {
    return lock.tryLock();
  }

  /**
   * Takes the lock, spinning briefly first: it is held for about a microsecond, much less than parking and waking
   * a thread costs, so a selection that finds it taken usually gets it by waiting a moment.
   */
  void lock() {
    for (int spins = 0; spins < ADMISSION_SPINS; spins++) {
      if (lock.tryLock()) {
        return;
      }
      Thread.onSpinWait();
    }
    lock.lock();
  }

  void unlock() {
    lock.unlock();
  }

  boolean heldByCurrentThread() {
    return lock.isHeldByCurrentThread();
  }

  HealthReports health() {
    return health;
  }

  /** A hash array of at least {@code count} entries, from the pool; under the lock. */
  long[] hashArray(int count) {
    return pool.take(count);
  }

  /**
   * Books a routed request's load and tracks it as open; under the lock.
   *
   * @return false, booking nothing, if the worker's registration ended (the caller checked it under this lock, so
   *     this does not happen)
   */
  boolean book(Routing routing) {
    WorkerRegistry.WorkerState state = routing.state();
    if (!load.book(state.slot, state.generation, routing.bookedPrefillTokens, routing.hashes, routing.hashCount)) {
      return false;
    }
    routing.newer = null;
    routing.older = newest;
    if (newest == null) {
      oldest = routing;
    } else {
      newest.newer = routing;
    }
    newest = routing;
    routing.tracked = true;
    open++;
    routing.bookingId = ++nextBookingId;
    if (youngWindowNanos > 0) { // read by unseenCopies under this lock, before this selection's booking
      addYoung(state.slot, state.generation, routing.bookedPrefillTokens, routing.bookedAtNanos);
    }
    return true;
  }

  private void addYoung(int slot, long generation, long prefill, long at) {
    if (youngSize == MAX_YOUNG) {
      removeOldestYoung();
    }
    int i = (youngHead + youngSize) % MAX_YOUNG;
    youngSlot[i] = slot;
    youngGeneration[i] = generation;
    youngPrefill[i] = prefill;
    youngAt[i] = at;
    youngSize++;
    load.addYoung(slot, generation, prefill);
  }

  private void removeOldestYoung() {
    int i = youngHead;
    load.removeYoung(youngSlot[i], youngGeneration[i], youngPrefill[i]);
    youngHead = (i + 1) % MAX_YOUNG;
    youngSize--;
  }

  // When this router last selected (for unseenPeerSelections); Long.MIN_VALUE before its first selection.
  private long lastSelectionNanos = Long.MIN_VALUE;

  /**
   * The expected number of selections the peers made within the port's view delay ({@link
   * SharedLoad#viewDelayNanos}) that this view cannot show yet; under the lock, once per selection. Behind an even
   * load balancer each of the {@link SharedLoad#peerCount} peers routes about as often as this router, whose rate
   * right now is one selection per gap since its previous one: {@code peers x delay / gap}. Zero for one router, for
   * the first selection, and when selections are far apart (a gap of a second against a 100 µs delay gives 0.0003
   * per peer).
   */
  double unseenPeerSelections(long nowNanos) {
    long last = lastSelectionNanos;
    lastSelectionNanos = nowNanos;
    if (shared == SharedLoad.NONE || last == Long.MIN_VALUE) {
      return 0;
    }
    int peers;
    long delay;
    try {
      peers = shared.peerCount();
      delay = shared.viewDelayNanos();
    } catch (RuntimeException e) {
      sharedThrew(e);
      return 0;
    }
    if (peers <= 0 || delay <= 0) {
      return 0;
    }
    return peers * (double) delay / Math.max(1, nowNanos - last);
  }

  /**
   * How many more times a selection at {@code nowNanos} counts each of the router's own bookings younger than the
   * port's delivery window, {@link LoadTracker#youngPrefillTokens} and {@link LoadTracker#youngRequests} (the
   * port's {@link SharedLoad#peerCount}; 0 without a port, without peers or without a window); under the lock,
   * before the selection reads the loads. Bookings that reached the window's age stop being young here.
   *
   * <p>Why the count: a peer that routes in the window decides on a view that misses this replica's young bookings,
   * as this replica's view misses the peer's; behind a round-robin (or any even) load balancer each replica routes
   * about as often, so while this replica's own selections come closer together than the window, each peer has
   * made about as many selections this replica cannot see yet, from a view that differs from its own only by the
   * unseen bookings: an estimate that puts them where this replica's own went. When selections are further apart
   * than the window, no booking is young at a selection and nothing changes.
   */
  int unseenCopies(long nowNanos) {
    if (shared == SharedLoad.NONE) {
      return 0;
    }
    int peers;
    long window;
    try {
      peers = shared.peerCount();
      window = shared.deliveryWindowNanos();
    } catch (RuntimeException e) {
      sharedThrew(e);
      peers = 0;
      window = 0;
    }
    youngWindowNanos = window;
    while (youngSize > 0 && nowNanos - youngAt[youngHead] >= window) {
      removeOldestYoung();
    }
    return youngSize == 0 || peers <= 0 ? 0 : peers;
  }

  /**
   * Tells the shared-load port of a booking; under the lock, after {@link #book}. With {@code noted} (the policy
   * learns from peers' bookings, {@link PeerLearning}) it passes the policy's note along, else the note-less form.
   */
  void shareBooking(Routing routing, boolean predicted, boolean noted, int warmBlocks, boolean newPrefix) {
    if (shared == SharedLoad.NONE) {
      return;
    }
    try {
      if (noted) {
        shared.booked(routing.bookingId, routing.state().worker.id(), routing.bookedPrefillTokens, routing.hashes,
            routing.hashCount, predicted, warmBlocks, newPrefix);
      } else {
        shared.booked(routing.bookingId, routing.state().worker.id(), routing.bookedPrefillTokens, routing.hashes,
            routing.hashCount, predicted);
      }
    } catch (RuntimeException e) {
      sharedThrew(e);
    }
  }

  private void sharedThrew(RuntimeException e) {
    if (!sharedFailed) {
      sharedFailed = true;
      System.getLogger(Admission.class.getName()).log(System.Logger.Level.WARNING, "the SharedLoad port "
          + shared + " threw; it must only enqueue (further failures are not logged)", e);
    }
  }

  /**
   * Queues a handle whose phase advanced (first token or close) for release. The release itself happens under the
   * lock, now if the lock is free, else by the next selection before it scores anyone; either way no caller of
   * {@link Routing#close()} ever blocks on a selection in progress.
   */
  void released(Routing routing) {
    // A handle is on the stack at most once: firstToken and close may both queue it, and one release applies both.
    if (Routing.RELEASE_QUEUED.compareAndSet(routing, false, true)) {
      Routing head;
      do {
        head = releases;
        routing.nextRelease = head;
      } while (!RELEASES.compareAndSet(this, head, routing));
    }
    if (lock.tryLock()) {
      try {
        drainReleases();
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * Applies queued releases, oldest first; under the lock.
   *
   * <p>The whole stack is taken at once and reversed. Each handle leaves it ({@code releaseQueued} cleared) before
   * its phase is read, so a {@code close()} racing with this either finds it still queued, and its phase write is
   * then seen here, or queues it again for the next drain (applying a handle twice is a no-op: the released flags).
   */
  void drainReleases() {
    if (releases == null) {
      return;
    }
    Routing taken = (Routing) RELEASES.getAndSet(this, null);
    Routing oldestFirst = null;
    while (taken != null) {
      Routing next = taken.nextRelease;
      taken.nextRelease = oldestFirst;
      oldestFirst = taken;
      taken = next;
    }
    while (oldestFirst != null) {
      Routing routing = oldestFirst;
      oldestFirst = routing.nextRelease;
      routing.nextRelease = null;
      Routing.RELEASE_QUEUED.setVolatile(routing, false);
      apply(routing);
    }
  }

  private void apply(Routing routing) {
    int phase = routing.phase();
    if (!routing.prefillReleased && phase != Routing.OPEN) {
      prefillDone(routing);
    }
    if (!routing.blocksReleased && phase == Routing.CLOSED) {
      closed(routing);
    }
  }

  /** The first token arrived (or the request ended before it): its pending prompt tokens are released. */
  private void prefillDone(Routing routing) {
    routing.prefillReleased = true;
    WorkerRegistry.WorkerState state = routing.state();
    load.releasePrefill(state.slot, state.generation, routing.bookedPrefillTokens);
    if (shared != SharedLoad.NONE && routing.bookingId != 0) {
      try {
        shared.firstToken(routing.bookingId);
      } catch (RuntimeException e) {
        sharedThrew(e);
      }
    }
  }

  /** The request ended: its blocks are released and it stops being tracked. */
  private void closed(Routing routing) {
    routing.blocksReleased = true;
    WorkerRegistry.WorkerState state = routing.state();
    load.releaseRequest(state.slot, state.generation, routing.hashes, routing.hashCount);
    if (shared != SharedLoad.NONE && routing.bookingId != 0) {
      try {
        shared.closed(routing.bookingId);
      } catch (RuntimeException e) {
        sharedThrew(e);
      }
    }
    untrack(routing);
    pool.give(routing.hashes);
    if (routing.probe) {
      state.health.probeEnded(routing); // frees the probe if it ended with no success or failure reported
    }
  }

  private void untrack(Routing routing) {
    if (!routing.tracked) {
      return;
    }
    routing.tracked = false;
    Routing older = routing.older;
    Routing newer = routing.newer;
    if (older == null) {
      oldest = newer;
    } else {
      older.newer = newer;
    }
    if (newer == null) {
      newest = older;
    } else {
      newer.older = older;
    }
    routing.older = null;
    routing.newer = null;
    open--;
  }

  /**
   * Closes bookings open longer than the booking timeout, and the oldest ones while the open bookings leave no room
   * for one more under the bound ({@link #MAX_OPEN_BOOKINGS} by default); under the lock. A selection calls it
   * just before it books, so the booking that follows never takes the open count beyond the bound.
   *
   * @return how many were closed, for the listener (to be told after the lock is released)
   */
  int expire(long nowNanos) {
    int expired = 0;
    Routing head;
    while ((head = oldest) != null
        && (nowNanos - head.bookedAtNanos >= bookingTimeoutNanos || open >= maxOpenBookings)) {
      head.expire();
      apply(head);
      expired++;
    }
    return expired;
  }

  /** Bookings open now; under the lock. */
  int openBookings() {
    return open;
  }

  /** Bytes of hash arrays held by the pool; under the lock. */
  long pooledBytes() {
    return pool.bytes;
  }

  /** Reusable hash arrays for bookings, by power-of-two size, bounded in bytes per size; guarded by the lock. */
  private static final class HashArrayPool {
    private static final int MAX_POOLED = 256;
    @SuppressWarnings("unchecked")
    private final ArrayDeque<long[]>[] bySize = new ArrayDeque[32];
    long bytes;

    long[] take(int count) {
      int bucket = bucket(count);
      ArrayDeque<long[]> free = bySize[bucket];
      long[] array = free == null ? null : free.pollFirst();
      if (array == null) {
        return new long[1 << bucket];
      }
      bytes -= (long) array.length * Long.BYTES;
      return array;
    }

    void give(long[] array) {
      int bucket = bucket(array.length);
      if ((1 << bucket) != array.length) {
        return;
      }
      int limit = (int) Math.min(MAX_POOLED, POOL_CLASS_BYTES / ((long) array.length * Long.BYTES));
      ArrayDeque<long[]> free = bySize[bucket];
      if (free == null) {
        if (limit == 0) {
          return;
        }
        free = bySize[bucket] = new ArrayDeque<>();
      }
      if (free.size() < limit) {
        free.addFirst(array);
        bytes += (long) array.length * Long.BYTES;
      }
    }

    private static int bucket(int count) {
      return count <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(count - 1);
    }
  }
}
