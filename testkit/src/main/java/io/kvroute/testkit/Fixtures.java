package io.kvroute.testkit;

import io.kvroute.BlockHasher;
import io.kvroute.KvEvent;
import java.util.Arrays;
import java.util.SplittableRandom;

/** Test data: seeded prompts and the stored events an engine would emit for them; stateless, thread-safe. */
public final class Fixtures {
  private Fixtures() {}

  /**
   * A prompt of pseudo-random token ids in [0, 150000), the same for the same seed.
   *
   * @param seed the seed
   * @param length tokens
   * @return the prompt
   */
  public static int[] prompt(long seed, int length) {
    SplittableRandom random = new SplittableRandom(seed);
    int[] tokens = new int[length];
    for (int i = 0; i < length; i++) {
      tokens[i] = random.nextInt(150_000);
    }
    return tokens;
  }

  /**
   * Joins two prompts.
   *
   * @param a the first
   * @param b the second
   * @return a then b
   */
  public static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /**
   * The stored event for the full blocks of {@code tokens}, with engine hashes salted by {@code engineSalt} (as an
   * engine with its own hash seed would produce them).
   *
   * @param tokens the prompt
   * @param blockSize tokens per block
   * @param engineSalt distinguishes engines' hash functions
   * @return the event
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

  /**
   * An engine-style hash of a block: its content identity mixed with a per-engine salt.
   *
   * @param salt the engine's salt
   * @param contentHash the block's content hash
   * @return the engine's hash
   */
  public static long engineHash(long salt, long contentHash) {
    long h = (contentHash ^ salt) * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 31);
  }
}
