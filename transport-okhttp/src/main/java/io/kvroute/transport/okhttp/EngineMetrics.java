package io.kvroute.transport.okhttp;

import io.kvroute.EngineLoad;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.util.Objects;

/**
 * What one scrape of a worker's {@code /metrics} reported; an immutable value, thread-safe.
 *
 * <p>Counts are summed over every label set of a metric (for example one per model or engine); the KV cache usage is
 * the mean over label sets. The prefix cache counters are cumulative token counts since the engine started, or -1 when
 * the engine does not export them; {@link #hitRateSince} turns two snapshots into the hit rate observed between them.
 *
 * <p>A value class with a factory, as Caffeine's {@code CacheStats}: {@link EngineMetricsScraper} and
 * {@link ScrapeListener} hand these out, and {@link #of} builds one (for tests, or a scraper of one's own); it checks
 * its arguments.
 */
public final class EngineMetrics {
  private final WorkerId worker;
  private final int running;
  private final int waiting;
  private final double kvCacheUsage;
  private final long prefixCacheQueries;
  private final long prefixCacheHits;
  private final long observedAtNanos;

  private EngineMetrics(WorkerId worker, int running, int waiting, double kvCacheUsage, long prefixCacheQueries,
      long prefixCacheHits, long observedAtNanos) {
    this.worker = worker;
    this.running = running;
    this.waiting = waiting;
    this.kvCacheUsage = kvCacheUsage;
    this.prefixCacheQueries = prefixCacheQueries;
    this.prefixCacheHits = prefixCacheHits;
    this.observedAtNanos = observedAtNanos;
  }

  /**
   * A scrape with these values.
   *
   * @param worker the worker scraped
   * @param running requests being processed ({@code vllm:num_requests_running}), zero or more
   * @param waiting requests queued ({@code vllm:num_requests_waiting}), zero or more
   * @param kvCacheUsage the fraction of KV cache blocks in use, from 0 to 1 ({@code vllm:kv_cache_usage_perc}, or the
   *     older {@code vllm:gpu_cache_usage_perc})
   * @param prefixCacheQueries prompt tokens looked up in the prefix cache since the engine started
   *     ({@code vllm:prefix_cache_queries_total}), or -1 when the engine does not export them
   * @param prefixCacheHits prompt tokens found in the prefix cache since the engine started
   *     ({@code vllm:prefix_cache_hits_total}), or -1 when the engine does not export them
   * @param observedAtNanos when the response was read, in nanoseconds of the scraper's ticker
   * @return the reading
   * @throws NullPointerException if {@code worker} is null
   * @throws IllegalArgumentException if a count is negative (other than -1 for absent prefix cache counters) or the
   *     usage is outside [0, 1]
   */
  public static EngineMetrics of(WorkerId worker, int running, int waiting, double kvCacheUsage,
      long prefixCacheQueries, long prefixCacheHits, long observedAtNanos) {
    Objects.requireNonNull(worker, "worker");
    Checks.notNegative("running", running);
    Checks.notNegative("waiting", waiting);
    Checks.unitInterval("kvCacheUsage", kvCacheUsage);
    Checks.inRange("prefixCacheQueries", prefixCacheQueries, -1, Long.MAX_VALUE); // -1: not exported
    Checks.inRange("prefixCacheHits", prefixCacheHits, -1, Long.MAX_VALUE);
    return new EngineMetrics(worker, running, waiting, kvCacheUsage, prefixCacheQueries, prefixCacheHits,
        observedAtNanos);
  }

  /**
   * Returns the worker scraped.
   *
   * @return the worker scraped
   */
  public WorkerId worker() {
    return worker;
  }

  /**
   * Returns requests being processed ({@code vllm:num_requests_running}), zero or more.
   *
   * @return requests being processed ({@code vllm:num_requests_running}), zero or more
   */
  public int running() {
    return running;
  }

  /**
   * Returns requests queued ({@code vllm:num_requests_waiting}), zero or more.
   *
   * @return requests queued ({@code vllm:num_requests_waiting}), zero or more
   */
  public int waiting() {
    return waiting;
  }

  /**
   * Returns the fraction of KV cache blocks in use, from 0 to 1 ({@code vllm:kv_cache_usage_perc}, or the older
   * {@code vllm:gpu_cache_usage_perc}).
   *
   * @return the fraction of KV cache blocks in use, from 0 to 1 ({@code vllm:kv_cache_usage_perc}, or the older
   *     {@code vllm:gpu_cache_usage_perc})
   */
  public double kvCacheUsage() {
    return kvCacheUsage;
  }

