package io.kvroute.micrometer;

import io.kvroute.HealthState;
import io.kvroute.KvEvent;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.RouterListener;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Publishes a {@link Router}'s figures to Micrometer; thread-safe: it is a {@link RouterListener} the router calls
 * from any thread.
 *
 * <pre>{@code
 * RouterMetrics metrics = new RouterMetrics();
 * Router router = Router.newBuilder().listener(metrics).build();
 * metrics.monitor(router);          // gauges of the index and of booked load
 * metrics.bindTo(prometheusRegistry);
 * }</pre>
 *
 * <p>Meters (tags {@code worker} and {@code rank} name the chosen worker; {@code policy} the router's policy):
 * <ul>
 *   <li>{@value #DECISIONS} (counter; policy, worker, rank): requests routed.
 *   <li>{@value #UNROUTABLE} (counter): requests that found no eligible worker.
 *   <li>{@value #PREDICTED_CACHED_TOKENS} and {@value #PROMPT_TOKENS} (distribution summaries in tokens; policy,
 *       worker, rank): the prompt tokens the chosen worker should find cached, and the prompt length; the ratio of
 *       their totals is the predicted cache hit rate.
 *   <li>{@value #TIME_TO_FIRST_TOKEN} and {@value #DURATION} (timers; policy, worker, rank): from selection to
 *       {@link Routing#firstToken()} and to {@link Routing#close()}, by the router's ticker.
 *   <li>{@value #BOOKINGS_EXPIRED} (counter): bookings released because their request was never closed.
 *   <li>{@value #INDEX_EVICTIONS} (counter, entries), {@value #INDEX_ORPHAN_BLOCKS},
 *       {@value #INDEX_MISMATCHED_BLOCKS} and {@value #INDEX_UNKNOWN_REMOVALS} (counters, blocks; worker, rank),
 *       {@value #INDEX_INVALID_EVENTS} (counter; worker, rank), {@value #INDEX_UNKNOWN_WORKER_EVENTS} (counter).
 *   <li>{@value #WORKER_HEALTH_CHANGES} (counter; worker, rank, state): health changes, by the state entered
 *       ({@code healthy}, {@code suspect}, {@code ejected}, {@code draining}).
 *   <li>With {@link #monitor}: {@value #WORKERS} (gauge), {@value #ACTIVE_REQUESTS} (gauge; worker, rank),
 *       {@value #WORKER_HEALTH} (gauge; worker, rank, state: 1 for the current state, 0 for the others),
 *       {@value #INDEX_ENTRIES}, {@value #INDEX_CAPACITY}, {@value #INDEX_MAX_ENTRIES} and {@value #INDEX_MEMORY}
 *       (gauges, the last in bytes), {@value #INDEX_WORKER_ENTRIES} (gauge; worker, rank).
 * </ul>
 *
 * <p>A worker's meters are removed with it ({@link RouterListener#onWorkerRemoved}), so that workers that come and go
 * leave nothing behind; a worker added again under the same id starts from zero.
 */
public final class RouterMetrics extends BoundMeters implements RouterListener {
  /** Requests routed, by policy and worker. */
  public static final String DECISIONS = "kvroute.routing.decisions";
  /** Requests that found no eligible worker. */
  public static final String UNROUTABLE = "kvroute.routing.unroutable";
  /** Prompt tokens the chosen worker should find cached. */
  public static final String PREDICTED_CACHED_TOKENS = "kvroute.routing.predicted.cached.tokens";
  /** Prompt tokens of routed requests. */
  public static final String PROMPT_TOKENS = "kvroute.routing.prompt.tokens";
  /** Selection to first output token. */
  public static final String TIME_TO_FIRST_TOKEN = "kvroute.request.time.to.first.token";
  /** Selection to close. */
  public static final String DURATION = "kvroute.request.duration";
  /** Bookings released because never closed. */
  public static final String BOOKINGS_EXPIRED = "kvroute.bookings.expired";
  /** Registered workers. */
  public static final String WORKERS = "kvroute.workers";
  /** Requests the router has booked on a worker and not yet seen closed. */
  public static final String ACTIVE_REQUESTS = "kvroute.requests.active";
  /** Entries the index holds. */
  public static final String INDEX_ENTRIES = "kvroute.index.entries";
  /** Entries the index holds for one worker. */
  public static final String INDEX_WORKER_ENTRIES = "kvroute.index.worker.entries";
  /** Entries the index's tables hold before they grow. */
  public static final String INDEX_CAPACITY = "kvroute.index.capacity";
  /** The index's entry budget. */
  public static final String INDEX_MAX_ENTRIES = "kvroute.index.max.entries";
  /** Heap held by the index's tables. */
  public static final String INDEX_MEMORY = "kvroute.index.memory";
  /** Entries dropped to keep the index within its budget. */
  public static final String INDEX_EVICTIONS = "kvroute.index.evictions";
  /** Stored blocks whose parent was unknown (kept, never matched). */
  public static final String INDEX_ORPHAN_BLOCKS = "kvroute.index.orphan.blocks";
  /** Stored blocks dropped for a block size other than the router's. */
  public static final String INDEX_MISMATCHED_BLOCKS = "kvroute.index.mismatched.blocks";
  /** Removed blocks the index did not hold. */
  public static final String INDEX_UNKNOWN_REMOVALS = "kvroute.index.unknown.removals";
  /** Events dropped as malformed. */
  public static final String INDEX_INVALID_EVENTS = "kvroute.index.invalid.events";
  /** Events of workers the router does not know. */
  public static final String INDEX_UNKNOWN_WORKER_EVENTS = "kvroute.index.unknown.worker.events";
  /** 1 for a worker's current health state, 0 for the others. */
  public static final String WORKER_HEALTH = "kvroute.worker.health";
  /** Changes of a worker's health, by the state entered. */
  public static final String WORKER_HEALTH_CHANGES = "kvroute.worker.health.changes";

  private final Map<String, Map<WorkerId, RouteMeters>> byPolicy = new ConcurrentHashMap<>();
  private final Map<WorkerId, Counters> byWorker = new ConcurrentHashMap<>();
  private final Map<WorkerId, Map<HealthState, Counter>> healthChanges = new ConcurrentHashMap<>();
  private final Map<WorkerId, List<Meter>> workerGauges = new ConcurrentHashMap<>();
  private final Counter unroutable;
  private final Counter bookingsExpired;
  private final Counter evictions;
  private final Counter unknownWorkerEvents;
  private volatile @Nullable Router router;

  /** Meters with no common tags. */
  public RouterMetrics() {
    this(Tags.empty());
  }

  /**
   * Meters with common tags, for example the router's name when a process runs several.
   *
   * @param tags added to every meter
   */
  public RouterMetrics(Iterable<Tag> tags) {
    super(tags);
    unroutable = Counter.builder(UNROUTABLE).tags(this.tags).description("Requests that found no eligible worker")
        .register(meters);
    bookingsExpired = Counter.builder(BOOKINGS_EXPIRED).tags(this.tags)
        .description("Bookings released because their request was never closed").register(meters);
    evictions = Counter.builder(INDEX_EVICTIONS).tags(this.tags).baseUnit("entries")
        .description("Index entries dropped to keep within the budget").register(meters);
    unknownWorkerEvents = Counter.builder(INDEX_UNKNOWN_WORKER_EVENTS).tags(this.tags)
        .description("KV events of workers the router does not know, dropped").register(meters);
  }

  /**
   * Adds gauges that read {@code router}'s index and booked load when a registry is scraped: {@value #WORKERS},
   * {@value #INDEX_ENTRIES}, {@value #INDEX_CAPACITY}, {@value #INDEX_MAX_ENTRIES}, {@value #INDEX_MEMORY}, and per
   * worker {@value #ACTIVE_REQUESTS} and {@value #INDEX_WORKER_ENTRIES} (added and removed with the workers). Call
   * once, with the router this binder listens to.
   *
   * @param router the router to read
   * @return this binder
   * @throws IllegalStateException if a router is already monitored
   */
  public RouterMetrics monitor(Router router) {
    Objects.requireNonNull(router, "router");
    synchronized (this) {
      if (this.router != null) {
        throw new IllegalStateException("already monitoring " + this.router);
      }
      this.router = router;
    }
    Gauge.builder(WORKERS, router, r -> r.workers().size()).tags(tags).description("Registered workers")
        .register(meters);
    Gauge.builder(INDEX_ENTRIES, router, r -> r.indexer().stats().entries()).tags(tags).baseUnit("entries")
        .description("Entries the KV index holds").register(meters);
    Gauge.builder(INDEX_CAPACITY, router, r -> r.indexer().stats().capacity()).tags(tags).baseUnit("entries")
        .description("Entries the KV index's tables hold before they grow").register(meters);
    Gauge.builder(INDEX_MAX_ENTRIES, router, r -> r.indexer().stats().maxEntries()).tags(tags).baseUnit("entries")
        .description("The KV index's entry budget").register(meters);
    Gauge.builder(INDEX_MEMORY, router, r -> r.indexer().stats().estimatedBytes()).tags(tags).baseUnit("bytes")
        .description("Heap held by the KV index's tables").register(meters);
    for (Worker worker : router.workers().snapshot()) {
      addWorkerGauges(router, worker.id());
    }
    return this;
  }

  private void addWorkerGauges(Router router, WorkerId id) {
    workerGauges.computeIfAbsent(id, w -> {
      Tags t = workerTags(w);
      List<Meter> gauges = new ArrayList<>();
      gauges.add(Gauge.builder(ACTIVE_REQUESTS, router, r -> r.activeRequests(w)).tags(t)
          .description("Requests booked on the worker and not yet closed").register(meters));
      gauges.add(Gauge.builder(INDEX_WORKER_ENTRIES, router, r -> r.indexer().entriesOf(w)).tags(t)
          .baseUnit("entries").description("Entries the KV index holds for the worker").register(meters));
      for (HealthState state : HealthState.values()) {
        gauges.add(Gauge.builder(WORKER_HEALTH, router, r -> r.health(w) == state ? 1 : 0)
            .tags(t.and("state", state.name().toLowerCase(Locale.ROOT)))
            .description("1 for the worker's current health state, 0 for the others").register(meters));
      }
      return List.copyOf(gauges);
    });
  }

  private RouteMeters routeMeters(Routing routing) {
    Map<WorkerId, RouteMeters> workers = byPolicy.computeIfAbsent(routing.policy(), p -> new ConcurrentHashMap<>());
    RouteMeters m = workers.get(routing.workerId());
    if (m != null) {
      return m;
    }
    m = workers.computeIfAbsent(routing.workerId(), w -> new RouteMeters(routing.policy(), w));
    removeIfDeparted(routing.workerId());
    return m;
  }

  private Counters counters(WorkerId worker) {
    Counters c = byWorker.get(worker);
    if (c != null) {
      return c;
    }
    c = byWorker.computeIfAbsent(worker, Counters::new);
    removeIfDeparted(worker);
    return c;
  }

  /**
   * Removes the meters just made for a worker the monitored router no longer has. A callback for a worker can run
   * after {@link #onWorkerRemoved} (a selection that chose it as it was being removed), and the meters it creates
   * would then stay forever. The registry removes a worker before it tells the listeners, so a creation either sees
   * the worker gone here or happens before {@link #onWorkerRemoved}, which removes it: either way nothing is left.
   * Without {@link #monitor} there is no registry to ask and such a late callback leaves one set of meters.
   */
  private void removeIfDeparted(WorkerId worker) {
    Router r = router;
    if (r != null && r.workers().find(worker).isEmpty()) {
      removeMeters(worker);
    }
  }

  @Override
  public void onRouted(Routing routing) {
    RouteMeters m = routeMeters(routing);
    m.decisions.increment();
    m.predictedCachedTokens.record(routing.predictedCachedTokens());
    m.promptTokens.record(routing.promptTokens());
  }

  /** The meters {@link #onRouted} made for the handle's pair, or null once its worker was removed. */
  private @Nullable RouteMeters existingRouteMeters(Routing routing) {
    Map<WorkerId, RouteMeters> workers = byPolicy.get(routing.policy());
    return workers == null ? null : workers.get(routing.workerId());
  }

  @Override
  public void onFirstToken(Routing routing, long elapsedNanos) {
    RouteMeters m = existingRouteMeters(routing); // a request still open when its worker left creates no meters
    if (m != null) {
      m.timeToFirstToken.record(Math.max(0, elapsedNanos), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void onClosed(Routing routing, long elapsedNanos) {
    RouteMeters m = existingRouteMeters(routing);
    if (m != null) {
      m.duration.record(Math.max(0, elapsedNanos), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void onNoWorker(RouteRequest request) {
    unroutable.increment();
  }

  @Override
  public void onWorkerAdded(Worker worker) {
    Router r = router;
    if (r != null) {
      addWorkerGauges(r, worker.id());
    }
  }

  @Override
  public void onWorkerRemoved(Worker worker) {
    // Every meter tagged with the worker leaves with it: with workers that come and go (pods, autoscaling) they
    // would otherwise pile up without bound, two histogram timers and all, in memory and in every scrape.
    removeMeters(worker.id());
  }

  private void removeMeters(WorkerId id) {
    List<Meter> gauges = workerGauges.remove(id);
    if (gauges != null) {
      gauges.forEach(meters::remove);
    }
    for (Map<WorkerId, RouteMeters> workers : byPolicy.values()) {
      RouteMeters m = workers.remove(id);
      if (m != null) {
        List.of(m.decisions, m.predictedCachedTokens, m.promptTokens, m.timeToFirstToken, m.duration)
            .forEach(meters::remove);
      }
    }
    Counters c = byWorker.remove(id);
    if (c != null) {
      List.of(c.orphanBlocks, c.mismatchedBlocks, c.unknownRemovals, c.invalidEvents).forEach(meters::remove);
    }
    Map<HealthState, Counter> changes = healthChanges.remove(id);
    if (changes != null) {
      changes.values().forEach(meters::remove);
    }
  }

  @Override
  public void onOrphanBlocks(WorkerId worker, int blocks) {
    counters(worker).orphanBlocks.increment(blocks);
  }

  @Override
  public void onBlockSizeMismatch(WorkerId worker, int expected, int actual, int blocks) {
    counters(worker).mismatchedBlocks.increment(blocks);
  }

  @Override
  public void onInvalidEvent(WorkerId worker, KvEvent event, String reason) {
    counters(worker).invalidEvents.increment();
  }

  @Override
  public void onUnknownRemoval(WorkerId worker, int blocks) {
    counters(worker).unknownRemovals.increment(blocks);
  }

  @Override
  public void onEventForUnknownWorker(WorkerId worker, KvEvent event) {
    unknownWorkerEvents.increment(); // untagged: a stray publisher must not create meters
  }

  @Override
  public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
    Map<HealthState, Counter> changes = healthChanges.get(worker);
    Router r = router;
    if (changes == null && r != null && r.workers().find(worker).isEmpty()) {
      return; // the first token of a request still open when its worker left: no meters for a departed worker
    }
    changes = changes != null ? changes : healthChanges.computeIfAbsent(worker, w -> {
      Map<HealthState, Counter> m = new EnumMap<>(HealthState.class);
      for (HealthState state : HealthState.values()) {
        m.put(state, Counter.builder(WORKER_HEALTH_CHANGES).tags(workerTags(w)
                .and("state", state.name().toLowerCase(Locale.ROOT)))
            .description("Changes of the worker's health, by the state entered").register(meters));
      }
      return m;
    });
    removeIfDeparted(worker);
    changes.get(to).increment();
  }

  @Override
  public void onIndexEviction(int entries) {
    evictions.increment(entries);
  }

  @Override
  public void onBookingsExpired(int count) {
    bookingsExpired.increment(count);
  }

  @Override
  public String toString() {
    return "RouterMetrics{" + tags + (router == null ? "" : ", " + router) + "}";
  }

  /** Meters of one (policy, worker) pair. */
  private final class RouteMeters {
    final Counter decisions;
    final DistributionSummary predictedCachedTokens;
    final DistributionSummary promptTokens;
    final Timer timeToFirstToken;
    final Timer duration;

    RouteMeters(String policy, WorkerId worker) {
      Tags t = workerTags(worker).and("policy", policy);
      decisions = Counter.builder(DECISIONS).tags(t).description("Requests routed").register(meters);
      predictedCachedTokens = DistributionSummary.builder(PREDICTED_CACHED_TOKENS).tags(t).baseUnit("tokens")
          .description("Prompt tokens the chosen worker should find cached").register(meters);
      promptTokens = DistributionSummary.builder(PROMPT_TOKENS).tags(t).baseUnit("tokens")
          .description("Prompt tokens of routed requests").register(meters);
      timeToFirstToken = Timer.builder(TIME_TO_FIRST_TOKEN).tags(t).publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(10))
          .description("From selection to the first output token").register(meters);
      duration = Timer.builder(DURATION).tags(t).publishPercentileHistogram()
          .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(30))
          .description("From selection to the request's close").register(meters);
    }
  }

  /** Index counters of one worker. */
  private final class Counters {
    final Counter orphanBlocks;
    final Counter mismatchedBlocks;
    final Counter unknownRemovals;
    final Counter invalidEvents;

    Counters(WorkerId worker) {
      Tags t = workerTags(worker);
      orphanBlocks = Counter.builder(INDEX_ORPHAN_BLOCKS).tags(t).baseUnit("blocks")
          .description("Stored blocks whose parent was unknown").register(meters);
      mismatchedBlocks = Counter.builder(INDEX_MISMATCHED_BLOCKS).tags(t).baseUnit("blocks")
          .description("Stored blocks dropped for another block size").register(meters);
      unknownRemovals = Counter.builder(INDEX_UNKNOWN_REMOVALS).tags(t).baseUnit("blocks")
          .description("Removed blocks the index did not hold").register(meters);
      invalidEvents = Counter.builder(INDEX_INVALID_EVENTS).tags(t)
          .description("KV events dropped as malformed").register(meters);
    }
  }
}
