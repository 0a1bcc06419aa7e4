package io.kvroute.sim;

import io.kvroute.internal.Checks;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * What one {@link Simulation} run measured; an immutable value, thread-safe.
 *
 * <p>Definitions, chosen to match the measured article:
 * <ul>
 *   <li><b>request hit rate</b>: the share of requests that found at least one prompt block in their engine's
 *       prefix cache ({@code usage.prompt_tokens_details.cached_tokens > 0});
 *   <li><b>cached-token ratio</b>: prompt tokens served from the prefix cache over all prompt tokens (vLLM's
 *       {@code prefix_cache_hits / prefix_cache_queries}, counted once per request);
 *   <li><b>TTFT</b>: virtual time from sending a request to its first token, engine-side only (no HTTP or
 *       network cost).
 * </ul>
 */
public final class SimulationResult {
  private final int requests;
  private final int hitRequests;
  private final long promptTokens;
  private final long cachedTokens;
  private final long predictedCachedTokens;
  private final long[] sortedTtftNanos;
  private final long[] sortedLatencyNanos;
  private final long durationNanos;
  private final long preemptions;
  private final int[] requestsPerWorker;
  private final double workersPerPrefixGroup;
  private final long absolutePredictionError;
  private final long overPredictedTokens;

  private SimulationResult(Recorder r, long durationNanos, long preemptions) {
    int n = r.count;
    this.requests = n;
    int hits = 0;
    long prompt = 0;
    long cached = 0;
    long predicted = 0;
    long absError = 0;
    long over = 0;
    Map<Integer, Set<Integer>> workersByGroup = new HashMap<>();
    for (int i = 0; i < r.capacity; i++) {
      if (r.prompt[i] == 0) {
        continue;
      }
      prompt += r.prompt[i];
      cached += r.cached[i];
      predicted += r.predicted[i];
      absError += Math.abs((long) r.predicted[i] - r.cached[i]);
      over += Math.max(0, r.predicted[i] - r.cached[i]);
      if (r.cached[i] > 0) {
        hits++;
      }
      if (r.group[i] >= 0) {
        workersByGroup.computeIfAbsent(r.group[i], g -> new HashSet<>()).add(r.worker[i]);
      }
    }
    this.hitRequests = hits;
    this.promptTokens = prompt;
    this.cachedTokens = cached;
    this.predictedCachedTokens = predicted;
    this.absolutePredictionError = absError;
    this.overPredictedTokens = over;
    this.sortedTtftNanos = sortedPositive(r.ttft, r.prompt);
    this.sortedLatencyNanos = sortedPositive(r.latency, r.prompt);
    this.durationNanos = durationNanos;
    this.preemptions = preemptions;
    this.requestsPerWorker = r.perWorker.clone();
    this.workersPerPrefixGroup = workersByGroup.isEmpty() ? 0
        : workersByGroup.values().stream().mapToInt(Set::size).average().orElse(0);
  }

  private static long[] sortedPositive(long[] values, int[] present) {
    long[] out = new long[values.length];
    int n = 0;
    for (int i = 0; i < values.length; i++) {
      if (present[i] > 0) {
        out[n++] = values[i];
      }
    }
    out = Arrays.copyOf(out, n);
    Arrays.sort(out);
    return out;
  }

  /**
   * Requests completed.
   *
   * @return the request count
   */
  public int requests() {
    return requests;
  }

  /**
   * Requests that found at least one cached prompt block.
   *
   * @return the request count, at most {@link #requests()}
   */
  public int hitRequests() {
    return hitRequests;
  }

  /**
   * The share of requests that found at least one cached prompt block, 0..1.
   *
   * @return the share, 0 when no request completed
   */
  public double requestHitRate() {
    return requests == 0 ? 0 : (double) hitRequests / requests;
  }

  /**
   * Prompt tokens served from the prefix cache over all prompt tokens, 0..1.
   *
   * @return the ratio, 0 when no request completed
   */
  public double cachedTokenRatio() {
    return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
  }

  /**
   * Prompt tokens the router predicted cached (its matched blocks) over all prompt tokens, 0..1.
   *
   * @return the ratio, 0 when no request completed
   */
  public double predictedCachedTokenRatio() {
    return promptTokens == 0 ? 0 : (double) predictedCachedTokens / promptTokens;
  }

  /**
   * The router's prediction error: the sum over requests of |predicted - actual cached tokens|, where actual is what
   * the engine reports as {@code usage.prompt_tokens_details.cached_tokens}, over all prompt tokens.
   *
   * @return the ratio, zero or more (0 when every prediction was exact)
   */
  public double predictionErrorRatio() {
    return promptTokens == 0 ? 0 : (double) absolutePredictionError / promptTokens;
  }

  /**
   * Prompt tokens the router predicted cached that the engine had to compute (predictions above actual).
   *
   * @return the token count, zero or more
   */
  public long overPredictedTokens() {
    return overPredictedTokens;
  }

