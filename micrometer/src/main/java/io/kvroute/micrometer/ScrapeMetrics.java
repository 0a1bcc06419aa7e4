package io.kvroute.micrometer;

import io.kvroute.WorkerId;
import io.kvroute.transport.okhttp.EngineMetrics;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.kvroute.transport.okhttp.ScrapeFailure;
import io.kvroute.transport.okhttp.ScrapeListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the outcome of an {@link EngineMetricsScraper}'s scrapes and the load they reported to Micrometer;
 * thread-safe: it is a {@link ScrapeListener} the scraper calls from OkHttp's threads.
 *
 * <pre>{@code
 * ScrapeMetrics scrapes = new ScrapeMetrics();
 * EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).listener(scrapes).build();
 * scrapes.bindTo(registry);
 * }</pre>
 *
 * <p>Meters, all tagged {@code worker} and {@code rank}: {@value #SCRAPES} (counter, tagged {@code outcome}:
 * success, connection, timeout, http_status, too_large, malformed), {@value #MALFORMED_LINES} (counter), and from
 * the last successful scrape {@value #RUNNING}, {@value #WAITING} (gauges, requests) and {@value #KV_CACHE_USAGE}
 * (gauge, the fraction 0..1 of KV cache blocks in use); gauges are NaN before the first success.
 *
 * <p>A worker's meters go when the scraper finds it no longer registered ({@link ScrapeListener#onWorkerGone}), so
 * that a departed worker does not show its last load forever.
 */
public final class ScrapeMetrics extends BoundMeters implements ScrapeListener {
  /** Scrapes, by outcome. */
  public static final String SCRAPES = "kvroute.scrapes";
  /** Lines of scraped responses that could not be read. */
  public static final String MALFORMED_LINES = "kvroute.scrape.malformed.lines";
  /** Requests the engine reported running. */
  public static final String RUNNING = "kvroute.engine.requests.running";
  /** Requests the engine reported waiting. */
  public static final String WAITING = "kvroute.engine.requests.waiting";
  /** The fraction of KV cache blocks the engine reported in use. */
  public static final String KV_CACHE_USAGE = "kvroute.engine.kv.cache.usage";

  private final Map<WorkerId, Target> targets = new ConcurrentHashMap<>();

  /** Meters with no common tags. */
  public ScrapeMetrics() {
    this(Tags.empty());
  }

  /**
   * Meters with common tags.
   *
   * @param tags added to every meter
   */
  public ScrapeMetrics(Iterable<Tag> tags) {
    super(tags);
  }

  private Target target(WorkerId worker) {
    Target t = targets.get(worker);
    return t != null ? t : targets.computeIfAbsent(worker, Target::new);
  }

  @Override
  public void onScraped(EngineMetrics metrics, int malformedLines) {
    Target t = target(metrics.worker());
    t.last.set(metrics);
    t.successes.increment();
    if (malformedLines > 0) {
      t.malformedLines.increment(malformedLines);
    }
  }

  @Override
  public void onScrapeFailed(WorkerId worker, ScrapeFailure failure, String detail, @Nullable Throwable cause) {
    target(worker).failures.get(failure).increment();
  }

  @Override
  public void onWorkerGone(WorkerId worker) {
    Target t = targets.remove(worker);
    if (t != null) {
      t.owned.forEach(meters::remove);
    }
  }

  @Override
  public String toString() {
    return "ScrapeMetrics{" + tags + ", workers=" + targets.keySet() + "}";
  }

  /** The meters of one scraped worker. */
  private final class Target {
    final AtomicReference<@Nullable EngineMetrics> last = new AtomicReference<>();
    final Counter successes;
    final Counter malformedLines;
    final Map<ScrapeFailure, Counter> failures = new EnumMap<>(ScrapeFailure.class);
    final List<Meter> owned = new ArrayList<>();

    Target(WorkerId worker) {
      Tags t = workerTags(worker);
      successes = Counter.builder(SCRAPES).tags(t.and("outcome", "success")).description("Engine metrics scrapes")
          .register(meters);
      for (ScrapeFailure f : ScrapeFailure.values()) {
        failures.put(f, Counter.builder(SCRAPES).tags(t.and("outcome", f.name().toLowerCase(Locale.ROOT)))
            .description("Engine metrics scrapes").register(meters));
      }
      malformedLines = Counter.builder(MALFORMED_LINES).tags(t).baseUnit("lines")
          .description("Lines of scraped responses that could not be read").register(meters);
      owned.add(Gauge.builder(RUNNING, last, r -> value(r.get(), 0)).tags(t).baseUnit("requests")
          .description("Requests the engine reported running").register(meters));
      owned.add(Gauge.builder(WAITING, last, r -> value(r.get(), 1)).tags(t).baseUnit("requests")
          .description("Requests the engine reported waiting").register(meters));
      owned.add(Gauge.builder(KV_CACHE_USAGE, last, r -> value(r.get(), 2)).tags(t)
          .description("Fraction of KV cache blocks the engine reported in use").register(meters));
      owned.add(successes);
      owned.add(malformedLines);
      owned.addAll(failures.values());
    }
  }

  private static double value(@Nullable EngineMetrics m, int which) {
    if (m == null) {
      return Double.NaN;
    }
    return switch (which) {
      case 0 -> m.running();
      case 1 -> m.waiting();
      default -> m.kvCacheUsage();
    };
  }
}
