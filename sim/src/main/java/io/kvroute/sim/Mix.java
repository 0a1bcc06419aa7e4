package io.kvroute.sim;

/** 64-bit mixing functions shared by the simulator's hashes and generators; stateless. */
final class Mix {
  private Mix() {}

  /** MurmurHash3's 64-bit finalizer: a bijective avalanche of {@code h}. */
  static long fmix64(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  /** SplitMix64's output for state {@code x}. */
  static long splitMix64(long x) {
    long z = x + 0x9e3779b97f4a7c15L;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }
}
