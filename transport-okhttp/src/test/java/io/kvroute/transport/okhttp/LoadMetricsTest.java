package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.PrometheusTextTest.resource;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.EngineLoad;
import io.kvroute.WorkerId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LoadMetricsTest {
  private static final WorkerId W = WorkerId.of("w");

  @Test
  void readsVllmV1() throws Exception {
    LoadMetrics.Result r = LoadMetrics.read(W, resource("vllm-v1-metrics.txt"), null, 77);
    EngineMetrics m = r.metrics();
    assertEquals(0, r.malformedLines());
    assertEquals(3, m.running());
    assertEquals(2, m.waiting());
    assertEquals(0.4217391304347826, m.kvCacheUsage());
    assertEquals(123456, m.prefixCacheQueries());
    assertEquals(98765, m.prefixCacheHits());
    assertEquals(98765.0 / 123456, m.lifetimeHitRate());
    assertEquals(new EngineLoad(3, 2, 0.4217391304347826, 77), m.toEngineLoad());
  }

  @Test
  void fallsBackToTheOldUsageNameAndMarksAbsentCounters() throws Exception {
    EngineMetrics m = LoadMetrics.read(W, resource("vllm-v0-metrics.txt"), null, 1).metrics();
    assertEquals(7, m.running());
    assertEquals(0, m.waiting());
    assertEquals(0.8125, m.kvCacheUsage());
    assertEquals(-1, m.prefixCacheQueries());
    assertEquals(-1, m.prefixCacheHits());
    assertFalse(m.hasPrefixCacheCounters());
    assertTrue(Double.isNaN(m.lifetimeHitRate()));
  }

  @Test
  void sumsCountsAndAveragesUsageOverEngines() throws Exception {
    EngineMetrics m = LoadMetrics.read(W, resource("vllm-dp2-metrics.txt"), null, 1).metrics();
    assertEquals(10, m.running());
    assertEquals(3, m.waiting());
    assertEquals(0.5, m.kvCacheUsage());
    assertEquals(4000, m.prefixCacheQueries()); // the gpu_-prefixed V1 names
    assertEquals(2000, m.prefixCacheHits());
  }

  @Test
  void engineLabelSelectsTheWorkersRank() throws Exception {
    EngineMetrics rank1 = LoadMetrics.read(WorkerId.of("w").withRank(1), resource("vllm-dp2-metrics.txt"), "engine",
        1).metrics();
    assertEquals(6, rank1.running());
    assertEquals(3, rank1.waiting());
    assertEquals(0.75, rank1.kvCacheUsage());
    assertEquals(3000, rank1.prefixCacheQueries());
    EngineMetrics rank0 = LoadMetrics.read(W, resource("vllm-dp2-metrics.txt"), "engine", 1).metrics();
    assertEquals(4, rank0.running());
    assertEquals(0.25, rank0.kvCacheUsage());
    assertThrows(LoadMetrics.MalformedMetricsException.class,
        () -> LoadMetrics.read(W.withRank(2), resource("vllm-dp2-metrics.txt"), "engine", 1));
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "",
      "garbage\n\u0000\u0001\n",
      "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n",
      "vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 0.1\n",
      "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n",
      "vllm:num_requests_running NaN\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n",
      "vllm:num_requests_running -1\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n",
      "vllm:num_requests_running 1\nvllm:num_requests_waiting +Inf\nvllm:kv_cache_usage_perc 0.1\n",
      "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 1.5\n",
      "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc NaN\n",
      "vllm:num_requests_running 3e9\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.1\n"})
  void rejectsMissingOrImpossibleValues(String text) {
    assertThrows(LoadMetrics.MalformedMetricsException.class, () -> LoadMetrics.read(W, text, null, 1));
  }

  @Test
  void countsMalformedLinesButKeepsTheRest() throws Exception {
    LoadMetrics.Result r = LoadMetrics.read(W, "vllm:num_requests_running{a=\"1\"} 2\n"
        + "vllm:num_requests_running{a=\"2\" 5\n"
        + "vllm:num_requests_waiting 1\nvllm:kv_cache_usage_perc 1.00000001\nvllm:prefix_cache_hits_total NaN\n"
        + "vllm:prefix_cache_queries_total 10\n", null, 1);
    assertEquals(1, r.malformedLines());
    assertEquals(2, r.metrics().running());
    assertEquals(1.0, r.metrics().kvCacheUsage()); // engine rounding clamped
    assertEquals(10, r.metrics().prefixCacheQueries());
    assertEquals(-1, r.metrics().prefixCacheHits()); // a NaN counter counts as absent
  }

  @Test
  void hitRateBetweenSnapshots() {
    EngineMetrics a = EngineMetrics.of(W, 0, 0, 0, 100, 50, 1);
    EngineMetrics b = EngineMetrics.of(W, 0, 0, 0, 300, 200, 2);
    assertEquals(0.75, b.hitRateSince(a));
    assertTrue(Double.isNaN(b.hitRateSince(b)));
    EngineMetrics restarted = EngineMetrics.of(W, 0, 0, 0, 40, 10, 3);
    assertEquals(0.25, restarted.hitRateSince(b));
    EngineMetrics absent = EngineMetrics.of(W, 0, 0, 0, -1, -1, 4);
    assertTrue(Double.isNaN(absent.hitRateSince(a)));
    assertThrows(IllegalArgumentException.class,
        () -> b.hitRateSince(EngineMetrics.of(WorkerId.of("x"), 0, 0, 0, 1, 1, 1)));
    assertThrows(IllegalArgumentException.class, () -> EngineMetrics.of(W, 0, 0, 1.1, 1, 1, 1));
    assertThrows(IllegalArgumentException.class, () -> EngineMetrics.of(W, -1, 0, 0, 1, 1, 1));
    assertThrows(IllegalArgumentException.class, () -> EngineMetrics.of(W, 0, 0, 0, -2, 1, 1));
  }

  @Test
  void readsSglangWhenVllmsMetricsAreAbsent() throws Exception {
    String sglang = "# HELP sglang:num_running_reqs The number of running requests.\n"
        + "# TYPE sglang:num_running_reqs gauge\n"
        + "sglang:num_running_reqs{engine_type=\"unified\",model_name=\"Qwen/Qwen3-8B\",tp_rank=\"0\"} 8.0\n"
        + "sglang:num_queue_reqs{engine_type=\"unified\",model_name=\"Qwen/Qwen3-8B\",tp_rank=\"0\"} 4.0\n"
        + "sglang:token_usage{engine_type=\"unified\",model_name=\"Qwen/Qwen3-8B\",tp_rank=\"0\"} 0.52\n"
        + "sglang:cache_hit_rate{engine_type=\"unified\",model_name=\"Qwen/Qwen3-8B\",tp_rank=\"0\"} 0.28\n";
    EngineMetrics m = LoadMetrics.read(W, sglang, null, 1).metrics();
    assertEquals(new EngineLoad(8, 4, 0.52, 1), m.toEngineLoad());
    assertFalse(m.hasPrefixCacheCounters());
    // vLLM's names win when both are present.
    EngineMetrics both = LoadMetrics.read(W, sglang + "vllm:num_requests_running 1\nvllm:num_requests_waiting 2\n"
        + "vllm:kv_cache_usage_perc 0.1\n", null, 1).metrics();
    assertEquals(new EngineLoad(1, 2, 0.1, 1), both.toEngineLoad());
  }
}
