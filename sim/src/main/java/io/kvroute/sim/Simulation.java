package io.kvroute.sim;

import io.kvroute.EngineLoad;
import io.kvroute.EventStreamState;
import io.kvroute.KvEvent;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Ticker;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.IntToLongFunction;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The in-process mode: a deterministic discrete-event simulation of closed-loop clients, a {@link Router} and
 * simulated engines, on a virtual clock with no sockets and no threads; an immutable description of a run,
 * thread-safe, and {@link #run()} may be called any number of times (each run starts from empty caches and gives
 * the same result).
 *
 * <p>Each of {@code concurrency} clients sends a request, waits for it to finish and sends the next, until
 * {@code requests} have been sent (or, with {@link Builder#openLoop}, requests are sent at given times). A request is routed with {@code router.select(tokens)} at send time, queued in
 * the chosen engine, scheduled and timed by the same engine model as {@link SimServer} ({@link SimEngine},
 * {@link TimingModel}); the routing handle gets {@code firstToken()} when the first token is sampled and
 * {@code close()} when the request finishes. Each engine step's KV events reach {@code router.eventSink()} after
 * {@code eventDelay} of virtual time, as they would over ZeroMQ. The router's {@link Ticker} must be the
 * simulation's clock, which is why the router is built by a factory that receives it.
 */
public final class Simulation {
  /** The default delay between an engine step's end and the router applying its KV events. */
  public static final Duration DEFAULT_EVENT_DELAY = Duration.ofMillis(2);

  /**
   * The default interval of engine load reports: one second, the default of {@code EngineMetricsScraper} in
   * kvroute-transport-okhttp, so a simulation sees what a gateway running the scraper sees.
   */
  public static final Duration DEFAULT_LOAD_REPORT_INTERVAL = Duration.ofSeconds(1);

  private final SimEngineConfig engine;
  private final int workers;
  private final int concurrency;
  private final int requests;
  private final Workload workload;
  private final Function<Ticker, Router> routerFactory;
  private final long eventDelayNanos;
  private final @Nullable IntToLongFunction arrivals;
  private final long loadReportNanos;
  private final int replicas;
  private final long periodicNanos;
  private final @Nullable Runnable periodicTask;
  private final @Nullable LongSupplier timerDue;
  private final @Nullable Runnable timerTask;
  private final Map<Integer, SimEngineConfig> workerEngines;
  private final List<long[]> outages;
  private final List<long[]> slowdowns;
  private final long clientJitterNanos;
  private final long clientJitterSeed;
  private final long clientStartNanos;

  private Simulation(Builder b) {
    this.engine = b.engine;
    this.workers = b.workers;
    this.concurrency = b.concurrency;
    this.requests = b.requests;
    this.workload = b.workload;
    this.routerFactory = b.routerFactory;
    this.eventDelayNanos = b.eventDelay.toNanos();
    this.arrivals = b.arrivals;
    this.loadReportNanos = b.loadReportInterval.toNanos();
    this.replicas = b.replicas;
    this.periodicNanos = b.periodicInterval.toNanos();
    this.periodicTask = b.periodicTask;
    this.timerDue = b.timerDue;
    this.timerTask = b.timerTask;
    this.workerEngines = Map.copyOf(b.workerEngines);
    this.outages = List.copyOf(b.outages);
    this.slowdowns = List.copyOf(b.slowdowns);
    this.clientJitterNanos = b.clientJitter.toNanos();
    this.clientJitterSeed = b.clientJitterSeed;
    this.clientStartNanos = b.clientStart.toNanos();
  }

  /**
   * A builder; {@link Builder#workload} and {@link Builder#router} are required.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Runs the simulation from empty caches and returns what happened.
   *
   * @return the run's hit rates, latencies and per-worker counts; each call is a new, independent run
   */
  public SimulationResult run() {
    return new Run().execute();
  }

  @Override
  public String toString() {
    return "Simulation{workers=" + workers + ", concurrency=" + concurrency + ", requests=" + requests
        + ", workload=" + workload + ", engine=" + engine + "}";
  }

  private static final int SEND = 0;
  private static final int STEP_DONE = 1;
  private static final int DELIVER = 2;
  private static final int REPORT_LOAD = 3;
  private static final int PERIODIC = 4;
  private static final int REMOVE = 5;
  private static final int READD = 6;
  private static final int SLOW_DOWN = 7;

  /** A scheduled occurrence on the virtual clock, ordered by time then by creation. */
  private record Occurrence(long time, long seq, int kind, int target, EngineOrEvents payload)
      implements Comparable<Occurrence> {
    @Override
    public int compareTo(Occurrence o) {
      int byTime = Long.compare(time, o.time);
      return byTime != 0 ? byTime : Long.compare(seq, o.seq);
    }
  }

  private record EngineOrEvents(SimEngine.Step step, List<KvEvent> events) {}

  /** The mutable state of one run; confined to the calling thread. */
  private final class Run {
    private final PriorityQueue<Occurrence> queue = new PriorityQueue<>();
    private final SimEngine[] engines = new SimEngine[workers];
    private final WorkerId[] workerIds = new WorkerId[workers];
    private final boolean[] busy = new boolean[workers];
    private final boolean[] removed = new boolean[workers];
    private final Map<WorkerId, Integer> indexOf = new HashMap<>();
    private final SimulationResult.Recorder recorder = new SimulationResult.Recorder(requests, workers);
    private final SplittableRandom jitter = new SplittableRandom(clientJitterSeed);
    private long now;
    private long seq;
    private int issued;
    private Router[] routers;

    Occurrence schedule(long time, int kind, int target, EngineOrEvents payload) {
      Occurrence o = new Occurrence(time, seq++, kind, target, payload);
      queue.add(o);
      return o;
    }

    SimulationResult execute() {
      routers = new Router[replicas];
      for (int r = 0; r < replicas; r++) {
        routers[r] = Objects.requireNonNull(routerFactory.apply(() -> now), "router factory returned null");
      }
      for (int w = 0; w < workers; w++) {
        int worker = w;
        workerIds[w] = WorkerId.of("sim-" + w);
        indexOf.put(workerIds[w], w);
        SimEngineConfig base = workerEngines.getOrDefault(w, engine);
        SimEngineConfig config = base.toBuilder()
            .engineHashSeed(Mix.splitMix64(base.engineHashSeed() + w))
            .build();
        engines[w] = new SimEngine(config, events -> schedule(now + eventDelayNanos, DELIVER, worker,
            new EngineOrEvents(null, events)));
        addWorker(w);
      }
      if (arrivals == null) {
        for (int c = 0; c < concurrency; c++) {
          schedule(clientStartNanos > 0 ? jitter.nextLong(clientStartNanos) : clientDelay(), SEND, c, null);
        }
      } else {
        long previous = 0;
        for (int i = 0; i < requests; i++) {
          long at = arrivals.applyAsLong(i);
          if (at < previous) {
            throw new IllegalStateException("arrival times must not decrease, but request " + i + " arrives at "
                + at + " ns after " + previous + " ns");
          }
          previous = at;
          schedule(at, SEND, i, null);
        }
      }
      if (loadReportNanos > 0) {
        schedule(loadReportNanos, REPORT_LOAD, 0, null);
      }
      if (periodicTask != null) {
        schedule(periodicNanos, PERIODIC, 0, null);
      }
      for (long[] outage : outages) {
        schedule(outage[1], REMOVE, (int) outage[0], null);
        schedule(outage[2], READD, (int) outage[0], null);
      }
      for (int i = 0; i < slowdowns.size(); i++) {
        schedule(slowdowns.get(i)[1], SLOW_DOWN, i, null);
      }
      while (!queue.isEmpty()) {
        runTimer();
        Occurrence o = queue.poll();
        now = o.time();
        switch (o.kind()) {
          case SEND -> send();
          case STEP_DONE -> stepDone(o.target(), o.payload().step());
          case DELIVER -> {
            for (Router router : routers) {
              router.eventSink().applyAll(workerIds[o.target()], o.payload().events());
            }
          }
          case REPORT_LOAD -> reportLoad();
          case PERIODIC -> {
            periodicTask.run();
            if (recorder.count < requests) {
              schedule(now + periodicNanos, PERIODIC, 0, null);
            }
          }
          case REMOVE -> {
            removed[o.target()] = true;
            for (Router router : routers) {
              router.removeWorker(workerIds[o.target()]);
            }
          }
          case READD -> {
            // Back with a cold cache, as a restarted pod (when idle; requests still draining keep their blocks).
            removed[o.target()] = false;
            engines[o.target()].resetPrefixCache();
            addWorker(o.target());
          }
          case SLOW_DOWN -> {
            long[] slowdown = slowdowns.get(o.target());
            SimEngine e = engines[(int) slowdown[0]];
            e.retime(e.config().timing().slowerBy(Double.longBitsToDouble(slowdown[2])));
          }
          default -> throw new AssertionError(o);
        }
      }
      long preemptions = 0;
      for (SimEngine e : engines) {
        preemptions += e.preemptions();
      }
      return recorder.finish(recorder.lastFinishedNanos, preemptions);
    }

    /**
     * Runs the timer task while it is due strictly before the next occurrence (an occurrence at the same instant
     * goes first), each time at its due time (never before now).
     */
    private void runTimer() {
      if (timerDue == null) {
        return;
      }
      while (true) {
        long due = timerDue.getAsLong();
        Occurrence next = queue.peek();
        if (due == Long.MAX_VALUE || next == null || due >= next.time()) {
          return;
        }
        now = Math.max(now, due);
        timerTask.run();
      }
    }

    /**
     * Adds worker {@code w} to every router. Its events reach them in process, in order and without loss: a live
     * stream from the start, as an events-zmq subscriber reports once connected.
     */
    private void addWorker(int w) {
      for (Router router : routers) {
        router.addWorker(Worker.of(workerIds[w]));
        router.reportEventStream(workerIds[w], EventStreamState.LIVE);
      }
    }

    /** Reports every engine's load to the router, as a metrics scraper would, while requests remain. */
    private void reportLoad() {
      for (int w = 0; w < workers; w++) {
        if (removed[w]) {
          continue;
        }
        SimEngine e = engines[w];
        EngineLoad load = new EngineLoad(e.numRunning(), e.numWaiting(), e.kvCacheUsage(), now);
        for (Router router : routers) {
          router.updateLoad(workerIds[w], load);
        }
      }
      if (recorder.count < requests) {
        schedule(now + loadReportNanos, REPORT_LOAD, 0, null);
      }
    }

    private void send() {
      if (issued >= requests) {
        return;
      }
      int index = issued++;
      SimRequest request = workload.request(index);
      long sentAt = now;
      Routing routing = routers[index % replicas].select(request.promptTokens());
      Integer w = indexOf.get(routing.workerId());
      if (w == null) {
        throw new IllegalStateException("router chose an unknown worker " + routing.workerId());
      }
      int worker = w;
      SimEngine target = engines[worker];
      String error = target.validate(request.promptTokens().length, request.maxTokens());
      if (error != null) {
        routing.close();
        throw new IllegalArgumentException("request " + index + " rejected by the engine: " + error);
      }
      target.submit(request.promptTokens(), request.maxTokens(), index, new EngineRequest.Observer() {
        @Override
        public void onToken(EngineRequest r, int token) {
          if (r.numOutputs() == 1) {
            routing.firstToken();
            recorder.firstToken(index, now - sentAt);
          }
        }

        @Override
        public void onFinished(EngineRequest r) {
          routing.close();
          recorder.finished(index, worker, request.prefixGroup(), r.numPromptTokens, r.cachedPromptTokens,
              routing.predictedCachedTokens(), now - sentAt, now);
          if (arrivals == null) {
            schedule(now + clientDelay(), SEND, 0, null); // closed loop: this client sends its next request
          }
        }
      });
      kick(worker);
    }

    /** A closed-loop client's wait before it sends: 0, or uniform in [0, clientJitter). */
    private long clientDelay() {
      return clientJitterNanos == 0 ? 0 : jitter.nextLong(clientJitterNanos);
    }

    private void kick(int worker) {
      if (busy[worker] || !engines[worker].hasWork()) {
        return;
      }
      SimEngine.Step step = engines[worker].schedule();
      if (step.isEmpty()) {
        return; // nothing schedulable now; a finishing request will kick again
      }
      busy[worker] = true;
      schedule(now + Math.max(1, step.nanos()), STEP_DONE, worker, new EngineOrEvents(step, null));
    }

    private void stepDone(int worker, SimEngine.Step step) {
      busy[worker] = false;
      engines[worker].complete(step);
      kick(worker);
    }
  }

  /** Builds a {@link Simulation}; not thread-safe. */
  public static final class Builder {
    private SimEngineConfig engine = SimEngineConfig.DEFAULT;
    private int workers = 6;
    private int concurrency = 8;
    private int requests = 240;
    private Workload workload;
    private Function<Ticker, Router> routerFactory;
    private Duration eventDelay = DEFAULT_EVENT_DELAY;
    private @Nullable IntToLongFunction arrivals;
    private Duration loadReportInterval = DEFAULT_LOAD_REPORT_INTERVAL;
    private final Map<Integer, SimEngineConfig> workerEngines = new HashMap<>();
    private final List<long[]> outages = new java.util.ArrayList<>();
    private final List<long[]> slowdowns = new java.util.ArrayList<>();
    private int replicas = 1;
    private Duration periodicInterval = Duration.ZERO;
    private @Nullable Runnable periodicTask;
    private @Nullable LongSupplier timerDue;
    private @Nullable Runnable timerTask;
    private Duration clientJitter = Duration.ZERO;
    private Duration clientStart = Duration.ZERO;
    private long clientJitterSeed;

    private Builder() {}

    /**
     * Gives worker {@code worker} its own engine configuration (a smaller cache, a slower GPU), for heterogeneous
     * fleets; the others keep {@link #engine}.
     *
     * @param worker the worker's index, from 0
     * @param config that worker's engine configuration
     * @return this builder
     * @throws IllegalArgumentException if {@code worker} is negative
     */
    public Builder workerEngine(int worker, SimEngineConfig config) {
      Checks.notNegative("worker", worker);
      workerEngines.put(worker, Objects.requireNonNull(config, "config"));
      return this;
    }

    /**
     * Removes worker {@code worker} from the router at virtual time {@code from} and adds it back, with its prefix
     * cache reset (a restarted pod), at {@code until}; requests already on it finish there.
     *
     * @param worker the worker's index, from 0
     * @param from when the worker is removed, in virtual time since the start
     * @param until when it is added back, in virtual time since the start, after {@code from}
     * @return this builder
     * @throws IllegalArgumentException if {@code worker} is negative or {@code until} is not after {@code from}
     */
    public Builder outage(int worker, Duration from, Duration until) {
      Checks.notNegative("worker", worker);
      if (from.isNegative() || until.compareTo(from) <= 0) {
        throw new IllegalArgumentException("outage must satisfy 0 <= from < until but was " + from + ".." + until);
      }
      outages.add(new long[] {worker, from.toNanos(), until.toNanos()});
      return this;
    }

    /**
     * Makes worker {@code worker}'s engine {@code factor} times slower from virtual time {@code at} on (a GPU that
     * throttles, a noisy neighbour): every step scheduled from then is timed by its configured
     * {@link TimingModel#slowerBy slowerBy(factor)}; the router is not told. A later slowdown of the same worker
     * replaces an earlier one (factors relative to the configured timing, not compounded).
     *
     * @param worker the worker's index, from 0
     * @param at when the slowdown starts, in virtual time since the start, zero or more
     * @param factor the slowdown, finite and positive (below 1 speeds the worker up)
     * @return this builder
     * @throws IllegalArgumentException if {@code worker} or {@code at} is negative or {@code factor} is not finite
     *     and positive
     */
    public Builder slowdown(int worker, Duration at, double factor) {
      Checks.notNegative("worker", worker);
      Checks.notNegative("at", at);
      Checks.finitePositive("factor", factor);
      slowdowns.add(new long[] {worker, at.toNanos(), Double.doubleToLongBits(factor)});
      return this;
    }

    /**
     * Routes through this many routers, each built by the {@link #router} factory, as several gateway replicas
     * behind a load balancer: request {@code i} goes to router {@code i mod replicas}; every router gets every
     * worker, every KV event and every load report (default 1).
     *
     * @param replicas the router count, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder replicas(int replicas) {
      this.replicas = Checks.positive("replicas", replicas);
      return this;
    }

    /**
     * Runs {@code task} every {@code interval} of virtual time while requests remain, on the simulation's thread
     * between occurrences (for example to flush the replicas' load sharing in virtual time).
     *
     * @param interval the period in virtual time, positive
     * @param task the task, run on the simulation's thread
     * @return this builder
     * @throws IllegalArgumentException if {@code interval} is not positive
     */
    public Builder periodic(Duration interval, Runnable task) {
      this.periodicInterval = Checks.positive("periodic interval", interval);
      this.periodicTask = Objects.requireNonNull(task, "task");
      return this;
    }

    /**
     * Runs {@code task} whenever the virtual clock reaches the time {@code due} returns, on the simulation's thread
     * between occurrences: after every occurrence the simulation asks {@code due} for the next virtual time (in
     * nanoseconds; {@link Long#MAX_VALUE} for none), and if it comes before the next occurrence (an occurrence at
     * the same instant goes first) it sets the clock to it (or leaves it, if that time has passed) and runs
     * {@code task}, then asks again. What the routers do during an occurrence can so schedule work at any later
     * instant, for example a load-sharing port publishing a replica's deltas when its publisher would.
     *
     * @param due the next time the task is due, asked after every occurrence and every run of the task; it must
     *     eventually return {@link Long#MAX_VALUE} or a time past the last occurrence
     * @param task the task, run on the simulation's thread
     * @return this builder
     */
    public Builder timer(LongSupplier due, Runnable task) {
      this.timerDue = Objects.requireNonNull(due, "due");
      this.timerTask = Objects.requireNonNull(task, "task");
      return this;
    }

    /**
     * Makes each closed-loop client wait a random time, uniform in {@code [0, max)} and drawn from a generator seeded
     * with {@code seed}, before each of its requests, the first included (default zero: all clients start at once and
     * send the next request the instant the previous one finished). Without it, clients whose requests finish in the
     * same engine step send their next ones at the same virtual instant, and a start from idle stays phase-locked
     * for several rounds: bursts that a real client's own processing and network round trip would spread.
     *
     * @param max the exclusive upper bound of each wait, in virtual time, zero or more
     * @param seed seeds the waits; the same seed gives the same waits
     * @return this builder
     * @throws IllegalArgumentException if {@code max} is negative
     */
    public Builder clientJitter(Duration max, long seed) {
      this.clientJitter = Checks.notNegative("clientJitter", max);
      this.clientJitterSeed = seed;
      return this;
    }

    /**
     * Closed-loop clients start within this span of virtual time: each sends its first request after a wait drawn
     * uniformly from {@code [0, spread)} (with the {@link #clientJitter} seed) instead of the client jitter, as
     * clients that connect over a while rather than in one instant (default zero: the first requests wait the
     * client jitter like every later one).
     *
     * @param spread the exclusive upper bound of a client's first wait, in virtual time, zero or more
     * @return this builder
     * @throws IllegalArgumentException if {@code spread} is negative
     */
    public Builder clientStart(Duration spread) {
      this.clientStart = Checks.notNegative("clientStart", spread);
      return this;
    }

    /**
     * Reports every engine's running and waiting requests and KV usage to {@code router.updateLoad} at this
     * interval of virtual time, as a scraper of vLLM's {@code /metrics} would (default
     * {@link #DEFAULT_LOAD_REPORT_INTERVAL}); zero reports nothing.
     *
     * @param interval the period in virtual time, zero or more
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder loadReportInterval(Duration interval) {
      this.loadReportInterval = Checks.notNegative("loadReportInterval", interval);
      return this;
    }

    /**
     * Switches to an open loop: request {@code i} is sent at virtual time {@code arrivalNanos(i)} (non-decreasing),
     * whatever is still running, as when replaying a timed trace; {@link #concurrency} is then ignored.
     *
     * @param arrivalNanos maps a request's index to its send time, in virtual nanoseconds since the start
     * @return this builder
     */
    public Builder openLoop(IntToLongFunction arrivalNanos) {
      this.arrivals = Objects.requireNonNull(arrivalNanos, "arrivalNanos");
      return this;
    }

    /**
     * The configuration of every engine (each engine gets its own hash seed derived from it).
     *
     * @param engine the engines' configuration (default {@link SimEngineConfig#DEFAULT})
     * @return this builder
     */
    public Builder engine(SimEngineConfig engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
      return this;
    }

    /**
     * @param workers the worker count, positive (default 6)
     * @return this builder
     * @throws IllegalArgumentException if {@code workers} is not positive
     */
    public Builder workers(int workers) {
      this.workers = Checks.positive("workers", workers);
      return this;
    }

    /**
     * Closed-loop clients.
     *
     * @param concurrency the closed-loop client count, positive (default 8)
     * @return this builder
     * @throws IllegalArgumentException if {@code concurrency} is not positive
     */
    public Builder concurrency(int concurrency) {
      this.concurrency = Checks.positive("concurrency", concurrency);
      return this;
    }

    /**
     * Requests sent in all.
     *
     * @param requests the request count, positive (default 240)
     * @return this builder
     * @throws IllegalArgumentException if {@code requests} is not positive
     */
    public Builder requests(int requests) {
      this.requests = Checks.positive("requests", requests);
      return this;
    }

    /**
     * The requests, in sending order.
     *
     * @param workload the workload, not null
     * @return this builder
     */
    public Builder workload(Workload workload) {
      this.workload = Objects.requireNonNull(workload, "workload");
      return this;
    }

    /**
     * Builds the router for each run from the simulation's virtual clock, for example
     * {@code ticker -> Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(ticker).build()}. The simulation
     * adds workers {@code sim-0 … sim-(n-1)}.
     *
     * @param routerFactory builds a router on the given virtual-time ticker
     * @return this builder
     */
    public Builder router(Function<Ticker, Router> routerFactory) {
      this.routerFactory = Objects.requireNonNull(routerFactory, "routerFactory");
      return this;
    }

    /**
     * Virtual time between an engine step's end and the router applying its KV events.
     *
     * @param eventDelay the delay, zero or more (default {@link Simulation#DEFAULT_EVENT_DELAY})
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder eventDelay(Duration eventDelay) {
      this.eventDelay = Checks.notNegative("eventDelay", eventDelay);
      return this;
    }

    /**
     * @return a new simulation; {@link Simulation#run()} may be called more than once
     * @throws IllegalStateException if the workload or router is missing
     */
    public Simulation build() {
      if (workload == null) {
        throw new IllegalStateException("workload is required");
      }
      if (routerFactory == null) {
        throw new IllegalStateException("router is required");
      }
      for (int w : workerEngines.keySet()) {
        if (w >= workers) {
          throw new IllegalStateException("workerEngine " + w + " is not below workers " + workers);
        }
      }
      for (long[] o : slowdowns) {
        if (o[0] >= workers) {
          throw new IllegalStateException("slowdown of worker " + o[0] + " is not below workers " + workers);
        }
      }
      for (long[] o : outages) {
        if (o[0] >= workers) {
          throw new IllegalStateException("outage of worker " + o[0] + " is not below workers " + workers);
        }
      }
      return new Simulation(this);
    }
  }
}