  /**
   * Returns prompt tokens looked up in the prefix cache since the engine started
   * ({@code vllm:prefix_cache_queries_total}), or -1 when the engine does not export them.
   *
   * @return prompt tokens looked up in the prefix cache since the engine started
   *     ({@code vllm:prefix_cache_queries_total}), or -1 when the engine does not export them
   */
  public long prefixCacheQueries() {
    return prefixCacheQueries;
  }

  /**
   * Returns prompt tokens found in the prefix cache since the engine started ({@code vllm:prefix_cache_hits_total}), or
   * -1 when the engine does not export them.
   *
   * @return prompt tokens found in the prefix cache since the engine started ({@code vllm:prefix_cache_hits_total}), or
   *     -1 when the engine does not export them
   */
  public long prefixCacheHits() {
    return prefixCacheHits;
  }

  /**
   * Returns when the response was read, in nanoseconds of the scraper's ticker.
   *
   * @return when the response was read, in nanoseconds of the scraper's ticker
   */
  public long observedAtNanos() {
    return observedAtNanos;
  }

  /**
   * The load to hand the router: running, waiting, usage and the observation time.
   *
   * @return the engine load this snapshot reports, for {@link io.kvroute.Router#updateLoad}
   */
  public EngineLoad toEngineLoad() {
    return new EngineLoad(running, waiting, kvCacheUsage, observedAtNanos);
  }

  /**
   * Whether the engine exported both prefix cache counters.
   *
   * @return true if both prefix cache counters are present (neither is -1)
   */
  public boolean hasPrefixCacheCounters() {
    return prefixCacheQueries >= 0 && prefixCacheHits >= 0;
  }

  /**
   * The share of queried prompt tokens found in the prefix cache since the engine started, or NaN when it has
   * answered no query or does not export the counters.
   *
   * @return the lifetime hit rate in [0, 1], or NaN
   */
  public double lifetimeHitRate() {
    return hasPrefixCacheCounters() && prefixCacheQueries > 0 ? (double) prefixCacheHits / prefixCacheQueries
        : Double.NaN;
  }

  /**
   * The share of prompt tokens found in the prefix cache between {@code earlier} and this snapshot, or NaN when no
   * tokens were queried in between or a snapshot lacks the counters. When the counters went backwards (the engine
   * restarted), the rate since the restart is returned.
   *
   * @param earlier an earlier snapshot of the same worker
   * @return the hit rate over the interval in [0, 1], or NaN
   * @throws IllegalArgumentException if {@code earlier} is of another worker
   */
  public double hitRateSince(EngineMetrics earlier) {
    if (!earlier.worker.equals(worker)) {
      throw new IllegalArgumentException("earlier is of worker " + earlier.worker + ", not " + worker);
    }
    if (!hasPrefixCacheCounters() || !earlier.hasPrefixCacheCounters()) {
      return Double.NaN;
    }
    long queries = prefixCacheQueries - earlier.prefixCacheQueries;
    long hits = prefixCacheHits - earlier.prefixCacheHits;
    if (queries < 0 || hits < 0) {
      return lifetimeHitRate();
    }
    return queries == 0 ? Double.NaN : (double) hits / queries;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof EngineMetrics other)) {
      return false;
    }
    return worker.equals(other.worker) && running == other.running && waiting == other.waiting
        && Double.compare(kvCacheUsage, other.kvCacheUsage) == 0 && prefixCacheQueries == other.prefixCacheQueries
        && prefixCacheHits == other.prefixCacheHits && observedAtNanos == other.observedAtNanos;
  }

  @Override
  public int hashCode() {
    return Objects.hash(worker, running, waiting, kvCacheUsage, prefixCacheQueries, prefixCacheHits, observedAtNanos);
  }

  @Override
  public String toString() {
    return "EngineMetrics[worker=" + worker + ", running=" + running + ", waiting=" + waiting + ", kvCacheUsage="
        + kvCacheUsage + ", prefixCacheQueries=" + prefixCacheQueries + ", prefixCacheHits=" + prefixCacheHits
        + ", observedAtNanos=" + observedAtNanos + "]";
  }
}
