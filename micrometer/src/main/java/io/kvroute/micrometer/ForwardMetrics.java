package io.kvroute.micrometer;

import io.kvroute.RouterListener;
import io.kvroute.RoutingException;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.WorkerRegistry;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.HttpServerRelay;
import io.kvroute.transport.okhttp.ResponseRelay;
import io.kvroute.transport.okhttp.RoutingForwarder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Publishes what a gateway's forwarded requests came to: each relayed response by worker, upstream status class and
 * relay outcome, and each request that could not be forwarded by cause; thread-safe. A {@link RoutingForwarder}
 * has no listener of its own (its first token and close already feed {@link RouterMetrics}' timers), so the
 * gateway tells this binder after each {@link HttpServerRelay#relay} or {@link ResponseRelay#relay}:
 *
 * <pre>{@code
 * ForwardedResponse upstream = forwarder.forward(request);
 * forwardMetrics.relayed(upstream, HttpServerRelay.relay(upstream, exchange));
 * }</pre>
 *
 * <p>Meters: {@value #RESPONSES} (counter; worker, rank, status: {@code 2xx}…{@code 5xx}, outcome:
 * {@code completed}, {@code upstream_failed}, {@code client_disconnected}), {@value #RESPONSE_BYTES} (summary in
 * bytes; worker, rank) and {@value #FAILURES} (counter; cause: the {@link RoutingException}'s reason in lowercase,
 * or the exception's simple class name).
 *
 * <p>Given the router's registry ({@link #follow}), a worker's meters are removed with it, so that workers that come
 * and go (pods, autoscaling) leave nothing behind; without it they stay for the binder's life.
 */
public final class ForwardMetrics extends BoundMeters {
  /** Relayed responses, by worker, status class and outcome. */
  public static final String RESPONSES = "kvroute.forward.responses";
  /** Body bytes relayed per response. */
  public static final String RESPONSE_BYTES = "kvroute.forward.response.bytes";
  /** Requests that could not be forwarded, by cause. */
  public static final String FAILURES = "kvroute.forward.failures";

  private final Map<WorkerId, Map<String, Counter>> responses = new ConcurrentHashMap<>();
  private final Map<WorkerId, DistributionSummary> sizes = new ConcurrentHashMap<>();
  private final Map<String, Counter> failures = new ConcurrentHashMap<>();
  private volatile @Nullable WorkerRegistry workers;

  /** Meters with no common tags. */
  public ForwardMetrics() {
    this(Tags.empty());
  }

  /**
   * Meters with common tags.
   *
   * @param tags added to every meter
   */
  public ForwardMetrics(Iterable<Tag> tags) {
    super(tags);
  }

  /**
   * Follows the router's workers: a removed worker's meters are removed with it, and a response relayed after its
   * worker left (a request still open then) is not recorded. Call once.
   *
   * @param workers the registry of the router the gateway forwards for ({@code router.workers()})
   * @return this binder
   * @throws IllegalStateException if a registry is already followed
   */
  public ForwardMetrics follow(WorkerRegistry workers) {
    Objects.requireNonNull(workers, "workers");
    synchronized (this) {
      if (this.workers != null) {
        throw new IllegalStateException("already following " + this.workers);
      }
      this.workers = workers;
    }
    workers.addListener(new RouterListener() {
      @Override
      public void onWorkerRemoved(Worker worker) {
        removeMeters(worker.id());
      }
    });
    return this;
  }

  private void removeMeters(WorkerId id) {
    Map<String, Counter> counters = responses.remove(id);
    if (counters != null) {
      counters.values().forEach(meters::remove);
    }
    Meter size = sizes.remove(id);
    if (size != null) {
      meters.remove(size);
    }
  }

  /**
   * Records a relayed response.
   *
   * @param upstream the forwarded response
   * @param result how its relay ended
   */
  public void relayed(ForwardedResponse upstream, ResponseRelay.Result result) {
    Objects.requireNonNull(upstream, "upstream");
    Objects.requireNonNull(result, "result");
    String status = (upstream.code() / 100) + "xx";
    String outcome = result.outcome().name().toLowerCase(Locale.ROOT);
    WorkerId worker = upstream.workerId();
    WorkerRegistry w = workers;
    if (w != null && !responses.containsKey(worker) && w.find(worker).isEmpty()) {
      return; // relayed after its worker left: no meters for a departed worker
    }
    responses.computeIfAbsent(worker, k -> new ConcurrentHashMap<>())
        .computeIfAbsent(status + '|' + outcome, k -> Counter.builder(RESPONSES)
            .tags(workerTags(worker).and("status", status, "outcome", outcome))
            .description("Forwarded responses relayed to the client").register(meters)).increment();
    sizes.computeIfAbsent(worker, k -> DistributionSummary.builder(RESPONSE_BYTES)
        .tags(workerTags(worker)).baseUnit("bytes").description("Body bytes relayed per response")
        .register(meters)).record(result.bytes());
  }

  /**
   * Records a request that could not be forwarded (no worker, an invalid request, every worker unreachable).
   *
   * @param failure what {@link RoutingForwarder#forward} threw
   */
  public void failed(Throwable failure) {
    Objects.requireNonNull(failure, "failure");
    String cause = failure instanceof RoutingException e ? e.reason().name().toLowerCase(Locale.ROOT)
        : failure.getClass().getSimpleName();
    failures.computeIfAbsent(cause, k -> Counter.builder(FAILURES).tags(tags.and("cause", cause))
        .description("Requests that could not be forwarded").register(meters)).increment();
  }

  @Override
  public String toString() {
    return "ForwardMetrics{" + tags + "}";
  }
}
