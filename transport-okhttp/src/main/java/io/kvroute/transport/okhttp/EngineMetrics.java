package io.kvroute.transport.okhttp;

import io.kvroute.EngineLoad;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.util.Objects;

/**
 * What one scrape of a worker's {@code /metrics} reported; an immutable value, thread-safe.
 *
 * <p>Counts are summed over every label set of a metric (for example one per model or engine); the KV cache usage
 * is the mean over label sets. The prefix cache counters are cumulative token counts since the engine started, or -1
 * when the engine does not export them; {@link #hitRateSince} turns two snapshots into the hit rate observed between
 * them.
 *
 * @param worker the worker scraped
 * @param running requests being processed ({@code vllm:num_requests_running})
 * @param waiting requests queued ({@code vllm:num_requests_waiting})
 * @param kvCacheUsage fraction of KV cache blocks in use, 0..1 ({@code vllm:kv_cache_usage_perc}, or the older
 *     {@code vllm:gpu_cache_usage_perc})
 * @param prefixCacheQueries prompt tokens looked up in the prefix cache ({@code vllm:prefix_cache_queries_total}),
 *     or -1
 * @param prefixCacheHits prompt tokens found in the prefix cache ({@code vllm:prefix_cache_hits_total}), or -1
 * @param observedAtNanos when the response was read, on the scraper's ticker
 */
public record EngineMetrics(WorkerId worker, int running, int waiting, double kvCacheUsage, long prefixCacheQueries,
    long prefixCacheHits, long observedAtNanos) {

  /**
   * @param worker the worker scraped, not null
   * @param running requests running on the engine, zero or more
   * @param waiting requests waiting on the engine, zero or more
   * @param kvCacheUsage fraction of KV cache blocks in use, from 0 to 1
   * @param prefixCacheQueries prompt tokens looked up in the prefix cache since the engine started, or -1 if not
   *     exported
   * @param prefixCacheHits prompt tokens found in the prefix cache since the engine started, or -1 if not exported
   * @param observedAtNanos when the response was read, in nanoseconds of the scraper's ticker
   * @throws NullPointerException if {@code worker} is null
   * @throws IllegalArgumentException if a count is negative (other than -1 for absent counters) or the usage is
   *     outside [0, 1]
   */
  public EngineMetrics {
    Objects.requireNonNull(worker, "worker");
    Checks.notNegative("running", running);
    Checks.notNegative("waiting", waiting);
    Checks.unitInterval("kvCacheUsage", kvCacheUsage);
    if (prefixCacheQueries < -1 || prefixCacheHits < -1) {
      throw new IllegalArgumentException("prefix cache counters must be -1 (absent) or >= 0 but were "
          + prefixCacheQueries + ", " + prefixCacheHits);
    }
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
}
