package io.kvroute.transport.okhttp;

import io.kvroute.WorkerId;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads the load metrics of vLLM's Prometheus exposition (or SGLang's, when vLLM's are absent) into
 * {@link EngineMetrics}; stateless, thread-safe.
 */
final class LoadMetrics {
  static final String RUNNING = "vllm:num_requests_running";
  static final String WAITING = "vllm:num_requests_waiting";
  static final String KV_CACHE_USAGE = "vllm:kv_cache_usage_perc";
  /** The name before vLLM 0.10.2 renamed it. */
  static final String GPU_CACHE_USAGE = "vllm:gpu_cache_usage_perc";
  static final String PREFIX_QUERIES = "vllm:prefix_cache_queries_total";
  static final String PREFIX_HITS = "vllm:prefix_cache_hits_total";
  /** The V1 names before the {@code gpu_} prefix was dropped. */
  static final String GPU_PREFIX_QUERIES = "vllm:gpu_prefix_cache_queries_total";
  static final String GPU_PREFIX_HITS = "vllm:gpu_prefix_cache_hits_total";

  /** SGLang's equivalents of running, waiting and the KV cache usage (its token pool usage, 0..1). */
  static final String SGLANG_RUNNING = "sglang:num_running_reqs";
  static final String SGLANG_WAITING = "sglang:num_queue_reqs";
  static final String SGLANG_USAGE = "sglang:token_usage";

  private static final Set<String> WANTED = Set.of(RUNNING, WAITING, KV_CACHE_USAGE, GPU_CACHE_USAGE, PREFIX_QUERIES,
      PREFIX_HITS, GPU_PREFIX_QUERIES, GPU_PREFIX_HITS, SGLANG_RUNNING, SGLANG_WAITING, SGLANG_USAGE);

  private LoadMetrics() {}

  /** The metrics read, and how many lines could not be read. */
  record Result(EngineMetrics metrics, int malformedLines) {}

  /** The exposition lacks a required metric or holds an impossible value. */
  static final class MalformedMetricsException extends Exception {
    private static final long serialVersionUID = 1L;

    MalformedMetricsException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * Reads {@code text}.
   *
   * @param engineLabel when not null, only samples whose label of this name equals the worker's data-parallel
   *     rank count (vLLM's {@code engine} label); null counts every label set
   * @throws MalformedMetricsException if running, waiting or the KV cache usage is missing, not finite, negative,
   *     or beyond range
   */
  static Result read(WorkerId worker, CharSequence text, @Nullable String engineLabel, long nowNanos)
      throws MalformedMetricsException {
    Sums running = new Sums();
    Sums waiting = new Sums();
    Sums usage = new Sums();
    Sums oldUsage = new Sums();
    Sums queries = new Sums();
    Sums hits = new Sums();
    Sums oldQueries = new Sums();
    Sums oldHits = new Sums();
    Sums sgRunning = new Sums();
    Sums sgWaiting = new Sums();
    Sums sgUsage = new Sums();
    String rank = Integer.toString(worker.dataParallelRank());
    int malformed = PrometheusText.parse(text, WANTED::contains, sample -> {
      if (engineLabel != null && !rank.equals(sample.labels().get(engineLabel))) {
        return;
      }
      Sums sums = switch (sample.name()) {
        case RUNNING -> running;
        case WAITING -> waiting;
        case KV_CACHE_USAGE -> usage;
        case GPU_CACHE_USAGE -> oldUsage;
        case PREFIX_QUERIES -> queries;
        case PREFIX_HITS -> hits;
        case GPU_PREFIX_QUERIES -> oldQueries;
        case GPU_PREFIX_HITS -> oldHits;
        case SGLANG_RUNNING -> sgRunning;
        case SGLANG_WAITING -> sgWaiting;
        case SGLANG_USAGE -> sgUsage;
        default -> throw new AssertionError(sample.name());
      };
      sums.add(sample.value());
    });
    Sums usageSums = usage.count > 0 ? usage : oldUsage.count > 0 ? oldUsage : sgUsage;
    double kvUsage = usageSums.mean(KV_CACHE_USAGE + " (or " + GPU_CACHE_USAGE + ")");
    if (kvUsage > 1 && kvUsage <= 1.0001) {
      kvUsage = 1; // rounding in the engine
    }
    if (kvUsage > 1) {
      throw new MalformedMetricsException(KV_CACHE_USAGE + " is " + kvUsage + ", beyond 1");
    }
    Sums q = queries.count > 0 ? queries : oldQueries;
    Sums h = hits.count > 0 ? hits : oldHits;
    int runningCount = running.count > 0 || sgRunning.count == 0 ? running.count(RUNNING)
        : sgRunning.count(SGLANG_RUNNING);
    int waitingCount = waiting.count > 0 || sgWaiting.count == 0 ? waiting.count(WAITING)
        : sgWaiting.count(SGLANG_WAITING);
    EngineMetrics metrics = EngineMetrics.of(worker, runningCount, waitingCount, kvUsage, q.counter(), h.counter(),
        nowNanos);
    return new Result(metrics, malformed);
  }

  private static final class Sums {
    int count;
    double sum;
    boolean bad;

    void add(double value) {
      count++;
      if (!Double.isFinite(value) || value < 0) {
        bad = true;
      } else {
        sum += value;
      }
    }

    int count(String name) throws MalformedMetricsException {
      check(name);
      if (sum > Integer.MAX_VALUE) {
        throw new MalformedMetricsException(name + " is " + sum + ", beyond an int");
      }
      return (int) Math.round(sum);
    }

    double mean(String name) throws MalformedMetricsException {
      check(name);
      return sum / count;
    }

    long counter() {
      return count == 0 || bad || sum >= Long.MAX_VALUE ? -1 : Math.round(sum);
    }

    private void check(String name) throws MalformedMetricsException {
      if (count == 0) {
        throw new MalformedMetricsException(name + " is missing");
      }
      if (bad) {
        throw new MalformedMetricsException(name + " has a negative or non-finite value");
      }
    }
  }
}
