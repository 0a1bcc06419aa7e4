package io.kvroute;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Test data: prompts and the stored events an engine would emit for them. */
public final class Fixtures {
  private Fixtures() {}

  /** A prompt of {@code length} pseudo-random tokens. */
  public static int[] prompt(long seed, int length) {
    SplittableRandom random = new SplittableRandom(seed);
    int[] tokens = new int[length];
    for (int i = 0; i < length; i++) {
      tokens[i] = random.nextInt(150_000);
    }
    return tokens;
  }

  /** Joins prompts. */
  public static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * The stored event for the full blocks of {@code tokens}, with engine hashes salted by {@code engineSalt} (as an
   * engine with its own hash seed would produce).
   */
  public static KvEvent.BlockStored storedFor(int[] tokens, int blockSize, long engineSalt) {
    int blocks = tokens.length / blockSize;
    long[] hashes = new long[blocks];
    long[] seq = BlockHasher.of(blockSize).sequenceHashes(tokens);
    for (int i = 0; i < blocks; i++) {
      hashes[i] = engineHash(engineSalt, seq[i]);
    }
    return KvEvent.BlockStored.of(hashes, null, Arrays.copyOf(tokens, blocks * blockSize), blockSize);
  }

  /** An engine-style hash of a block: its content identity mixed with a per-engine salt. */
  public static long engineHash(long salt, long contentHash) {
    long h = (contentHash ^ salt) * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 31);
  }
}
