package io.kvroute;

/**
 * Test data, kept for the tests that name it in this package; it delegates to kvroute-testkit's
 * {@link io.kvroute.testkit.Fixtures}.
 */
public final class Fixtures {
  private Fixtures() {}

  /** A prompt of {@code length} pseudo-random tokens. */
  public static int[] prompt(long seed, int length) {
    return io.kvroute.testkit.Fixtures.prompt(seed, length);
  }

  /** Joins prompts. */
  public static int[] concat(int[] a, int[] b) {
    return io.kvroute.testkit.Fixtures.concat(a, b);
  }

  /** The stored event for the full blocks of {@code tokens}, with engine hashes salted by {@code engineSalt}. */
  public static KvEvent.BlockStored storedFor(int[] tokens, int blockSize, long engineSalt) {
    return io.kvroute.testkit.Fixtures.storedFor(tokens, blockSize, engineSalt);
  }

  /** An engine-style hash of a block: its content identity mixed with a per-engine salt. */
  public static long engineHash(long salt, long contentHash) {
    return io.kvroute.testkit.Fixtures.engineHash(salt, contentHash);
  }
}
