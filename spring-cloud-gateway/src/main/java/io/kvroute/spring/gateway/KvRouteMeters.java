package io.kvroute.spring.gateway;

import io.kvroute.RouterListener;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.WorkerRegistry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's own meters, next to the router, event and scrape meters of {@code kvroute-micrometer}; thread-safe.
 *
 * <ul>
 *   <li>{@value #ROUTING_DURATION} (timer): from a request's arrival at the filter to its chosen worker (reading the
 *       body, tokenizing, selecting), the latency kvroute adds before the upstream call;
 *   <li>{@value #FAILOVERS} (counter; worker): requests moved to another worker after a refused connection;
 *   <li>{@value #REJECTIONS} (counter; status, code): requests the filter answered with an error itself.
 * </ul>
 *
 * <p>A worker's failover counter is removed with the worker (it follows the router's registry), so that workers that
 * come and go leave no meters behind; a failover reported after its worker left is not counted.
 */
final class KvRouteMeters implements GatewayObserver {
  static final String ROUTING_DURATION = "kvroute.gateway.routing.duration";
  static final String FAILOVERS = "kvroute.gateway.failovers";
  static final String REJECTIONS = "kvroute.gateway.rejections";

  private final MeterRegistry registry;
  private final WorkerRegistry workers;
  private final Timer routingDuration;
  private final Map<WorkerId, Counter> failovers = new ConcurrentHashMap<>();
  private final Map<String, Counter> rejections = new ConcurrentHashMap<>();

  KvRouteMeters(MeterRegistry registry, WorkerRegistry workers) {
    this.registry = registry;
    this.workers = workers;
    workers.addListener(new RouterListener() {
      @Override
      public void onWorkerRemoved(Worker worker) {
        Counter c = failovers.remove(worker.id());
        if (c != null) {
          registry.remove(c);
        }
      }
    });
    this.routingDuration = Timer.builder(ROUTING_DURATION)
        .description("From a request's arrival to its chosen worker: body, tokenization and selection")
        .register(registry);
  }

  @Override
  public void onRouted(Routing routing, long routingNanos) {
    routingDuration.record(routingNanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onFailover(WorkerId failed) {
    if (!failovers.containsKey(failed) && workers.find(failed).isEmpty()) {
      return; // its worker already left: no meter for a departed worker
    }
    failovers.computeIfAbsent(failed, w -> Counter.builder(FAILOVERS).tag("worker", w.name())
        .tag("rank", Integer.toString(w.dataParallelRank()))
        .description("Requests moved to another worker after a refused connection").register(registry)).increment();
  }

  @Override
  public void onRejected(int status, String code) {
    rejections.computeIfAbsent(status + " " + code, k -> Counter.builder(REJECTIONS)
        .tag("status", Integer.toString(status)).tag("code", code)
        .description("Requests the filter answered with an error").register(registry)).increment();
  }
}