  /**
   * The busiest worker's requests over the mean requests per worker (1.0 is perfect balance), counting every worker
   * of the run.
   *
   * @return the ratio, at least 1 when any request completed, else 0
   */
  public double maxMeanLoad() {
    if (requestsPerWorker.length == 0 || requests == 0) {
      return 0;
    }
    int max = 0;
    for (int n : requestsPerWorker) {
      max = Math.max(max, n);
    }
    return max / ((double) requests / requestsPerWorker.length);
  }

  /**
   * All prompt tokens.
   *
   * @return the token count over all completed requests
   */
  public long promptTokens() {
    return promptTokens;
  }

  /**
   * Prompt tokens served from the prefix cache.
   *
   * @return the token count, at most {@link #promptTokens()}
   */
  public long cachedTokens() {
    return cachedTokens;
  }

  /**
   * The time to first token at quantile {@code q} (nearest rank), in milliseconds of virtual time.
   *
   * @param q the quantile, from 0 to 1 (0.5 the median, 0.99 the 99th percentile)
   * @return milliseconds, 0 when no request completed
   * @throws IllegalArgumentException if {@code q} is outside [0, 1]
   */
  public double ttftMillis(double q) {
    return quantile(sortedTtftNanos, q) / 1e6;
  }

  /**
   * The end-to-end latency at quantile {@code q} (nearest rank), in milliseconds of virtual time.
   *
   * @param q the quantile, from 0 to 1
   * @return milliseconds, 0 when no request completed
   */
  public double latencyMillis(double q) {
    return quantile(sortedLatencyNanos, q) / 1e6;
  }

  /**
   * Completed requests per second of virtual time.
   *
   * @return requests per second, 0 for an empty run
   */
  public double throughputPerSecond() {
    return durationNanos == 0 ? 0 : requests * 1e9 / durationNanos;
  }

  /**
   * Virtual time from the first send to the last completion.
   *
   * @return the duration, zero for an empty run
   */
  public Duration duration() {
    return Duration.ofNanos(durationNanos);
  }

  /**
   * Requests preempted by the engines (cache too full to continue them).
   *
   * @return the count, zero or more
   */
  public long preemptions() {
    return preemptions;
  }

  /**
   * Requests completed by each worker, by worker index.
   *
   * @return a copy, one count per worker in registration order
   */
  public int[] requestsPerWorker() {
    return requestsPerWorker.clone();
  }

  /**
   * On average over prefix groups, how many distinct workers served requests of one group.
   *
   * @return the mean count, 1.0 when each group stayed on one worker
   */
  public double workersPerPrefixGroup() {
    return workersPerPrefixGroup;
  }

  private static double quantile(long[] sorted, double q) {
    Checks.unitInterval("quantile", q);
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  @Override
  public String toString() {
    return String.format(java.util.Locale.ROOT,
        "SimulationResult{requests=%d, hitRate=%.3f, cachedTokenRatio=%.3f, ttftP50=%.1fms, ttftP99=%.1fms,"
            + " throughput=%.2f/s, workersPerPrefix=%.2f, preemptions=%d}",
        requests, requestHitRate(), cachedTokenRatio(), ttftMillis(0.5), ttftMillis(0.99), throughputPerSecond(),
        workersPerPrefixGroup, preemptions);
  }

  /** Collects per-request outcomes during a run; confined to the simulation thread. */
  static final class Recorder {
    final int capacity;
    final int[] prompt;
    final int[] cached;
    final int[] predicted;
    final int[] worker;
    final int[] group;
    final long[] ttft;
    final long[] latency;
    final int[] perWorker;
    int count;
    long lastFinishedNanos; // the run's duration ends here, not at a later load report or outage

    Recorder(int capacity, int workers) {
      this.capacity = capacity;
      this.prompt = new int[capacity];
      this.cached = new int[capacity];
      this.predicted = new int[capacity];
      this.worker = new int[capacity];
      this.group = new int[capacity];
      this.ttft = new long[capacity];
      this.latency = new long[capacity];
      this.perWorker = new int[workers];
    }

    void firstToken(int index, long ttftNanos) {
      ttft[index] = ttftNanos;
    }

    void finished(int index, int workerIndex, int prefixGroup, int promptTokens, int cachedTokens,
        int predictedTokens, long latencyNanos, long now) {
      prompt[index] = promptTokens;
      cached[index] = Math.max(0, cachedTokens);
      predicted[index] = predictedTokens;
      worker[index] = workerIndex;
      group[index] = prefixGroup;
      latency[index] = latencyNanos;
      perWorker[workerIndex]++;
      count++;
      lastFinishedNanos = Math.max(lastFinishedNanos, now);
    }

    SimulationResult finish(long durationNanos, long preemptions) {
      return new SimulationResult(this, durationNanos, preemptions);
    }
  }
}
