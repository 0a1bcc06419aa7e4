package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * Settings of the {@link RouterPolicy#cacheAffinity} policy; an immutable value, thread-safe.
 *
 * @param homeBlocks how many leading blocks identify a prefix's home worker (8 blocks of 16 = 128 tokens)
 * @param loadFactor a worker is overloaded when its active requests reach {@code (1 + loadFactor)} times the other
 *     workers' mean plus one ({@code (1 + loadFactor) x (mean + 1)}); smaller balances more, larger keeps more
 *     affinity
 * @param minOverlapFraction the share of the prompt a worker must hold to attract the request by its cache
 */
public record CacheAffinityConfig(int homeBlocks, double loadFactor, double minOverlapFraction) {
  /**
   * Defaults: 8 home blocks, load factor 2.0 (a worker takes up to 3x the others' mean load before it is passed over),
   * minimum overlap 0.25.
   */
  public static final CacheAffinityConfig DEFAULT = new CacheAffinityConfig(8, 2.0, 0.25);

  /**
   * @param homeBlocks how many leading blocks identify a prefix's home worker (8 blocks of 16 = 128 tokens)
   * @param loadFactor a worker is overloaded when its active requests reach {@code (1 + loadFactor)} times the other
   *     workers' mean plus one ({@code (1 + loadFactor) x (mean + 1)}); smaller balances more, larger keeps more
   *     affinity
   * @param minOverlapFraction the share of the prompt a worker must hold to attract the request by its cache
   * @throws IllegalArgumentException if a value is out of range
   */
  public CacheAffinityConfig {
    Checks.positive("homeBlocks", homeBlocks);
    Checks.finiteNotNegative("loadFactor", loadFactor);
    Checks.unitInterval("minOverlapFraction", minOverlapFraction);
  }
}
