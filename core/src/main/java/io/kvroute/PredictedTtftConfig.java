package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * Settings of the {@link RouterPolicy#predictedTtft} policy; an immutable value, thread-safe.
 *
 * <p>None of them is fitted to a benchmark; each states a modelling choice:
 *
 * @param loadSlack the bounded-load rule's epsilon, in work: a worker is passed over when its queued prefill time
 *     exceeds {@code (1 + loadSlack)} times the candidates' mean plus one cold prefill of this request there
 *     (consistent hashing with bounded loads, Mirrokni, Thorup and Zadimoghaddam 2018, with {@code c = 1 + epsilon}
 *     and one item of slack). 0.25 lets a holder carry a quarter more queued work than the mean before its cache
 *     stops attracting requests
 * @param evictionPrice how many future recomputations one evicted warm block costs, in units of that block's
 *     prefill time. 1.0 is the least a full cache pays: the prefix evicted to make room for a duplicate is
 *     recomputed by its next request (more when evictions cascade, less when it would not have been reused)
 * @param learningWindow how many of a worker's recent requests its learned speed averages over (an exponential
 *     window); 64 follows a worker slowing down within a minute of traffic while averaging out one request's noise
 * @param hostOverlapCredit how much a block cached in host memory counts against one on the GPU (Dynamo's per-tier
 *     credit, 0.75: loading it costs about a quarter of recomputing it)
 */
public record PredictedTtftConfig(double loadSlack, double evictionPrice, int learningWindow,
    double hostOverlapCredit) {
  /** Defaults: load slack 0.25, eviction price 1.0, learning window 64, host credit 0.75. */
  public static final PredictedTtftConfig DEFAULT = new PredictedTtftConfig(0.25, 1.0, 64, 0.75);

  /**
   * @param loadSlack the bounded-load rule's epsilon, in work: a worker is passed over when its queued prefill time
   *     exceeds {@code (1 + loadSlack)} times the candidates' mean plus one cold prefill of this request there
   *     (consistent hashing with bounded loads, Mirrokni, Thorup and Zadimoghaddam 2018, with {@code c = 1 + epsilon}
   *     and one item of slack). 0.25 lets a holder carry a quarter more queued work than the mean before its cache
   *     stops attracting requests
   * @param evictionPrice how many future recomputations one evicted warm block costs, in units of that block's prefill
   *     time. 1.0 is the least a full cache pays: the prefix evicted to make room for a duplicate is recomputed by its
   *     next request (more when evictions cascade, less when it would not have been reused)
   * @param learningWindow how many of a worker's recent requests its learned speed averages over (an exponential
   *     window); 64 follows a worker slowing down within a minute of traffic while averaging out one request's noise
   * @param hostOverlapCredit how much a block cached in host memory counts against one on the GPU (Dynamo's per-tier
   *     credit, 0.75: loading it costs about a quarter of recomputing it)
   * @throws IllegalArgumentException if a value is out of range, naming it
   */
  public PredictedTtftConfig {
    Checks.finiteNotNegative("loadSlack", loadSlack);
    Checks.finiteNotNegative("evictionPrice", evictionPrice);
    Checks.positive("learningWindow", learningWindow);
    Checks.unitInterval("hostOverlapCredit", hostOverlapCredit);
  }

  /**
   * These settings with another load slack.
   *
   * @param slack the load slack, finite and zero or more
   * @return a config with this load slack and this config's other values
   */
  public PredictedTtftConfig withLoadSlack(double slack) {
    return new PredictedTtftConfig(slack, evictionPrice, learningWindow, hostOverlapCredit);
  }

  /**
   * These settings with another eviction price.
   *
   * @param price the eviction price, finite and zero or more
   * @return a config with this eviction price and this config's other values
   */
  public PredictedTtftConfig withEvictionPrice(double price) {
    return new PredictedTtftConfig(loadSlack, price, learningWindow, hostOverlapCredit);
  }
}
