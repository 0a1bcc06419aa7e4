package io.kvroute;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * Routes each request to the worker that can serve it best, by the KV cache it already holds and the load it
 * carries; thread-safe: any number of threads may call {@link #select} while event sources feed
 * {@link #eventSink()} and workers come and go.
 *
 * <pre>{@code
 * Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).build();
 * router.workers().add(Worker.of(WorkerId.of("vllm-0"), URI.create("http://10.0.0.5:8000")));
 * try (Routing routing = router.select(promptTokens)) {
 *   forward(routing.worker());   // on the first streamed token: routing.firstToken();
 * }
 * }</pre>
 *
 * <p>Each selection hashes the prompt and matches it against the index without locks held exclusively, then
 * scores the candidates, picks one and books its load under a short admission lock, so that every selection sees
 * the bookings of the ones before it (as Dynamo serializes admission).
 *
 * <h2>Edge cases</h2>
 * <ul>
 *   <li>An empty prompt is rejected with {@link IllegalArgumentException}.
 *   <li>A prompt shorter than one block has nothing to match: the policy still runs, with zero overlap everywhere,
 *       so the choice is by load alone.
 *   <li>No registered worker (or none the request allows) throws {@link NoWorkerAvailableException} at once; select
 *       never waits.
 * </ul>
 */
public final class Router {
  /** Bookings never closed are released after this long by default (Dynamo uses 300 s). */
  public static final Duration DEFAULT_BOOKING_TIMEOUT = Duration.ofMinutes(5);
  private static final int MAX_OPEN_BOOKINGS = 1 << 20;
  private static final int ADMISSION_SPINS = Integer.getInteger("kvroute.admissionSpins", 200);
  private static final ThreadLocal<SelectScratch> SCRATCH = ThreadLocal.withInitial(SelectScratch::new);

  private final int blockSize;
  private final BlockHasher hasher;
  private final RouterPolicy policy;
  private final Ticker ticker;
  private final RouterListener listener;
  private final long bookingTimeoutNanos;
  private final KvIndexer indexer;
  private final @Nullable KvIndexer predicted;
  private final long predictionTtlNanos;
  private final int predictionBudget;
  private final WorkerRegistry registry;
  private final KvEventSink eventSink;

  // Guarded by admission.
  private final ReentrantLock admission = new ReentrantLock();
  private final SplittableRandom random;
  private final LoadTracker load = new LoadTracker();
  private final ArrayDeque<Routing> bookings = new ArrayDeque<>();
  private final ConcurrentLinkedQueue<Routing> releases = new ConcurrentLinkedQueue<>();
  private final ArrayDeque<Prediction> predictions = new ArrayDeque<>();
  private long predictedBlocks;
  private final HashArrayPool pool = new HashArrayPool();

  private Router(Builder b) {
    this.blockSize = b.blockSize;
    this.hasher = BlockHasher.of(blockSize);
    this.policy = b.policy;
    this.ticker = b.ticker;
    // A policy that learns from outcomes (first-token times, completions) hears them as the first listener.
    List<RouterListener> listeners = new ArrayList<>(b.listeners);
    if (policy instanceof RouterListener learning) {
      listeners.add(0, learning);
    }
    this.listener = CompositeRouterListener.of(listeners);
    this.bookingTimeoutNanos = b.bookingTimeout.toNanos();
    this.random = new SplittableRandom(b.randomSeed);
    this.indexer = KvIndexer.newBuilder().blockSize(blockSize).maxEntries(b.maxIndexEntries)
        .maxWorkers(b.maxWorkers).listener(listener).build();
    if (policy instanceof Policies.Approximate approximate) {
      this.predictionTtlNanos = approximate.ttlNanos;
      this.predictionBudget = approximate.maxEntries;
      this.predicted = KvIndexer.newBuilder().blockSize(blockSize).maxEntries(approximate.maxEntries)
          .maxWorkers(b.maxWorkers).build();
    } else {
      this.predictionTtlNanos = 0;
      this.predictionBudget = 0;
      this.predicted = null;
    }
    this.registry = new WorkerRegistry(new RegistryHooks(), listener);
    this.eventSink = new RegisteredWorkersSink();
  }

  /** Returns a builder: block size 16, {@link RouterPolicy#kvAware()}, system ticker, no listeners. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /** The workers this router chooses among. */
  public WorkerRegistry workers() {
    return registry;
  }

  /** Shorthand for {@code workers().add(worker)}. */
  public void addWorker(Worker worker) {
    registry.add(worker);
  }

  /** Shorthand for {@code workers().remove(id)}. */
  public boolean removeWorker(WorkerId id) {
    return registry.remove(id);
  }

  /** Shorthand for {@code workers().updateLoad(id, load)}. */
  public boolean updateLoad(WorkerId id, EngineLoad load) {
    return registry.updateLoad(id, load);
  }

  /**
   * Where event sources deliver KV events; events of workers not registered are dropped and reported to the
   * listener.
   */
  public KvEventSink eventSink() {
    return eventSink;
  }

  /** The KV index fed by {@link #eventSink()}, for queries and stats. */
  public KvIndexer indexer() {
    return indexer;
  }

  public RouterPolicy policy() {
    return policy;
  }

  public int blockSize() {
    return blockSize;
  }

  /** Routes a prompt with no further constraints; see {@link #select(RouteRequest)}. */
  public Routing select(int[] tokens) {
    return select(RouteRequest.of(tokens));
  }

  /**
   * Chooses a worker for the request and books its load.
   *
   * @throws IllegalArgumentException if the prompt is empty
   * @throws NoWorkerAvailableException if no registered worker may serve it
   */
  public Routing select(RouteRequest request) {
    Objects.requireNonNull(request, "request");
    int[] tokens = request.tokens();
    if (tokens.length == 0) {
      throw new IllegalArgumentException("tokens must not be empty");
    }
    SelectScratch scratch = SCRATCH.get();
    long[] hashes = scratch.hashes(tokens.length / blockSize);
    int count = hasher.sequenceHashes(tokens, tokens.length, request.loraName(), request.blockExtraKeys(), hashes);
    int touched = count == 0 ? 0 : indexer.matchLocked(hashes, count, scratch.main);
    int touchedPredicted = count == 0 || predicted == null ? 0 : predicted.matchLocked(hashes, count,
        scratch.predicted);
    try {
      Routing routing = admit(request, hashes, count, scratch);
      listener.onRouted(routing);
      return routing;
    } finally {
      scratch.main.reset(touched);
      scratch.predicted.reset(touchedPredicted);
    }
  }

  private Routing admit(RouteRequest request, long[] hashes, int count, SelectScratch scratch) {
    int[] tokens = request.tokens();
    WorkerRegistry.WorkerState[] states = registry.states();
    Candidates candidates = scratch.candidates;
    WorkerRegistry.WorkerState[] candidateStates = scratch.candidateStates(states.length);
    try {
      // What the index says is gathered before the admission lock: only the bookings need it.
      int n = gatherCandidates(request, states, scratch, candidateStates);
      if (n == 0) {
        listener.onNoWorker(request);
        throw new NoWorkerAvailableException(states.length == 0 ? "no workers are registered"
            : "none of the " + states.length + " registered workers may serve this request");
      }
      lockAdmission();
      try {
        long now = ticker.read();
        drainReleases();
        expire(now);
        drainReleases();
        candidates.admit(random, now);
        for (int i = 0; i < n; i++) {
          int slot = candidateStates[i].slot;
          load.ensureSlot(slot);
          int activeOverlap = load.activeDepth(slot, hashes, count);
          candidates.setLoad(i, activeOverlap, load.prefillTokens(slot),
              load.activeBlocks(slot) + count - activeOverlap, load.activeRequests(slot));
        }
        int choice = policy.select(candidates);
        if (choice < 0 || choice >= n) {
          throw new IllegalStateException("policy " + policy.name() + " chose candidate " + choice + " of " + n);
        }
        WorkerRegistry.WorkerState chosen = candidateStates[choice];
        int matched = candidates.overlapBlocks(choice);
        long uncached = Math.max(0, tokens.length - (long) matched * blockSize);
        long[] booked = pool.take(count);
        System.arraycopy(hashes, 0, booked, 0, count);
        load.book(chosen.slot, uncached, booked, count);
        if (predicted != null && count > 0) {
          predict(chosen, booked, count, now);
        }
        List<CandidateScore> explanation = request.explain() ? explain(candidates, n, choice) : List.of();
        Routing routing = new Routing(this, chosen, matched, candidates.gpuOverlapBlocks(choice), blockSize,
            tokens.length, uncached, now, booked, count, policy.name(), explanation);
        routing.queuedPrefillTokens = candidates.prefillTokens(choice);
        routing.activeAtAdmission = candidates.activeRequests(choice);
        bookings.addLast(routing);
        return routing;
      } finally {
        admission.unlock();
      }
    } finally {
      candidates.clear();
      java.util.Arrays.fill(candidateStates, null);
    }
  }

  private int gatherCandidates(RouteRequest request, WorkerRegistry.WorkerState[] states, SelectScratch scratch,
      WorkerRegistry.WorkerState[] candidateStates) {
    Candidates candidates = scratch.candidates;
    candidates.reset(request, request.tokens().length, blockSize, scratch.hashes);
    Set<WorkerId> allowed = request.allowedWorkers();
    int n = 0;
    for (WorkerRegistry.WorkerState state : states) {
      Worker worker = state.worker;
      if (!state.registered || (allowed != null && !allowed.contains(worker.id()))
          || !worker.serves(request.model(), request.loraName())) {
        continue;
      }
      int slot = state.slot;
      int overlap = depth(scratch.main.depth, slot);
      int gpuOverlap = depth(scratch.main.gpuDepth, slot);
      long cached = indexer.entriesOfSlot(slot);
      if (predicted != null) {
        overlap = Math.max(overlap, depth(scratch.predicted.depth, state.predictedSlot));
        gpuOverlap = Math.max(gpuOverlap, depth(scratch.predicted.gpuDepth, state.predictedSlot));
        cached += predicted.entriesOfSlot(state.predictedSlot);
      }
      candidates.add(worker, overlap, gpuOverlap, cached, state.engineLoad);
      candidateStates[n++] = state;
    }
    return n;
  }

  /**
   * Takes the admission lock, spinning briefly first: it is held for about a microsecond, much less than parking
   * and waking a thread costs, so a selection that finds it taken usually gets it by waiting a moment.
   */
  private void lockAdmission() {
    for (int spins = 0; spins < ADMISSION_SPINS; spins++) {
      if (admission.tryLock()) {
        return;
      }
      Thread.onSpinWait();
    }
    admission.lock();
  }

  private static int depth(int[] depths, int slot) {
    return slot >= 0 && slot < depths.length ? depths[slot] : 0;
  }

  private static List<CandidateScore> explain(Candidates candidates, int n, int choice) {
    List<CandidateScore> scores = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      scores.add(new CandidateScore(candidates.worker(i).id(), candidates.overlapBlocks(i),
          candidates.gpuOverlapBlocks(i), candidates.prefillTokens(i), candidates.decodeBlocks(i),
          candidates.activeRequests(i), candidates.cost(i), i == choice));
    }
    return List.copyOf(scores);
  }

  private void predict(WorkerRegistry.WorkerState chosen, long[] hashes, int count, long now) {
    long[] copy = java.util.Arrays.copyOf(hashes, count);
    predicted.storeSequence(chosen.predictedSlot, copy, count);
    predictions.addLast(new Prediction(now + predictionTtlNanos, chosen, copy));
    predictedBlocks += count;
  }

  /** Releases expired bookings and predictions; under the admission lock. */
  private void expire(long now) {
    int expired = 0;
    Routing head;
    while ((head = bookings.peekFirst()) != null) {
      if (head.isClosed()) {
        bookings.pollFirst();
      } else if (now - head.bookedAtNanos >= bookingTimeoutNanos || bookings.size() > MAX_OPEN_BOOKINGS) {
        bookings.pollFirst();
        head.close();
        expired++;
      } else {
        break;
      }
    }
    if (expired > 0) {
      listener.onBookingsExpired(expired);
    }
    Prediction p;
    while ((p = predictions.peekFirst()) != null
        && (p.expiresAtNanos - now <= 0 || predictedBlocks > 2L * predictionBudget)) {
      predictions.pollFirst();
      predictedBlocks -= p.hashes.length;
      if (p.state.registered) {
        predicted.removeSequence(p.state.predictedSlot, p.hashes, p.hashes.length);
      }
    }
  }

  /**
   * Queues a handle whose phase advanced (first token or close) for release. The release itself happens under the
   * admission lock, now if the lock is free, else by the next selection before it scores anyone; either way no
   * caller of {@link Routing#close()} ever blocks on a selection in progress.
   */
  void released(Routing routing) {
    releases.offer(routing);
    if (admission.tryLock()) {
      try {
        drainReleases();
      } finally {
        admission.unlock();
      }
    }
  }

  /** Applies queued releases; under the admission lock. */
  private void drainReleases() {
    Routing routing;
    while ((routing = releases.poll()) != null) {
      int phase = routing.phase();
      WorkerRegistry.WorkerState state = routing.state();
      if (!routing.prefillReleased && phase != Routing.OPEN) {
        routing.prefillReleased = true;
        if (state.registered) {
          load.releasePrefill(state.slot, routing.bookedPrefillTokens);
        }
      }
      if (!routing.blocksReleased && phase == Routing.CLOSED) {
        routing.blocksReleased = true;
        if (state.registered) {
          load.releaseRequest(state.slot, routing.hashes, routing.hashCount);
        }
        pool.give(routing.hashes);
      }
    }
  }

  /** Active requests the router has booked on a worker (0 if unknown). */
  public int activeRequests(WorkerId id) {
    return (int) bookedLoad(id, true);
  }

  /** Pending prefill tokens the router has booked on a worker (0 if unknown). */
  public long pendingPrefillTokens(WorkerId id) {
    return bookedLoad(id, false);
  }

  private long bookedLoad(WorkerId id, boolean requests) {
    Objects.requireNonNull(id, "id");
    admission.lock();
    try {
      drainReleases();
      for (WorkerRegistry.WorkerState s : registry.states()) {
        if (s.worker.id().equals(id)) {
          load.ensureSlot(s.slot);
          return requests ? load.activeRequests(s.slot) : load.prefillTokens(s.slot);
        }
      }
      return 0;
    } finally {
      admission.unlock();
    }
  }

  /** Tells the listener of a handle's first token. */
  void firstTokenArrived(Routing routing) {
    if (listener != RouterListener.NONE) {
      listener.onFirstToken(routing, ticker.read() - routing.bookedAtNanos);
    }
  }

  /** Tells the listener of a handle's close. */
  void closedHandle(Routing routing) {
    if (listener != RouterListener.NONE) {
      listener.onClosed(routing, ticker.read() - routing.bookedAtNanos);
    }
  }

  @Override
  public String toString() {
    return "Router{policy=" + policy.name() + ", blockSize=" + blockSize + ", workers=" + registry.size() + "}";
  }

  private final class RegistryHooks implements WorkerRegistry.Hooks {
    @Override
    public WorkerRegistry.WorkerState added(Worker worker) {
      int slot = indexer.register(worker.id());
      int predictedSlot = predicted == null ? -1 : predicted.register(worker.id());
      if (slot < 0 || (predicted != null && predictedSlot < 0)) {
        indexer.removeWorker(worker.id());
        throw new IllegalStateException("the router's worker bound is reached; cannot add " + worker.id());
      }
      admission.lock();
      try {
        load.resetSlot(slot);
        load.ensureSlot(slot);
      } finally {
        admission.unlock();
      }
      return new WorkerRegistry.WorkerState(worker, slot, predictedSlot);
    }

    @Override
    public void removed(WorkerRegistry.WorkerState state) {
      indexer.removeWorker(state.worker.id());
      admission.lock();
      try {
        if (predicted != null) {
          predicted.removeWorker(state.worker.id());
        }
        load.resetSlot(state.slot);
      } finally {
        admission.unlock();
      }
    }
  }

  /** Drops events of workers that are not registered, so removed workers cannot come back through late events. */
  private final class RegisteredWorkersSink implements KvEventSink {
    @Override
    public void apply(WorkerId worker, KvEvent event) {
      if (!registry.contains(worker)) {
        listener.onEventForUnknownWorker(worker, event);
        return;
      }
      indexer.apply(worker, event);
      if (!registry.contains(worker)) {
        indexer.removeWorker(worker); // removed while the event was applied
      }
    }
  }

  private record Prediction(long expiresAtNanos, WorkerRegistry.WorkerState state, long[] hashes) {}

  /** Reusable hash arrays for bookings, by power-of-two size; guarded by the admission lock. */
  private static final class HashArrayPool {
    private static final int MAX_POOLED = 256;
    @SuppressWarnings("unchecked")
    private final ArrayDeque<long[]>[] bySize = new ArrayDeque[32];

    long[] take(int count) {
      int bucket = bucket(count);
      ArrayDeque<long[]> free = bySize[bucket];
      long[] array = free == null ? null : free.pollFirst();
      return array != null ? array : new long[1 << bucket];
    }

    void give(long[] array) {
      int bucket = bucket(array.length);
      if ((1 << bucket) != array.length) {
        return;
      }
      ArrayDeque<long[]> free = bySize[bucket];
      if (free == null) {
        free = bySize[bucket] = new ArrayDeque<>();
      }
      if (free.size() < MAX_POOLED) {
        free.addFirst(array);
      }
    }

    private static int bucket(int count) {
      return count <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(count - 1);
    }
  }

  /** Per-thread buffers for one selection. */
  private static final class SelectScratch {
    private long[] hashes = new long[256];
    private WorkerRegistry.WorkerState[] candidateStates = new WorkerRegistry.WorkerState[8];
    final Candidates candidates = new Candidates();
    final KvIndexer.MatchScratch main = new KvIndexer.MatchScratch();
    final KvIndexer.MatchScratch predicted = new KvIndexer.MatchScratch();

    WorkerRegistry.WorkerState[] candidateStates(int workers) {
      if (candidateStates.length < workers) {
        candidateStates = new WorkerRegistry.WorkerState[Math.max(workers, candidateStates.length * 2)];
      }
      return candidateStates;
    }

    long[] hashes(int blocks) {
      if (hashes.length < blocks) {
        hashes = new long[Math.max(blocks, hashes.length * 2)];
      }
      return hashes;
    }
  }

  /** Configures a {@link Router}; not thread-safe. */
  public static final class Builder {
    private int blockSize = BlockHasher.DEFAULT_BLOCK_SIZE;
    private RouterPolicy policy = RouterPolicy.kvAware();
    private Ticker ticker = Ticker.systemTicker();
    private final List<RouterListener> listeners = new ArrayList<>();
    private long randomSeed = System.nanoTime();
    private int maxIndexEntries = KvIndexer.DEFAULT_MAX_ENTRIES;
    private int maxWorkers = KvIndexer.DEFAULT_MAX_WORKERS;
    private Duration bookingTimeout = DEFAULT_BOOKING_TIMEOUT;

    private Builder() {}

    /**
     * Tokens per KV block; must match the engines' block size (vLLM's default is 16).
     *
     * @throws IllegalArgumentException if not positive
     */
    public Builder blockSize(int blockSize) {
      this.blockSize = BlockHasher.requireBlockSize(blockSize);
      return this;
    }

    /**
     * How a worker is chosen among the candidates. Default: {@link RouterPolicy#kvAware()}, Dynamo's KV-aware cost with
     * {@link KvAwareConfig#DEFAULT} (overlap weight 1.0, temperature 0: the lowest cost wins).
     *
     * @param policy the policy
     * @return this builder
     */
    public Builder policy(RouterPolicy policy) {
      this.policy = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** The time source for bookings and predictions; tests and simulations inject their own. */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Adds a listener for routing decisions, first tokens, closes, workers and the index; call again to add more
     * (each call adds, none replaces). Listeners are called in the order added; one that throws is logged and
     * skipped, and neither the others nor the router's caller see the exception. Default: none.
     *
     * @param listener the listener to add
     * @return this builder
     */
    public Builder listener(RouterListener listener) {
      this.listeners.add(Objects.requireNonNull(listener, "listener"));
      return this;
    }

    /** Seeds every random choice (ties, softmax sampling, the random policy), for reproducible routing. */
    public Builder randomSeed(long seed) {
      this.randomSeed = seed;
      return this;
    }

    /**
     * The KV index's entry budget; see {@link KvIndexer}.
     *
     * @throws IllegalArgumentException if not positive or above 2^28
     */
    public Builder maxIndexEntries(int maxEntries) {
      KvIndexer.newBuilder().maxEntries(maxEntries); // validates
      this.maxIndexEntries = maxEntries;
      return this;
    }

    /**
     * The bound on registered workers (name and rank pairs).
     *
     * @throws IllegalArgumentException if not positive or above 2^24
     */
    public Builder maxWorkers(int maxWorkers) {
      KvIndexer.newBuilder().maxWorkers(maxWorkers); // validates
      this.maxWorkers = maxWorkers;
      return this;
    }

    /**
     * How long a booking may stay open before it is released as stale (a request never closed).
     *
     * @throws IllegalArgumentException if not positive
     */
    public Builder bookingTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("bookingTimeout must be positive but was " + timeout);
      }
      this.bookingTimeout = timeout;
      return this;
    }

    public Router build() {
      return new Router(this);
    }
  }
}
