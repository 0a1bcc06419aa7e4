package io.kvroute.spring.gateway;

import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceStats;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * kvroute's meters in a Micrometer registry, fed by the filter and read from the router, the event subscriber and
 * the scraper; thread-safe.
 *
 * <p>Meters (Micrometer names; Prometheus renders {@code kvroute.routing.decisions} as
 * {@code kvroute_routing_decisions_total}):
 *
 * <ul>
 *   <li>{@code kvroute.routing.decisions} (counter; worker, policy) and {@code kvroute.routing.predicted.cached.tokens}
 *       (summary, tokens; worker): every selection;
 *   <li>{@code kvroute.routing.duration} (timer): from the request's arrival to the chosen worker (body, tokenizing,
 *       selection);
 *   <li>{@code kvroute.request.ttft} (timer; worker) and {@code kvroute.request.duration} (timer; worker, outcome
 *       {@code complete}, {@code error} or {@code cancel}), measured at the gateway;
 *   <li>{@code kvroute.failovers} (counter; worker) and {@code kvroute.rejections} (counter; status, code);
 *   <li>{@code kvroute.requests.active} and {@code kvroute.index.blocks} (gauges; worker): the router's bookings and
 *       index entries;
 *   <li>{@code kvroute.events.batches}, {@code kvroute.events.gaps}, {@code kvroute.events.purges}
 *       (function counters; worker) from the event subscriber, and {@code kvroute.scrape.failures} from the scraper.
 * </ul>
 *
 * <p>Per-worker gauges are bound for the workers registered when the meters are created (the configured ones).
 */
final class KvRouteMeters implements GatewayObserver {
  private final MeterRegistry registry;
  private final Timer routingDuration;
  private final Map<WorkerId, PerWorker> workers = new ConcurrentHashMap<>();
  private final Map<String, Counter> rejections = new ConcurrentHashMap<>();

  KvRouteMeters(MeterRegistry registry, Router router, @Nullable KvEventSubscriber subscriber,
      @Nullable EngineMetricsScraper scraper) {
    this.registry = registry;
    this.routingDuration = Timer.builder("kvroute.routing.duration")
        .description("From a request's arrival to its chosen worker: body, tokenization and selection")
        .register(registry);
    for (Worker w : router.workers().snapshot()) {
      WorkerId id = w.id();
      Tags tags = Tags.of("worker", id.toString());
      Gauge.builder("kvroute.requests.active", router, r -> r.activeRequests(id)).tags(tags)
          .description("Requests the router has booked on the worker and not yet released").register(registry);
      Gauge.builder("kvroute.index.blocks", router, r -> r.indexer().entriesOf(id)).tags(tags).baseUnit("blocks")
          .description("Blocks the KV index holds for the worker").register(registry);
      if (subscriber != null && subscriber.workers().contains(id.name())) {
        String name = id.name();
        eventCounter("kvroute.events.batches", "KV event batches applied", subscriber, name, tags,
            EventSourceStats::batches);
        eventCounter("kvroute.events.gaps", "KV event sequence gaps detected", subscriber, name, tags,
            EventSourceStats::gaps);
        eventCounter("kvroute.events.purges", "Times the worker's index entries were purged", subscriber, name, tags,
            EventSourceStats::purges);
      }
    }
    if (scraper != null) {
      FunctionCounter.builder("kvroute.scrape.failures", scraper, EngineMetricsScraper::failureCount)
          .description("Failed scrapes of the engines' /metrics").register(registry);
    }
  }

  private void eventCounter(String name, String description, KvEventSubscriber subscriber, String worker, Tags tags,
      ToDoubleFunction<EventSourceStats> value) {
    FunctionCounter.builder(name, subscriber, s -> s.stats(worker).map(value::applyAsDouble).orElse(0.0))
        .tags(tags).description(description).register(registry);
  }

  private PerWorker of(Routing routing) {
    return workers.computeIfAbsent(routing.workerId(), id -> new PerWorker(registry, id));
  }

  @Override
  public void onRouted(Routing routing, long routingNanos) {
    routingDuration.record(routingNanos, TimeUnit.NANOSECONDS);
    PerWorker w = of(routing);
    w.decisions.computeIfAbsent(routing.policy(), policy -> Counter.builder("kvroute.routing.decisions")
        .tags(w.tags.and("policy", policy)).description("Requests routed, by chosen worker and policy")
        .register(registry)).increment();
    w.predictedCachedTokens.record(routing.predictedCachedTokens());
  }

  @Override
  public void onFirstToken(Routing routing, long nanos) {
    of(routing).ttft.record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onFinished(Routing routing, String outcome, long nanos) {
    PerWorker w = of(routing);
    w.durations.computeIfAbsent(outcome, o -> Timer.builder("kvroute.request.duration")
        .tags(w.tags.and("outcome", o)).description("Routed requests from arrival to the end of the response")
        .register(registry)).record(nanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onFailover(WorkerId failed) {
    Counter.builder("kvroute.failovers").tag("worker", failed.toString())
        .description("Requests moved to another worker after a refused connection").register(registry).increment();
  }

  @Override
  public void onRejected(int status, String code) {
    rejections.computeIfAbsent(status + " " + code, k -> Counter.builder("kvroute.rejections")
        .tag("status", Integer.toString(status)).tag("code", code)
        .description("Requests the filter answered with an error").register(registry)).increment();
  }

  /** The meters of one worker, created on its first request. */
  private static final class PerWorker {
    final Tags tags;
    final Map<String, Counter> decisions = new ConcurrentHashMap<>();
    final Map<String, Timer> durations = new ConcurrentHashMap<>();
    final DistributionSummary predictedCachedTokens;
    final Timer ttft;

    PerWorker(MeterRegistry registry, WorkerId id) {
      this.tags = Tags.of("worker", id.toString());
      this.predictedCachedTokens = DistributionSummary.builder("kvroute.routing.predicted.cached.tokens")
          .tags(tags).baseUnit("tokens").description("Prompt tokens the router predicted the worker has cached")
          .register(registry);
      this.ttft = Timer.builder("kvroute.request.ttft").tags(tags)
          .description("Time to the first output token, measured at the gateway").register(registry);
    }
  }
}
