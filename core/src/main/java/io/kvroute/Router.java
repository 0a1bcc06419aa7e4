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
 *   <li>An empty prompt, or one over {@link Builder#maxPromptTokens}, is rejected with
 *       {@link InvalidRouteRequestException}.
 *   <li>A prompt shorter than one block has nothing to match: the policy still runs, with zero overlap everywhere,
 *       so the choice is by load alone.
 *   <li>No registered worker (or none the request allows) throws {@link NoWorkerAvailableException} at once; select
 *       never waits.
 * </ul>
 */
public final class Router {
  /** Bookings never closed are released after this long by default (Dynamo uses 300 s). */
  public static final Duration DEFAULT_BOOKING_TIMEOUT = Duration.ofMinutes(5);
  /** The default {@link Builder#maxPromptTokens}: 2^20 tokens. */
  public static final int DEFAULT_MAX_PROMPT_TOKENS = 1 << 20;
  /** The default {@link Builder#ejectAfterFailures}. */
  public static final int DEFAULT_EJECT_AFTER_FAILURES = 3;
  /** The default first backoff of {@link Builder#ejectionBackoff}. */
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
  /** The default longest backoff of {@link Builder#ejectionBackoff}. */
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(30);
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
  private final int maxPromptTokens;
  private final HealthConfig healthConfig;
  private long generations; // guarded by the registry's change lock

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
    this.listener = CompositeRouterListener.of(b.listeners);
    this.bookingTimeoutNanos = b.bookingTimeout.toNanos();
    this.maxPromptTokens = b.maxPromptTokens;
    this.healthConfig = new HealthConfig(b.ejectAfterFailures, b.initialBackoff, b.maxBackoff);
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
   * @throws InvalidRouteRequestException if the prompt is empty or longer than {@link Builder#maxPromptTokens}
   * @throws NoWorkerAvailableException if no registered worker may serve it, with the reason
   */
  public Routing select(RouteRequest request) {
    Objects.requireNonNull(request, "request");
    int[] tokens = request.tokens();
    if (tokens.length == 0) {
      throw new InvalidRouteRequestException(InvalidRouteRequestException.Reason.EMPTY_PROMPT,
          "tokens must not be empty");
    }
    if (tokens.length > maxPromptTokens) {
      throw new InvalidRouteRequestException(InvalidRouteRequestException.Reason.PROMPT_TOO_LONG,
          "the prompt has " + tokens.length + " tokens, more than maxPromptTokens " + maxPromptTokens);
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
        throw noWorker(request, states);
      }
      boolean noWorker = false;
      lockAdmission();
      try {
        long now = ticker.read();
        drainReleases();
        expire(now);
        drainReleases();
        candidates.admit(random, now);
        for (int i = n - 1; i >= 0; i--) {
          // Checked under the lock: a worker removed since it was gathered must get no booking (its slot may
          // already belong to a new registration), and health decides who may take new requests.
          WorkerRegistry.WorkerState s = candidateStates[i];
          if (!s.registered || !s.health.admits(now)) {
            candidates.remove(i);
            System.arraycopy(candidateStates, i + 1, candidateStates, i, n - i - 1);
            candidateStates[--n] = null;
          }
        }
        if (n == 0) {
          noWorker = true;
          return null;
        }
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
        boolean probe = chosen.health.state() == HealthState.EJECTED && chosen.health.beginProbe();
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
        routing.probe = probe;
        bookings.addLast(routing);
        return routing;
      } finally {
        admission.unlock();
        if (noWorker) {
          listener.onNoWorker(request);
          throw noWorker(request, states);
        }
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

  /** Why no worker may serve the request; only on the failure path. */
  private static NoWorkerAvailableException noWorker(RouteRequest request, WorkerRegistry.WorkerState[] states) {
    if (states.length == 0) {
      return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKERS,
          "no workers are registered");
    }
    int forModel = 0;
    int forLora = 0;
    int allowed = 0;
    int draining = 0;
    Set<WorkerId> allowList = request.allowedWorkers();
    for (WorkerRegistry.WorkerState state : states) {
      Worker w = state.worker;
      if (!w.serves(request.model(), null)) {
        continue;
      }
      forModel++;
      if (!w.serves(request.model(), request.loraName())) {
        continue;
      }
      forLora++;
      if (allowList != null && !allowList.contains(w.id())) {
        continue;
      }
      allowed++;
      if (state.health.state() == HealthState.DRAINING) {
        draining++;
      }
    }
    if (forModel == 0) {
      return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL,
          "none of the " + states.length + " registered workers serves model " + request.model());
    }
    if (forLora == 0) {
      return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKER_FOR_LORA,
          "none of the " + forModel + " workers serving the model has LoRA adapter " + request.loraName());
    }
    if (allowed == 0) {
      return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NONE_ALLOWED,
          "the request's allowed workers exclude all " + forLora + " workers that serve it");
    }
    if (draining == allowed) {
      return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.ALL_DRAINING,
          "all " + allowed + " workers that could serve the request are draining");
    }
    return new NoWorkerAvailableException(NoWorkerAvailableException.Reason.ALL_UNHEALTHY,
        "all " + allowed + " workers that could serve the request are ejected or draining (" + draining
            + " draining)");
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
        if (routing.probe) {
          state.health.probeAbandoned(); // no-op if a report already ended the probe
        }
      }
    }
  }

  /**
   * Reports that a request forwarded to the worker, or a probe of it, succeeded: a suspect worker becomes healthy,
   * and an ejected one whose backoff has passed is readmitted. Cheap when the worker is already healthy; unknown
   * workers are ignored. {@link Routing#firstToken()} reports a success by itself when the worker is not healthy.
   *
   * @param worker the worker
   */
  public void reportSuccess(WorkerId worker) {
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state != null) {
      reportSuccess(state);
    }
  }

  void reportSuccess(WorkerRegistry.WorkerState state) {
    changed(state, state.health.success(ticker.read()));
  }

  /**
   * Reports one failed interaction with the worker. Consecutive failures that count toward ejection (see
   * {@link FailureKind#countsTowardEjection()}) eject it after {@link Builder#ejectAfterFailures} of them; fewer make
   * it {@link HealthState#SUSPECT}. A scrape failure also forgets the worker's last reported load, which would
   * otherwise make a dead worker look idle. Unknown workers are ignored.
   *
   * @param worker the worker
   * @param kind what failed
   */
  public void reportFailure(WorkerId worker, FailureKind kind) {
    Objects.requireNonNull(kind, "kind");
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state != null) {
      if (kind == FailureKind.SCRAPE_FAILED) {
        state.engineLoad = null;
      }
      changed(state, state.health.failure(kind, ticker.read()));
    }
  }

  /**
   * Reports the state of the worker's KV event stream. While it is {@link EventStreamState#SILENT} or
   * {@link EventStreamState#BROKEN} the router scores the worker by its own predictions of what it routed there.
   * Unknown workers are ignored.
   *
   * @param worker the worker
   * @param streamState the stream's state
   */
  public void reportEventStream(WorkerId worker, EventStreamState streamState) {
    Objects.requireNonNull(streamState, "streamState");
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state != null) {
      state.eventStream = streamState;
      state.updateMode();
    }
  }

  /**
   * The worker's health.
   *
   * @param worker the worker
   * @return its state, or null if it is not registered
   */
  public @Nullable HealthState health(WorkerId worker) {
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    return state == null ? null : state.health.state();
  }

  /**
   * Stops routing new requests to the worker; requests in flight finish and release their load as usual.
   *
   * @param worker the worker
   * @return whether it is registered
   */
  public boolean drain(WorkerId worker) {
    return setDraining(worker, true);
  }

  /**
   * Ends {@link #drain}: the worker takes new requests again, unless failures ejected it meanwhile.
   *
   * @param worker the worker
   * @return whether it is registered
   */
  public boolean undrain(WorkerId worker) {
    return setDraining(worker, false);
  }

  private boolean setDraining(WorkerId worker, boolean on) {
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state == null) {
      return false;
    }
    changed(state, state.health.drain(on));
    return true;
  }

  private void changed(WorkerRegistry.WorkerState state, WorkerHealth.@Nullable Change change) {
    if (change != null) {
      try {
        listener.onHealthChanged(state.worker.id(), change.from(), change.to(), change.reason());
      } catch (RuntimeException e) {
        // a listener must not break the reporter
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
      return new WorkerRegistry.WorkerState(worker, slot, predictedSlot, ++generations,
          new WorkerHealth(healthConfig));
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
      WorkerRegistry.WorkerState state = registry.state(worker);
      if (state == null) {
        listener.onEventForUnknownWorker(worker, event);
        return;
      }
      indexer.apply(worker, event);
      if (!state.eventSeen) {
        state.eventSeen = true; // the first event: the index now speaks for this worker, unless the stream breaks
        state.updateMode();
      }
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
    private int maxPromptTokens = DEFAULT_MAX_PROMPT_TOKENS;
    private int ejectAfterFailures = DEFAULT_EJECT_AFTER_FAILURES;
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;

    private Builder() {}

    /**
     * The longest prompt {@link Router#select} accepts, in tokens; longer ones are rejected with
     * {@link InvalidRouteRequestException} ({@link InvalidRouteRequestException.Reason#PROMPT_TOO_LONG}). The
     * default, {@value Router#DEFAULT_MAX_PROMPT_TOKENS} (2^20), is at least the context window of the models
     * engines commonly serve, so no prompt an engine could accept is refused, while it bounds the work one
     * selection does under the admission lock (a few milliseconds at most).
     *
     * @param maxPromptTokens the bound
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder maxPromptTokens(int maxPromptTokens) {
      if (maxPromptTokens <= 0) {
        throw new IllegalArgumentException("maxPromptTokens must be positive but was " + maxPromptTokens);
      }
      this.maxPromptTokens = maxPromptTokens;
      return this;
    }

    /**
     * How many consecutive failures eject a worker (default {@value Router#DEFAULT_EJECT_AFTER_FAILURES}). One
     * failure is routinely a client's cancellation or a blip, and a worker with independent transient failures of
     * rate p is falsely ejected at rate p^3 (10^-6 at p = 1%); a dead worker costs at most three failed attempts,
     * each retried elsewhere when it provably never reached the engine.
     *
     * @param failures the threshold
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder ejectAfterFailures(int failures) {
      if (failures <= 0) {
        throw new IllegalArgumentException("ejectAfterFailures must be positive but was " + failures);
      }
      this.ejectAfterFailures = failures;
      return this;
    }

    /**
     * How long an ejected worker stays out before one request probes it: {@code initial} after the first
     * ejection, doubling with each ejection in a row, at most {@code max} (defaults 1 s and 30 s). A probe costs
     * one request's attempt, so a worker down for T seconds costs about log2(T / 1 s) + T / 30 s probes, while a
     * worker that recovers (a restart, a brief pause) is readmitted within one backoff, at most 30 s: a small
     * fraction of the minutes an engine restart with a model load takes.
     *
     * @param initial the first backoff
     * @param max the longest backoff
     * @return this builder
     * @throws IllegalArgumentException if {@code initial} is not positive or {@code max} is less than it
     */
    public Builder ejectionBackoff(Duration initial, Duration max) {
      Objects.requireNonNull(initial, "initial");
      Objects.requireNonNull(max, "max");
      if (initial.isNegative() || initial.isZero()) {
        throw new IllegalArgumentException("ejectionBackoff initial must be positive but was " + initial);
      }
      if (max.compareTo(initial) < 0) {
        throw new IllegalArgumentException("ejectionBackoff max must be at least initial " + initial + " but was "
            + max);
      }
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }

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
