package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * Settings of the KV-aware cost; an immutable value, thread-safe.
 *
 * @param overlapWeight weight of the prefill term; 1.0 is Dynamo's default. Higher favours cache hits (TTFT), lower
 *     favours balance (ITL)
 * @param temperature 0 picks the lowest cost (Dynamo's default); above 0 samples a softmax over normalised costs
 * @param hostOverlapCredit how much a block cached in host memory counts compared with one on the GPU (Dynamo's
 *     later per-tier credit uses 0.75)
 */
public record KvAwareConfig(double overlapWeight, double temperature, double hostOverlapCredit) {
  /** Dynamo's defaults: weight 1.0, temperature 0, host credit 0.75. */
  public static final KvAwareConfig DEFAULT = new KvAwareConfig(1.0, 0.0, 0.75);

  /**
   * @param overlapWeight weight of the prefill term; 1.0 is Dynamo's default. Higher favours cache hits (TTFT), lower
   *     favours balance (ITL)
   * @param temperature 0 picks the lowest cost (Dynamo's default); above 0 samples a softmax over normalised costs
   * @param hostOverlapCredit how much a block cached in host memory counts compared with one on the GPU (Dynamo's later
   *     per-tier credit uses 0.75)
   * @throws IllegalArgumentException if a value is negative or not finite, or the credit exceeds 1
   */
  public KvAwareConfig {
    Checks.finiteNotNegative("overlapWeight", overlapWeight);
    Checks.finiteNotNegative("temperature", temperature);
    Checks.unitInterval("hostOverlapCredit", hostOverlapCredit);
  }

  /**
   * The defaults with another overlap weight.
   *
   * @param weight the overlap weight, finite and zero or more
   * @return a config with this overlap weight and this config's other values
   */
  public KvAwareConfig withOverlapWeight(double weight) {
    return new KvAwareConfig(weight, temperature, hostOverlapCredit);
  }

  /**
   * The defaults with another temperature.
   *
   * @param t the temperature, finite and zero or more
   * @return a config with this temperature and this config's other values
   */
  public KvAwareConfig withTemperature(double t) {
    return new KvAwareConfig(overlapWeight, t, hostOverlapCredit);
  }
}
