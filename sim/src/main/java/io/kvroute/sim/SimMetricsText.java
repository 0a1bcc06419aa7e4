package io.kvroute.sim;

import java.util.Locale;

/**
 * The simulator's {@code GET /metrics} page: vLLM's metric names, help texts and labels for one engine state;
 * stateless, thread-safe.
 */
final class SimMetricsText {
  private SimMetricsText() {}

  /**
   * The metrics page for one engine state.
   *
   * @param s the engine's state
   * @param modelName the served model's name (the {@code model_name} label)
   * @return the page, in Prometheus text format 0.0.4
   */
  static String render(SimServer.Snapshot s, String modelName) {
    String labels = "{engine=\"0\",model_name=\"" + modelName.replace("\\", "\\\\").replace("\"", "\\\"")
        + "\"}";
    StringBuilder sb = new StringBuilder(2048);
    metric(sb, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", labels,
        s.running());
    metric(sb, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", labels,
        s.waiting());
    metric(sb, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", labels,
        s.kvCacheUsage());
    metric(sb, "vllm:prefix_cache_queries_total", "counter",
        "Prefix cache queries, in terms of number of queried tokens.", labels, s.prefixCacheQueries());
    metric(sb, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
        labels, s.prefixCacheHits());
    metric(sb, "vllm:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.", labels,
        s.preemptions());
    metric(sb, "vllm:request_success_total", "counter", "Count of successfully processed requests.", labels,
        s.finishedRequests());
    return sb.toString();
  }

  private static void metric(StringBuilder sb, String name, String type, String help, String labels, double value) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    sb.append(name).append(labels).append(' ').append(String.format(Locale.ROOT, "%s", value)).append('\n');
  }
}
