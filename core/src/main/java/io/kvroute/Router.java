package io.kvroute;

import io.kvroute.internal.Checks;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Routes each request to the worker that can serve it best, by the KV cache it already holds, the load it carries
 * and its health; thread-safe: any number of threads may call {@link #select} while event sources feed
 * {@link #eventSink()}, gateways report outcomes and workers come and go.
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
 * <h2>Health</h2>
 * Gateways report outcomes with {@link #reportSuccess} and {@link #reportFailure}, event sources report their
 * streams with {@link #reportEventStream}, operators {@link #drain} workers. Only {@link HealthState#HEALTHY} and
 * {@link HealthState#SUSPECT} workers are candidates; {@link Builder#ejectAfterFailures} consecutive failures eject
 * a worker, so its cached prefixes stop attracting requests, and after its backoff ({@link Builder#ejectionBackoff})
 * one request is let through as a probe. A worker whose event stream is silent or broken, or that has delivered no
 * event yet, is scored by the router's own predictions of what it routed there (as {@link RouterPolicy#approximate()}
 * does for every worker), never as a worker with an empty cache.
 *
 * <h2>Edge cases</h2>
 * <ul>
 *   <li>An empty prompt, or one over {@link Builder#maxPromptTokens}, is rejected with
 *       {@link InvalidRouteRequestException}.
 *   <li>A prompt shorter than one block has nothing to match: the policy still runs, with zero overlap everywhere,
 *       so the choice is by load alone.
 *   <li>No eligible worker throws {@link NoWorkerAvailableException} at once, with the reason (none registered, model,
 *       adapter, allow-list, all draining, all unhealthy); select never waits.
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
  private static final Logger LOG = System.getLogger(Router.class.getName());
  private static final ThreadLocal<SelectScratch> SCRATCH = ThreadLocal.withInitial(SelectScratch::new);

  private final int blockSize;
  private final BlockHasher hasher;
  private final RouterPolicy policy;
  private final @Nullable PeerLearning peerLearning; // the policy, when it learns from peers' booking notes
  private final @Nullable ReportLearning reportLearning; // the policy, when it learns from reports on arrival
  private final Ticker ticker;
  private final RouterListener listener;
  private final KvIndexer indexer;
  private final KvIndex indexView;
  private final WorkerRegistry registry;
  private final KvEventSink eventSink;
  private final int maxPromptTokens;
  private final HealthConfig healthConfig;
  private final HealthReports health;
  private final Admission admission;
  private final Predictions predictions;
  private final RemoteBookings remote;
  // Under the approximate policy every worker is scored by predictions; otherwise only those without trusted events.
  private final boolean allApproximate;
  private long generations; // guarded by the registry's change lock

  private Router(Builder b) {
    this.blockSize = b.blockSize;
    this.hasher = BlockHasher.of(blockSize);
    this.policy = b.policy;
    this.peerLearning = policy instanceof PeerLearning learning ? learning : null;
    this.reportLearning = policy instanceof ReportLearning learning ? learning : null;
    this.ticker = b.ticker;
    // A policy that learns from outcomes (first-token times, completions) hears them as the first listener.
    List<RouterListener> listeners = new ArrayList<>(b.listeners);
    if (policy instanceof RouterListener learning) {
      listeners.add(0, learning);
    }
    this.listener = CompositeRouterListener.of(listeners);
    this.maxPromptTokens = b.maxPromptTokens;
    this.healthConfig = new HealthConfig(b.ejectAfterFailures, b.initialBackoff, b.maxBackoff);
    this.health = new HealthReports(ticker, listener);
    this.admission = new Admission(blockSize, b.bookingTimeout.toNanos(), b.maxOpenBookings, b.randomSeed, health,
        b.sharedLoad);
    this.indexer = KvIndexer.newBuilder().blockSize(blockSize).maxEntries(b.maxIndexEntries)
        .maxWorkers(b.maxWorkers).listener(listener).build();
    this.indexView = indexer.readOnlyView();
    if (policy instanceof Policies.Approximate approximate) {
      this.allApproximate = true;
      this.predictions = new Predictions(blockSize, b.maxWorkers, approximate.ttlNanos, approximate.maxEntries);
    } else {
      this.allApproximate = false;
      this.predictions = new Predictions(blockSize, b.maxWorkers, Predictions.DEFAULT_TTL_NANOS,
          Predictions.DEFAULT_BUDGET);
    }
    this.registry = new WorkerRegistry(new RegistryHooks(), listener);
    this.eventSink = new RegisteredWorkersSink();
    this.remote = new RemoteBookings(blockSize, admission, registry, predictions, allApproximate, ticker,
        peerLearning);
    if (b.sharedLoad != SharedLoad.NONE) {
      b.sharedLoad.start(remote);
    }
  }

  /**
   * Returns a builder: block size 16, {@link RouterPolicy#kvAware()}, system ticker, no listeners.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * The workers this router chooses among.
   *
   * @return the registry
   */
  public WorkerRegistry workers() {
    return registry;
  }

  /**
   * Shorthand for {@code workers().add(worker)}.
   *
   * @param worker the worker to add
   */
  public void addWorker(Worker worker) {
    registry.add(worker);
  }

  /**
   * Shorthand for {@code workers().remove(id)}.
   *
   * @param id the worker to remove
   * @return whether it was registered
   */
  public boolean removeWorker(WorkerId id) {
    return registry.remove(id);
  }

  /**
   * Shorthand for {@code workers().updateLoad(id, load)}.
   *
   * @param id the worker
   * @param load what its engine reported
   * @return whether it is registered
   */
  public boolean updateLoad(WorkerId id, EngineLoad load) {
    return registry.updateLoad(id, load);
  }

  /**
   * Where event sources deliver KV events; events of workers not registered are dropped and reported to the
   * listener.
   *
   * @return the sink
   */
  public KvEventSink eventSink() {
    return eventSink;
  }

  /**
   * A read-only view of the KV index fed by {@link #eventSink()}, for queries and stats. Events go through
   * {@link #eventSink()} and workers through {@link #workers()}, so that the index never holds a worker the registry
   * does not know.
   *
   * @return the view
   */
  public KvIndex indexer() {
    return indexView;
  }

  /**
   * The policy that chooses among candidates.
   *
   * @return the policy
   */
  public RouterPolicy policy() {
    return policy;
  }

  /**
   * Tokens per KV block.
   *
   * @return the block size
   */
  public int blockSize() {
    return blockSize;
  }

  /**
   * The load peer replicas booked, as this router sees it, fed by the {@link Builder#sharedLoad} port (empty
   * without one). Its bookings are included in what policies see and in {@link #activeRequests}.
   *
   * @return the view
   */
  public RemoteLoad remoteLoad() {
    return remote;
  }

  /**
   * Routes a prompt with no further constraints; see {@link #select(RouteRequest)}.
   *
   * @param tokens the prompt's token ids
   * @return the routing handle; close it when the request ends
   */
  public Routing select(int[] tokens) {
    return select(RouteRequest.of(tokens));
  }

  /**
   * Chooses a worker for the request and books its load.
   *
   * @param request the request
   * @return the routing handle; close it when the request ends
   * @throws InvalidRouteRequestException if the prompt is empty or longer than {@link Builder#maxPromptTokens}
   * @throws NoWorkerAvailableException if no registered worker may serve it now, with the reason
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
    // Block 0's probe slots start loading as soon as its hash is known, so that their cache miss (all that a
    // miss's match waits for) overlaps with hashing the rest of the prompt.
    scratch.warming = indexer;
    int count;
    try {
      count = hasher.sequenceHashes(tokens, tokens.length, request.loraName(), request.blockExtraKeys(), hashes,
          scratch);
    } finally {
      scratch.warming = null; // a thread's scratch outlives routers: it keeps no index reachable
    }
    int touched = count == 0 ? 0 : indexer.matchLocked(hashes, count, scratch.main);
    int touchedPredicted = predictions.match(hashes, count, scratch.predicted, scratch.sampling);
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
    WorkerRegistry.WorkerState[] states = registry.states();
    Candidates candidates = scratch.candidates;
    WorkerRegistry.WorkerState[] candidateStates = scratch.candidateStates(states.length);
    Routing routing = null;
    int expired = 0;
    try {
      // What the index says is gathered before the admission lock: only the bookings need it.
      int n = gatherCandidates(request, states, scratch, candidateStates);
      if (n > 0) {
        admission.lock();
        try {
          long now = ticker.read();
          admission.drainReleases();
          if (remote.hasQueued()) {
            remote.drain(RemoteBookings.DRAIN_PER_SELECT); // peers' bookings; their predictions are not applied here
          }
          expired = admission.expire(now);
          int unseenCopies = admission.unseenCopies(now);
          predictions.expire(now);
          candidates.admit(admission.random, now);
          candidates.unseenPeerSelections(admission.unseenPeerSelections(now));
          n = retainAdmissible(candidates, candidateStates, n, now, hashes, count, unseenCopies);
          if (n > 0) {
            routing = choose(request, hashes, count, candidates, candidateStates, n, now, states, scratch);
          }
        } finally {
          admission.unlock();
        }
      }
    } finally {
      // candidateStates keeps its references for the next selection to compare (see gatherCandidates).
      candidates.clear();
    }
    if (expired > 0) {
      listener.onBookingsExpired(expired); // outside the lock, as every routing callback
    }
    if (routing == null) {
      listener.onNoWorker(request);
      throw noWorker(request, states);
    }
    WorkerRegistry.WorkerState chosen = routing.state();
    if (chosen.approximate && !allApproximate && !chosen.approximateLogged) {
      chosen.approximateLogged = true;
      LOG.log(Level.INFO, () -> "worker " + chosen.worker.id() + " has no trusted KV event stream ("
          + chosen.eventStream + (chosen.eventSeen ? "" : ", no event yet")
          + "): scoring it by the router's own predictions until its events arrive");
    }
    return routing;
  }

  private int gatherCandidates(RouteRequest request, WorkerRegistry.WorkerState[] states, SelectScratch scratch,
      WorkerRegistry.WorkerState[] candidateStates) {
    Candidates candidates = scratch.candidates;
    candidates.reset(request, request.tokens().length, blockSize, scratch.hashes);
    Set<WorkerId> allowed = request.allowedWorkers();
    @Nullable String model = request.model();
    @Nullable String lora = request.loraName();
    boolean servedByAll = servedByAll(model, lora);
    // Read once: the loop's volatile reads would otherwise make the JIT reload each of these in every iteration.
    int[] depth = scratch.main.depth;
    int[] gpuDepth = scratch.main.gpuDepth;
    int n = 0;
    for (WorkerRegistry.WorkerState state : states) {
      if (!eligible(state, allowed, model, lora, servedByAll)) {
        continue;
      }
      Worker worker = state.worker;
      int slot = state.slot;
      int overlap = depth(depth, slot);
      int gpuOverlap = depth(gpuDepth, slot);
      long cached = indexer.entriesOfSlot(slot);
      boolean approximate = allApproximate || state.approximate;
      if (approximate) {
        overlap = Math.max(overlap, depth(scratch.predicted.depth, state.predictedSlot));
        gpuOverlap = Math.max(gpuOverlap, depth(scratch.predicted.gpuDepth, state.predictedSlot));
        cached += predictions.entriesOfSlot(state.predictedSlot);
      }
      candidates.add(worker, overlap, gpuOverlap, cached, state.engineLoad, approximate);
      if (candidateStates[n] != state) { // stored only when it changed: a reference store costs a GC write barrier
        candidateStates[n] = state;
      }
      n++;
    }
    return n;
  }

  /** Whether every worker serves a request for this model and adapter (what {@link Worker#serves} then answers). */
  private static boolean servedByAll(@Nullable String model, @Nullable String lora) {
    return model == null && (lora == null || lora.isEmpty());
  }

  /** Whether the worker may take the request; {@code servedByAll} is {@link #servedByAll}, computed once per request. */
  private static boolean eligible(WorkerRegistry.WorkerState state, @Nullable Set<WorkerId> allowed,
      @Nullable String model, @Nullable String lora, boolean servedByAll) {
    Worker worker = state.worker;
    return state.registered && (allowed == null || allowed.contains(worker.id()))
        && (servedByAll || worker.serves(model, lora));
  }

  /**
   * Drops the candidates that may not take a request now, under the admission lock: a worker removed since it was
   * gathered (its slot may already belong to a new registration, so it must get no booking), and workers whose
   * health forbids it; and fills in the loads of those kept (in the same pass: one read of each candidate's
   * state). The only work select does for health: one volatile read per candidate. Each of this router's own
   * bookings younger than the shared-load port's delivery window counts {@code unseenCopies} more times in a
   * candidate's pending prefill tokens and active requests, as its peers' unseen bookings
   * ({@link Admission#unseenCopies}; 0 for one router).
   */
  private int retainAdmissible(Candidates candidates, WorkerRegistry.WorkerState[] candidateStates, int n,
      long now, long[] hashes, int count, int unseenCopies) {
    LoadTracker load = admission.load;
    for (int i = n - 1; i >= 0; i--) {
      WorkerRegistry.WorkerState s = candidateStates[i];
      HealthState h = s.health.state();
      int slot = s.slot;
      if (load.owns(slot, s.generation)
          && (h.routable() || (h == HealthState.EJECTED && s.health.probeDue(now)))) {
        candidates.setHealth(i, h);
        int activeOverlap = load.activeDepth(slot, hashes, count);
        long prefill = load.prefillTokens(slot);
        int active = load.activeRequests(slot);
        if (unseenCopies > 0) {
          prefill += unseenCopies * load.youngPrefillTokens(slot);
          active += unseenCopies * load.youngRequests(slot);
        }
        candidates.setLoad(i, activeOverlap, prefill, load.activeBlocks(slot) + count - activeOverlap, active,
            load.holderHistogram(slot));
      } else {
        candidates.remove(i);
        System.arraycopy(candidateStates, i + 1, candidateStates, i, n - i - 1);
        candidateStates[--n] = null;
      }
    }
    return n;
  }

  /**
   * Lets the policy choose among the admissible candidates (their loads filled in) and books the choice; under the
   * admission lock.
   */
  private Routing choose(RouteRequest request, long[] hashes, int count, Candidates candidates,
      WorkerRegistry.WorkerState[] candidateStates, int n, long now, WorkerRegistry.WorkerState[] states,
      SelectScratch scratch) {
    int choice = policy.select(candidates);
    if (choice < 0 || choice >= n) {
      throw new IllegalStateException("policy " + policy.name() + " chose candidate " + choice + " of " + n);
    }
    WorkerRegistry.WorkerState chosen = candidateStates[choice];
    int matched = candidates.overlapBlocks(choice);
    int[] tokens = request.tokens();
    long uncached = Math.max(0, tokens.length - (long) matched * blockSize);
    long[] booked = admission.hashArray(count);
    System.arraycopy(hashes, 0, booked, 0, count);
    List<CandidateScore> explanation = request.explain()
        ? explain(request, candidates, candidateStates, n, choice, states, scratch) : List.of();
    Routing routing = new Routing(admission, chosen, matched, candidates.gpuOverlapBlocks(choice), tokens.length,
        uncached, now, booked, count, policy.name(), explanation);
    // The load the request really found (without the estimate of unseen peers' bookings), with the queue the policy
    // counted where it noted one: what its time to first token is learned against.
    LoadTracker load = admission.load;
    long queued = load.prefillTokens(chosen.slot);
    long noted = candidates.noteQueuedTokens();
    routing.admittedLoad = Routing.admittedLoad(noted >= 0 ? Math.min(noted, queued) : queued,
        load.activeRequests(chosen.slot),
        candidates.notePrefillTokens());
    // An ejected candidate is one whose backoff has passed: this request is its half-open probe.
    routing.probe = candidates.health(choice) == HealthState.EJECTED && chosen.health.beginProbe(routing);
    if (!admission.book(routing)) {
      throw new IllegalStateException("worker " + chosen.worker.id() + " lost its slot under the admission lock");
    }
    boolean predicted = allApproximate || chosen.approximate;
    if (predicted) {
      predictions.record(chosen, booked, count, depth(scratch.predicted.depth, chosen.predictedSlot), now);
    }
    admission.shareBooking(routing, predicted && count > 0, peerLearning != null,
        Math.min(candidates.noteWarmBlocks(), count), candidates.noteNewPrefix());
    return routing;
  }

  private static int depth(int[] depths, int slot) {
    return slot >= 0 && slot < depths.length ? depths[slot] : 0;
  }

  /**
   * Every candidate's overlap, load, cost and health, then the workers that could serve the request but were not
   * candidates because of their health (cost NaN), so that an explanation shows why a warm worker was passed over.
   */
  private List<CandidateScore> explain(RouteRequest request, Candidates candidates,
      WorkerRegistry.WorkerState[] candidateStates, int n, int choice, WorkerRegistry.WorkerState[] states,
      SelectScratch scratch) {
    List<CandidateScore> scores = new ArrayList<>(states.length);
    for (int i = 0; i < n; i++) {
      scores.add(new CandidateScore(candidates.worker(i).id(), candidates.overlapBlocks(i),
          candidates.gpuOverlapBlocks(i), candidates.prefillTokens(i), candidates.decodeBlocks(i),
          candidates.activeRequests(i), candidates.cost(i), i == choice, candidates.health(i),
          candidates.approximate(i)));
    }
    Set<WorkerId> allowed = request.allowedWorkers();
    boolean servedByAll = servedByAll(request.model(), request.loraName());
    LoadTracker load = admission.load;
    outer:
    for (WorkerRegistry.WorkerState s : states) {
      if (!eligible(s, allowed, request.model(), request.loraName(), servedByAll)) {
        continue;
      }
      for (int i = 0; i < n; i++) {
        if (candidateStates[i] == s) {
          continue outer;
        }
      }
      boolean owned = load.owns(s.slot, s.generation);
      scores.add(new CandidateScore(s.worker.id(), depth(scratch.main.depth, s.slot),
          depth(scratch.main.gpuDepth, s.slot), owned ? load.prefillTokens(s.slot) : 0,
          owned ? load.activeBlocks(s.slot) : 0, owned ? load.activeRequests(s.slot) : 0, Double.NaN, false,
          s.health.state(), allApproximate || s.approximate));
    }
    return List.copyOf(scores);
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
            + " draining); an ejected worker takes one probe request once its backoff has passed");
  }

  /**
   * Reports that a request forwarded to the worker, or a probe of it, succeeded: a suspect worker becomes healthy,
   * and an ejected one whose backoff has passed is readmitted. Cheap when the worker is already healthy (no lock);
   * unknown workers are ignored. {@link Routing#firstToken()} reports a success by itself when the worker is not
   * healthy.
   *
   * @param worker the worker
   */
  public void reportSuccess(WorkerId worker) {
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state != null) {
      health.success(state);
    }
  }

  /**
   * Reports one failed interaction with the worker. {@link Builder#ejectAfterFailures} consecutive failures that
   * count toward ejection (see {@link FailureKind#countsTowardEjection()}) eject it; fewer make it
   * {@link HealthState#SUSPECT}. A failure of an ejected worker's probe ejects it again for twice the backoff. A scrape
   * failure also forgets the worker's last reported load, which would otherwise make a dead worker look idle.
   * Unknown workers are ignored; never blocks a selection.
   *
   * @param worker the worker
   * @param kind what failed
   */
  public void reportFailure(WorkerId worker, FailureKind kind) {
    Objects.requireNonNull(kind, "kind");
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state != null) {
      health.failure(state, kind);
    }
  }

  /**
   * Reports the state of the worker's KV event stream. While it is {@link EventStreamState#SILENT} or
   * {@link EventStreamState#BROKEN} (or {@link EventStreamState#UNKNOWN} with no event applied yet) the router scores
   * the worker by its own predictions of what it routed there, not as a worker with an empty cache. Unknown workers
   * are ignored.
   *
   * @param worker the worker
   * @param streamState the stream's state
   */
  public void reportEventStream(WorkerId worker, EventStreamState streamState) {
    Objects.requireNonNull(streamState, "streamState");
    WorkerRegistry.WorkerState state = registry.state(Objects.requireNonNull(worker, "worker"));
    if (state == null) {
      return;
    }
    EventStreamState before = state.eventStream;
    state.eventStream = streamState;
    state.updateMode();
    if (before != streamState) {
      boolean untrusted = streamState == EventStreamState.SILENT || streamState == EventStreamState.BROKEN;
      boolean recovered = before == EventStreamState.SILENT || before == EventStreamState.BROKEN;
      LOG.log(untrusted ? Level.WARNING : recovered ? Level.INFO : Level.DEBUG, () -> "worker " + worker
          + " KV event stream " + before + " -> " + streamState
          + (untrusted ? ": scoring it by the router's own predictions" : ""));
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
    health.drain(state, on);
    return true;
  }

  /**
   * Active requests booked on a worker, by this router and, with a {@link Builder#sharedLoad} port, its peers.
   *
   * @param id the worker
   * @return its open bookings, 0 if unknown
   */
  public int activeRequests(WorkerId id) {
    return (int) bookedLoad(id, true);
  }

  /**
   * Pending prefill tokens booked on a worker, by this router and its peers.
   *
   * @param id the worker
   * @return prompt tokens of its requests without a first token yet, 0 if unknown
   */
  public long pendingPrefillTokens(WorkerId id) {
    return bookedLoad(id, false);
  }

  private long bookedLoad(WorkerId id, boolean requests) {
    WorkerRegistry.WorkerState s = registry.state(Objects.requireNonNull(id, "id"));
    if (s == null) {
      return 0;
    }
    admission.lock();
    try {
      admission.drainReleases();
      remote.drain(Integer.MAX_VALUE);
      LoadTracker load = admission.load;
      if (!load.owns(s.slot, s.generation)) {
        return 0;
      }
      return requests ? load.activeRequests(s.slot) : load.prefillTokens(s.slot);
    } finally {
      admission.unlock();
    }
  }

  /** The mutable index, for tests. */
  KvIndexer index() {
    return indexer;
  }

  Predictions predictions() {
    return predictions;
  }

  /** Releases that found nothing to release (a booking released twice); zero unless there is a bug. */
  long overReleases() {
    admission.lock();
    try {
      admission.drainReleases();
      return admission.load.overReleases();
    } finally {
      admission.unlock();
    }
  }

  boolean admissionHeldByCurrentThread() {
    return admission.heldByCurrentThread();
  }

  int openBookings() {
    admission.lock();
    try {
      admission.drainReleases();
      return admission.openBookings();
    } finally {
      admission.unlock();
    }
  }

  long pooledHashBytes() {
    admission.lock();
    try {
      return admission.pooledBytes();
    } finally {
      admission.unlock();
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
      int predictedSlot = predictions.register(worker.id());
      if (slot < 0 || predictedSlot < 0) {
        indexer.removeWorker(worker.id());
        predictions.removed(worker.id());
        throw new IllegalStateException("the router's worker bound is reached; cannot add " + worker.id());
      }
      WorkerRegistry.WorkerState state = new WorkerRegistry.WorkerState(worker, slot, predictedSlot,
          ++generations, new WorkerHealth(healthConfig));
      admission.lock();
      try {
        admission.load.activate(slot, state.generation);
      } finally {
        admission.unlock();
      }
      return state;
    }

    @Override
    public void removed(WorkerRegistry.WorkerState state) {
      indexer.removeWorker(state.worker.id());
      admission.lock();
      try {
        predictions.removed(state.worker.id());
        admission.load.deactivate(state.slot);
      } finally {
        admission.unlock();
      }
    }

    /**
     * Lets a policy that learns from engine reports (see {@link ReportLearning}) compare this one with the blocks
     * booked on the worker now, its peers' included: the releases and peers' deltas queued so far are applied
     * first, so that every synced replica compares the report with the same bookings.
     */
    @Override
    public void loadUpdated(WorkerRegistry.WorkerState state, EngineLoad load) {
      if (reportLearning == null) {
        return;
      }
      admission.lock();
      try {
        admission.drainReleases();
        if (remote.hasQueued()) {
          remote.drain(RemoteBookings.DRAIN_PER_SELECT);
        }
        if (admission.load.owns(state.slot, state.generation)) {
          long cached = indexer.entriesOfSlot(state.slot);
          if (allApproximate || state.approximate) {
            cached += predictions.entriesOfSlot(state.predictedSlot);
          }
          reportLearning.loadReported(state.worker.id(), load, admission.load.activeBlocks(state.slot), cached);
        }
      } finally {
        admission.unlock();
      }
    }
  }

  /** Drops events of workers that are not registered, so removed workers cannot come back through late events. */
  private final class RegisteredWorkersSink implements KvEventSink {
    @Override
    public boolean accepts(WorkerId worker) {
      return registry.contains(worker);
    }

    @Override
    public void apply(WorkerId worker, KvEvent event) {
      WorkerRegistry.WorkerState state = registry.state(worker);
      if (state == null) {
        listener.onEventForUnknownWorker(worker, event);
        return;
      }
      indexer.apply(worker, event);
      applied(worker, state);
    }

    /** One registry look-up per batch; the index applies it in chunks (see {@link KvIndexer#applyAll}). */
    @Override
    public void applyAll(WorkerId worker, List<? extends KvEvent> events) {
      WorkerRegistry.WorkerState state = registry.state(worker);
      if (state == null) {
        for (KvEvent event : events) {
          listener.onEventForUnknownWorker(worker, event);
        }
        return;
      }
      if (events.isEmpty()) {
        return;
      }
      indexer.applyAll(worker, events);
      applied(worker, state);
    }

    /** As {@link #applyAll}, for events held in columns (see {@link KvIndexer#applyColumns}). */
    @Override
    public void applyColumns(WorkerId worker, KvEventColumns batch) {
      WorkerRegistry.WorkerState state = registry.state(worker);
      if (state == null) {
        for (int i = 0; i < batch.size(); i++) {
          listener.onEventForUnknownWorker(worker, batch.event(i));
        }
        return;
      }
      if (batch.size() == 0) {
        return;
      }
      indexer.applyColumns(worker, batch);
      applied(worker, state);
    }

    private void applied(WorkerId worker, WorkerRegistry.WorkerState state) {
      if (!registry.contains(worker)) {
        indexer.removeWorker(worker); // removed while the events were applied
      } else if (!state.eventSeen) {
        state.eventSeen = true; // the first event: the index speaks for this worker unless its stream breaks
        state.updateMode();
      }
    }
  }

  /** Per-thread buffers for one selection; as the hasher's first-block hook, warms the index for the match. */
  private static final class SelectScratch implements BlockHasher.FirstBlock {
    private long[] hashes = new long[256];
    private @Nullable KvIndexer warming; // the index the prompt being hashed will be matched against
    private long warmed; // keeps the warming loads from being optimised away
    private WorkerRegistry.WorkerState[] candidateStates = new WorkerRegistry.WorkerState[8];
    final Candidates candidates = new Candidates();
    final PrefixTable.MatchScratch main = new PrefixTable.MatchScratch();
    final PrefixTable.MatchScratch predicted = new PrefixTable.MatchScratch();
    final Predictions.Sampling sampling = new Predictions.Sampling();

    WorkerRegistry.WorkerState[] candidateStates(int workers) {
      if (candidateStates.length < workers) {
        candidateStates = new WorkerRegistry.WorkerState[Math.max(workers, candidateStates.length * 2)];
      }
      return candidateStates;
    }

    @Override
    public void hashed(long sequenceHash) {
      KvIndexer index = warming;
      if (index != null) {
        warmed += index.warmFirstBlock(sequenceHash);
      }
    }

    long[] hashes(int blocks) {
      if (hashes.length < blocks) {
        hashes = new long[Math.max(blocks, hashes.length * 2)];
      }
      return hashes;
    }
  }

  /** Configures a {@link Router}; not thread-safe. Each setter validates its argument and names it in the exception. */
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
    private SharedLoad sharedLoad = SharedLoad.NONE;
    private int maxOpenBookings = Admission.MAX_OPEN_BOOKINGS;

    private Builder() {}

    /** For tests: a bound on open bookings other than {@link Admission#MAX_OPEN_BOOKINGS}. */
    Builder maxOpenBookings(int max) {
      this.maxOpenBookings = Checks.positive("maxOpenBookings", max);
      return this;
    }

    /**
     * Shares this router's bookings (and approximate-mode predictions) with peer replicas through a port, and
     * counts theirs in what policies see; see {@link SharedLoad}. The port is started when the router is built
     * and serves that one router. Default {@link SharedLoad#NONE}.
     *
     * @param sharedLoad the port, for example {@code kvroute-sync-nats}'s {@code NatsLoadSync}
     * @return this builder
     */
    public Builder sharedLoad(SharedLoad sharedLoad) {
      this.sharedLoad = Objects.requireNonNull(sharedLoad, "sharedLoad");
      return this;
    }

    /**
     * The longest prompt {@link Router#select} accepts, in tokens; longer ones are rejected with
     * {@link InvalidRouteRequestException} ({@link InvalidRouteRequestException.Reason#PROMPT_TOO_LONG}). The
     * default, {@value Router#DEFAULT_MAX_PROMPT_TOKENS} (2^20), covers the context windows of the models engines
     * commonly serve (up to 1M tokens; raise it for longer ones), while it bounds the work one selection does under
     * the admission lock (about 0.4 ms at the limit) and the memory its booking holds.
     *
     * @param maxPromptTokens the bound
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder maxPromptTokens(int maxPromptTokens) {
      this.maxPromptTokens = Checks.positive("maxPromptTokens", maxPromptTokens);
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
      this.ejectAfterFailures = Checks.positive("ejectAfterFailures", failures);
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
      Checks.positive("ejectionBackoff initial", initial);
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
     * @param blockSize tokens per block, positive
     * @return this builder
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

    /**
     * The time source for bookings and predictions; tests and simulations inject their own.
     *
     * @param ticker the clock, not null
     * @return this builder
     */
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

    /**
     * Seeds every random choice (ties, softmax sampling, the random policy), for reproducible routing.
     *
     * @param seed any value; the same seed and the same calls give the same choices
     * @return this builder
     */
    public Builder randomSeed(long seed) {
      this.randomSeed = seed;
      return this;
    }

    /**
     * The KV index's entry budget; see {@link KvIndexer}.
     *
     * @param maxEntries the most (worker, tier, block) entries the index holds
     * @return this builder
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
     * @param maxWorkers the most workers registered at once
     * @return this builder
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
     * @param timeout the longest a booking stays open, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder bookingTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      this.bookingTimeout = Checks.positive("bookingTimeout", timeout);
      return this;
    }

    /**
     * Builds the router (and starts its {@link Builder#sharedLoad} port, if one is set).
     *
     * @return a new router with no workers registered
     */
    public Router build() {
      return new Router(this);
    }
  }
}
