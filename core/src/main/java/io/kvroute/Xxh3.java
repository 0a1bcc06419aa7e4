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

  private Xxh3() {}

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
