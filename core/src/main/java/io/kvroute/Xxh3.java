package io.kvroute;

/**
 * The XXH3-64 path for exactly 16 input bytes, written out so that chaining two block hashes needs neither an
 * array nor a call into the general hasher. Stateless and thread-safe.
 *
 * <p>Follows the published XXH3 specification ({@code XXH3_len_9to16_64b}); the known-answer and differential
 * tests in {@code BlockHasherTest} keep it byte-exact with libxxhash.
 */
final class Xxh3 {
  // Bytes 24..55 of XXH3's default secret (kSecret), read as little-endian 64-bit words.
  private static final long SECRET_24 = 0x1f67b3b7a4a44072L;
  private static final long SECRET_32 = 0x78e5c0cc4ee679cbL;
  private static final long SECRET_40 = 0x2172ffcc7dd05a82L;
  private static final long SECRET_48 = 0x8e2443f7744608b8L;

  // XXH3's default secret (kSecret), bytes 0..127 as little-endian 64-bit words: enough for inputs up to 128 bytes.
  private static final long[] SECRET = {
      0xbe4ba423396cfeb8L, 0x1cad21f72c81017cL, 0xdb979083e96dd4deL, 0x1f67b3b7a4a44072L,
      0x78e5c0cc4ee679cbL, 0x2172ffcc7dd05a82L, 0x8e2443f7744608b8L, 0x4c263a81e69035e0L,
      0xcb00c391bb52283cL, 0xa32e531b8b65d088L, 0x4ef90da297486471L, 0xd8acdea946ef1938L,
      0x3f349ce33f76faa8L, 0x1d4f0bc7c7bbdcf9L, 0x3159b4cd4be0518aL, 0x647378d9c97e9fc8L};
  private static final long PRIME64_1 = 0x9E3779B185EBCA87L;

  private Xxh3() {}

  /** Whether {@link #hashInts} handles a block of this many tokens (17 to 128 bytes, XXH3's mid-size path). */
  static boolean handlesInts(int tokens) {
    return tokens >= 5 && tokens <= 32;
  }

