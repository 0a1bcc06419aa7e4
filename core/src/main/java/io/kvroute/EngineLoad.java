package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * Load an engine reports about itself (for example scraped from vLLM's {@code /metrics}); an immutable value,
 * thread-safe.
 *
 * @param running requests being processed ({@code vllm:num_requests_running})
 * @param waiting requests queued ({@code vllm:num_requests_waiting})
 * @param kvCacheUsage fraction of KV cache blocks in use, 0..1 ({@code vllm:kv_cache_usage_perc})
 * @param observedAtNanos when it was observed, on the router's {@link Ticker}
 */
public record EngineLoad(int running, int waiting, double kvCacheUsage, long observedAtNanos) {
  /**
   * @param running requests being processed ({@code vllm:num_requests_running})
   * @param waiting requests queued ({@code vllm:num_requests_waiting})
   * @param kvCacheUsage fraction of KV cache blocks in use, 0..1 ({@code vllm:kv_cache_usage_perc})
   * @param observedAtNanos when it was observed, on the router's {@link Ticker}
   * @throws IllegalArgumentException if a count is negative or the usage is outside [0, 1]
   */
  public EngineLoad {
    Checks.notNegative("running", running);
    Checks.notNegative("waiting", waiting);
    Checks.unitInterval("kvCacheUsage", kvCacheUsage);
  }
}