  /**
   * XXH3-64 of {@code tokens[offset .. offset+count)} as little-endian u32, for 5 to 32 tokens: the mid-size path
   * ({@code XXH3_len_17to128_64b}) specialised for int arrays, without the general hasher's dispatch; a 16-token
   * block is four 128-bit multiplies.
   */
  static long hashInts(int[] tokens, int offset, int count, long seed) {
    int len = count * 4;
    int last = offset + count; // the input's end, in ints
    long acc = len * PRIME64_1;
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += mix16(tokens, offset + 12, 12, seed);
          acc += mix16(tokens, last - 16, 14, seed);
        }
        acc += mix16(tokens, offset + 8, 8, seed);
        acc += mix16(tokens, last - 12, 10, seed);
      }
      acc += mix16(tokens, offset + 4, 4, seed);
      acc += mix16(tokens, last - 8, 6, seed);
    }
    acc += mix16(tokens, offset, 0, seed);
    acc += mix16(tokens, last - 4, 2, seed);
    return avalanche(acc);
  }

  /**
   * {@link #hashInts} for exactly 16 tokens (64 bytes), vLLM's default block: the same four mix16B steps with the
   * secret words as constants, and one range check for the block instead of one per token.
   */
  static long hashInts16(int[] t, int o, long seed) {
    java.util.Objects.checkFromIndexSize(o, 16, t.length);
    long acc = 64 * PRIME64_1;
    acc += mix(t[o + 4], t[o + 5], t[o + 6], t[o + 7], 0x78e5c0cc4ee679cbL + seed, 0x2172ffcc7dd05a82L - seed);
    acc += mix(t[o + 8], t[o + 9], t[o + 10], t[o + 11], 0x8e2443f7744608b8L + seed, 0x4c263a81e69035e0L - seed);
    acc += mix(t[o], t[o + 1], t[o + 2], t[o + 3], 0xbe4ba423396cfeb8L + seed, 0x1cad21f72c81017cL - seed);
    acc += mix(t[o + 12], t[o + 13], t[o + 14], t[o + 15], 0xdb979083e96dd4deL + seed, 0x1f67b3b7a4a44072L - seed);
    return avalanche(acc);
  }

  /**
   * The sequence hashes of {@code blocks} 16-token blocks of {@code t} from index 0, chained as
   * {@link BlockHasher#sequenceHash} does ({@code out[0]} is block 0's local hash, {@code out[b]} is
   * {@code hash16(out[b - 1], local(b), SEED)}), into {@code out[0 .. blocks)}.
   *
   * <p>For the base model's seeds (both {@link BlockHasher#SEED}) this is {@link #sequence16Base} when
   * {@link IntWords} can read the tokens as longs; otherwise, or when a token at an odd index is negative, the
   * portable loop below: the same arithmetic as {@link #hashInts16} and {@link #hash16} with the eight seeded
   * secret words computed once per prompt, both arrays range-checked once and block 0 peeled.
   */
  static void sequence16(int[] t, int blocks, long seed, long chainSeed, long[] out) {
    if (blocks <= 0) {
      return;
    }
    java.util.Objects.checkFromIndexSize(0, blocks * 16, t.length);
    java.util.Objects.checkFromIndexSize(0, blocks, out.length);
    if (seed == BlockHasher.SEED && chainSeed == BlockHasher.SEED && IntWords.AVAILABLE
        && sequence16Base(t, blocks, out)) {
      return;
    }
    long k0 = SECRET[0] + seed;
    long k1 = SECRET[1] - seed;
    long k2 = SECRET[2] + seed;
    long k3 = SECRET[3] - seed;
    long k4 = SECRET[4] + seed;
    long k5 = SECRET[5] - seed;
    long k6 = SECRET[6] + seed;
    long k7 = SECRET[7] - seed;
    long previous = local16(t, 0, k0, k1, k2, k3, k4, k5, k6, k7);
    out[0] = previous;
    for (int b = 1; b < blocks; b++) {
      previous = hash16(previous, local16(t, b * 16, k0, k1, k2, k3, k4, k5, k6, k7), chainSeed);
      out[b] = previous;
    }
  }

  // The eight secret words of a local hash with seed 1337: kSecret's words 0..7, +seed for even, -seed for odd
  // (package-private so that a test can pin the signs signsAsKeys relies on).
  static final long B0 = SECRET[0] + BlockHasher.SEED;
  static final long B1 = SECRET[1] - BlockHasher.SEED;
  static final long B2 = SECRET[2] + BlockHasher.SEED;
  static final long B3 = SECRET[3] - BlockHasher.SEED;
  static final long B4 = SECRET[4] + BlockHasher.SEED;
  static final long B5 = SECRET[5] - BlockHasher.SEED;
  static final long B6 = SECRET[6] + BlockHasher.SEED;
  static final long B7 = SECRET[7] - BlockHasher.SEED;

  /**
   * {@link #sequence16} for seed and chain seed {@link BlockHasher#SEED}, reading each block as eight
   * little-endian longs ({@link IntWords}) instead of packing sixteen ints; returns false, having written
   * garbage into {@code out}, when a token at an odd index is negative (the caller then runs the portable loop).
   *
   * <p>Why the sign matters: mix16B multiplies {@code a = word ^ key} by {@code b} as unsigned 128-bit numbers, which
   * Java 17 has only as a signed high product plus {@code (a >> 63) & b} and {@code (b >> 63) & a}. A word's top bit
   * is the top bit of its odd-index token, so when every such token is non-negative, {@code a >> 63} is
   * {@code key >> 63}, a constant: the two corrections fold into at most one addition per multiply. The loop checks
   * that on the XORed words it multiplies anyway (see {@link #signsAsKeys}), so the raw words need no registers of
   * their own. The caller has range-checked both arrays.
   */
  static boolean sequence16Base(int[] t, int blocks, long[] out) {
    long at = IntWords.BASE;
    long a0 = IntWords.get(t, at) ^ B0;
    long a1 = IntWords.get(t, at + 8) ^ B1;
    long acc = 64 * PRIME64_1 + mulFold(a0, a1, B0, B1);
    long a2 = IntWords.get(t, at + 16) ^ B4;
    long a3 = IntWords.get(t, at + 24) ^ B5;
    acc += mulFold(a2, a3, B4, B5);
    long a4 = IntWords.get(t, at + 32) ^ B6;
    long a5 = IntWords.get(t, at + 40) ^ B7;
    acc += mulFold(a4, a5, B6, B7);
    long a6 = IntWords.get(t, at + 48) ^ B2;
    long a7 = IntWords.get(t, at + 56) ^ B3;
    acc += mulFold(a6, a7, B2, B3);
    long ok = signsAsKeys(a0, a1, a2, a3, a4, a5, a6, a7);
    long previous = avalanche(acc);
    out[0] = previous;
    for (int b = 1; b < blocks; b++) {
      at += 64;
      // Each word XORed with its key as it is loaded (a memory operand), so that few values are live at once.
      a0 = IntWords.get(t, at) ^ B0;
      a1 = IntWords.get(t, at + 8) ^ B1;
      acc = 64 * PRIME64_1 + mulFold(a0, a1, B0, B1);
      a2 = IntWords.get(t, at + 16) ^ B4;
      a3 = IntWords.get(t, at + 24) ^ B5;
      acc += mulFold(a2, a3, B4, B5);
      a4 = IntWords.get(t, at + 32) ^ B6;
      a5 = IntWords.get(t, at + 40) ^ B7;
      acc += mulFold(a4, a5, B6, B7);
      a6 = IntWords.get(t, at + 48) ^ B2;
      a7 = IntWords.get(t, at + 56) ^ B3;
      acc += mulFold(a6, a7, B2, B3);
      ok &= signsAsKeys(a0, a1, a2, a3, a4, a5, a6, a7);
      previous = hash16(previous, avalanche(acc), BlockHasher.SEED);
      out[b] = previous;
    }
    return ok < 0;
  }

  /**
   * {@link #sequence16Base} for blocks {@code [from, to)}, {@code from >= 1}, chaining onto {@code out[from - 1]}:
   * a prompt hashed in two parts gets the hashes it would get whole. The same loop as there, kept separate: one
   * method for both (block 0 peeled when {@code from} is 0) made whole-prompt hashing 30 % slower. The caller has
   * range-checked both arrays for {@code to} blocks.
   */
  static boolean sequence16BaseFrom(int[] t, int from, int to, long[] out) {
    long at = IntWords.BASE + (from - 1) * 64L;
    long ok = -1L;
    long previous = out[from - 1];
    for (int b = from; b < to; b++) {
      at += 64;
      long a0 = IntWords.get(t, at) ^ B0;
      long a1 = IntWords.get(t, at + 8) ^ B1;
      long acc = 64 * PRIME64_1 + mulFold(a0, a1, B0, B1);
      long a2 = IntWords.get(t, at + 16) ^ B4;
      long a3 = IntWords.get(t, at + 24) ^ B5;
      acc += mulFold(a2, a3, B4, B5);
      long a4 = IntWords.get(t, at + 32) ^ B6;
      long a5 = IntWords.get(t, at + 40) ^ B7;
      acc += mulFold(a4, a5, B6, B7);
      long a6 = IntWords.get(t, at + 48) ^ B2;
      long a7 = IntWords.get(t, at + 56) ^ B3;
      acc += mulFold(a6, a7, B2, B3);
      ok &= signsAsKeys(a0, a1, a2, a3, a4, a5, a6, a7);
      previous = hash16(previous, avalanche(acc), BlockHasher.SEED);
      out[b] = previous;
    }
    return ok < 0;
  }

  /**
   * Negative exactly when each of a block's XORed words {@code a0 .. a7} (word {@code i} XORed with its key, in
   * the order {@link #sequence16Base} pairs them: keys B0, B1, B4, B5, B6, B7, B2, B3) has its key's sign, that is,
   * when every raw word, so every odd-index token, is non-negative. Of those keys B0, B6 and B2 are negative and the
   * other five non-negative ({@code SequenceHashDifferentialTest} checks the signs), so the test is that {@code a0}, {@code a4}
   * and {@code a6} are negative and the other five are not: 7 operations on values the multiplies read anyway,
   * where ORing the raw words would keep all eight alive next to them.
   */
  private static long signsAsKeys(long a0, long a1, long a2, long a3, long a4, long a5, long a6, long a7) {
    return (a0 & a4 & a6) & ~(a1 | a2 | a3 | a5 | a7);
  }

  /**
   * {@link #mul128Fold64} of {@code a = x ^ keyA} and {@code b = y ^ keyB} for non-negative {@code x} and
   * {@code y}: the signs of {@code a} and {@code b} are those of the constant keys.
   */
  private static long mulFold(long a, long b, long keyA, long keyB) {
    long low = a * b;
    long high = Math.multiplyHigh(a, b) + ((keyA >> 63) & b) + ((keyB >> 63) & a);
    return low ^ high;
  }

  /** {@link #hashInts16} with the seeded secret words given; the caller has range-checked the block. */
  private static long local16(int[] t, int o, long k0, long k1, long k2, long k3, long k4, long k5, long k6,
      long k7) {
    long acc = 64 * PRIME64_1;
    acc += mix(t[o], t[o + 1], t[o + 2], t[o + 3], k0, k1);
    acc += mix(t[o + 4], t[o + 5], t[o + 6], t[o + 7], k4, k5);
    acc += mix(t[o + 8], t[o + 9], t[o + 10], t[o + 11], k6, k7);
    acc += mix(t[o + 12], t[o + 13], t[o + 14], t[o + 15], k2, k3);
    return avalanche(acc);
  }

  private static long mix(int t0, int t1, int t2, int t3, long keyLo, long keyHi) {
    long lo = (t0 & 0xFFFFFFFFL) | ((long) t1 << 32);
    long hi = (t2 & 0xFFFFFFFFL) | ((long) t3 << 32);
    return mul128Fold64(lo ^ keyLo, hi ^ keyHi);
  }

  /** XXH3's mix16B over four ints starting at {@code at}, with secret words {@code secretWord}, +1. */
  private static long mix16(int[] t, int at, int secretWord, long seed) {
    long lo = (t[at] & 0xFFFFFFFFL) | ((long) t[at + 1] << 32);
    long hi = (t[at + 2] & 0xFFFFFFFFL) | ((long) t[at + 3] << 32);
    return mul128Fold64(lo ^ (SECRET[secretWord] + seed), hi ^ (SECRET[secretWord + 1] - seed));
  }

  /** XXH3-64 of the 16 bytes {@code first LE || second LE} with the given seed. */
  static long hash16(long first, long second, long seed) {
    long bitflip1 = (SECRET_24 ^ SECRET_32) + seed;
    long bitflip2 = (SECRET_40 ^ SECRET_48) - seed;
    long lo = first ^ bitflip1;
    long hi = second ^ bitflip2;
    long acc = 16 + Long.reverseBytes(lo) + hi + mul128Fold64(lo, hi);
    return avalanche(acc);
  }

  private static long mul128Fold64(long a, long b) {
    long low = a * b;
    long high = Math.multiplyHigh(a, b) + ((a >> 63) & b) + ((b >> 63) & a);
    return low ^ high;
  }

  private static long avalanche(long h) {
    h ^= h >>> 37;
    h *= 0x165667919E3779F9L;
    return h ^ (h >>> 32);
  }

}
