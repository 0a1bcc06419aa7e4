package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The 16-token sequence-hash loop ({@code Xxh3.sequence16}, behind {@link BlockHasher#sequenceHashes}) against an
 * independent definition: each block's local hash by the reference XXH3 ({@code zero-allocation-hashing}) over its
 * tokens, chained by the reference XXH3 over the 16 little-endian bytes {@code previous || local}, seed 1337, as
 * Dynamo does.
 */
class SequenceHashDifferentialTest {
  private static final BlockHasher HASHER = BlockHasher.of(16);
  private static final LongHashFunction CHAIN = LongHashFunction.xx3(BlockHasher.SEED);
  // Block counts of every length class: none, one, a few, a typical prompt, a long one; each with a partial tail.
  private static final int[] BLOCKS = {0, 1, 2, 3, 5, 16, 17, 128, 129, 512};

  static Stream<Arguments> seeds() {
    return IntStream.range(0, 60).mapToObj(i -> Arguments.of("seed " + (9_000 + i), 9_000L + i));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void equalsTheReferenceChainOfReferenceLocalHashes(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int blocks = BLOCKS[random.nextInt(BLOCKS.length)];
    int tail = random.nextInt(16);
    int[] tokens = new int[blocks * 16 + tail];
    boolean fullRange = random.nextBoolean(); // negative ints and the top bit too, not only vocabulary ids
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = fullRange ? random.nextInt() : random.nextInt(128_256);
    }
    String lora = random.nextInt(3) == 0 ? "lora-" + random.nextInt(1000) : null;
    long[] out = new long[blocks + random.nextInt(3)];
    assertEquals(blocks, HASHER.sequenceHashes(tokens, tokens.length, lora, null, out));
    LongHashFunction local = LongHashFunction.xx3(BlockHasher.seedFor(lora));
    long previous = 0;
    for (int b = 0; b < blocks; b++) {
      long l = local.hashInts(tokens, b * 16, 16);
      previous = b == 0 ? l : CHAIN.hashBytes(
          ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(previous).putLong(l).array());
      assertEquals(previous, out[b], name + ": block " + b + " of " + blocks + ", lora " + lora);
    }
  }

  /**
   * The router's path, which hashes block 0, tells a hook its hash, then hashes the rest: the same reference chain,
   * and the hook called once with block 0's final hash when the prompt takes the word loop (base model, no negative
   * token at an odd index), never with a LoRA adapter (those prompts are hashed whole).
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void hashingInTwoPartsEqualsTheReferenceChain(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed ^ 0x5eed);
    int blocks = BLOCKS[random.nextInt(BLOCKS.length)];
    int[] tokens = new int[blocks * 16 + random.nextInt(16)];
    boolean fullRange = random.nextInt(3) == 0;
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = fullRange ? random.nextInt() : random.nextInt(128_256);
    }
    if (!fullRange && blocks > 0 && random.nextBoolean()) {
      tokens[2 * random.nextInt(tokens.length / 2) + 1] = -1 - random.nextInt(1000); // the portable loop's case
    }
    String lora = random.nextInt(4) == 0 ? "lora-" + random.nextInt(1000) : null;
    long[] out = new long[blocks + random.nextInt(3)];
    long[] told = new long[2]; // calls, last hash
    assertEquals(blocks, HASHER.sequenceHashes(tokens, tokens.length, lora, null, out, h -> {
      told[0]++;
      told[1] = h;
    }));
    LongHashFunction local = LongHashFunction.xx3(BlockHasher.seedFor(lora));
    long previous = 0;
    for (int b = 0; b < blocks; b++) {
      long l = local.hashInts(tokens, b * 16, 16);
      previous = b == 0 ? l : CHAIN.hashBytes(
          ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(previous).putLong(l).array());
      assertEquals(previous, out[b], name + ": block " + b + " of " + blocks + ", lora " + lora);
    }
    boolean negativeOdd = false;
    for (int i = 1; i < blocks * 16; i += 2) {
      negativeOdd |= tokens[i] < 0;
    }
    assertEquals(lora == null && blocks > 0 ? 1 : 0, told[0], name + ": hook calls");
    if (told[0] == 1 && !negativeOdd) {
      assertEquals(out[0], told[1], name + ": the hook got block 0's hash");
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void equalsTheBlockByBlockPath(String name, long seed) {
    // The general path (one local hash and one chain step per call), which the loop replaced for 16-token blocks.
    SplittableRandom random = new SplittableRandom(seed);
    int blocks = 1 + random.nextInt(200);
    int[] tokens = random.ints(blocks * 16, 0, 128_256).toArray();
    long[] expected = new long[blocks];
    for (int b = 0; b < blocks; b++) {
      long l = HASHER.localHash(tokens, b * 16, null, null);
      expected[b] = b == 0 ? l : BlockHasher.sequenceHash(expected[b - 1], l);
    }
    assertArrayEquals(expected, HASHER.sequenceHashes(tokens), name);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void oneNegativeTokenAnywhereStillEqualsTheReference(String name, long seed) {
    // The base-model loop reads words and assumes non-negative odd-index tokens; one negative token (or one with
    // the top bit, a u32 id >= 2^31) at an odd index must send the prompt to the portable loop, at an even index
    // it changes nothing. Both must give the reference's hashes, for that block and every later one.
    SplittableRandom random = new SplittableRandom(seed);
    int blocks = 1 + random.nextInt(160);
    int[] tokens = random.ints(blocks * 16, 0, 128_256).toArray();
    int at = random.nextInt(tokens.length);
    tokens[at] = random.nextBoolean() ? -1 - random.nextInt(1 << 20) : Integer.MIN_VALUE | random.nextInt();
    long[] out = new long[blocks];
    HASHER.sequenceHashes(tokens, tokens.length, null, null, out);
    LongHashFunction local = LongHashFunction.xx3(BlockHasher.SEED);
    long previous = 0;
    for (int b = 0; b < blocks; b++) {
      long l = local.hashInts(tokens, b * 16, 16);
      previous = b == 0 ? l : CHAIN.hashBytes(
          ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(previous).putLong(l).array());
      assertEquals(previous, out[b], name + ": block " + b + " of " + blocks + ", negative token at " + at);
    }
  }

  @Test
  void wordReadsAreOnWhereTheyCanBe() {
    // Guards the fast path against being silently off: on a little-endian JDK older than 24 it must be available,
    // and a word must be the two ints packed little-endian.
    org.junit.jupiter.api.Assumptions.assumeTrue(
        java.nio.ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN && Runtime.version().feature() < 24
            && System.getProperty("kvroute.hash.unsafe") == null);
    org.junit.jupiter.api.Assertions.assertTrue(IntWords.AVAILABLE);
    int[] pair = {0x89abcdef, 0x01234567, -1};
    assertEquals(0x0123456789abcdefL, IntWords.get(pair, IntWords.BASE));
    assertEquals(0xffffffff01234567L, IntWords.get(pair, IntWords.BASE + 4));
  }

  @Test
  void firstBlockGivesTheGoldenXxh3Vectors() {
    // ../shared/reference/java-conventions.md B4: u32 LE [1..16] -> 0xd2e217905d2bda1d (seed 0), 0x996e0ade0c87c9c2
    // (seed 42), checked there against libxxhash.
    int[] oneToSixteen = IntStream.rangeClosed(1, 16).toArray();
    long[] out = new long[1];
    Xxh3.sequence16(oneToSixteen, 1, 0, BlockHasher.SEED, out);
    assertEquals(0xd2e217905d2bda1dL, out[0]);
    Xxh3.sequence16(oneToSixteen, 1, 42, BlockHasher.SEED, out);
    assertEquals(0x996e0ade0c87c9c2L, out[0]);
  }

  @Test
  void theWordLoopsKeySignsAreTheOnesItsCheckAssumes() {
    // Xxh3.signsAsKeys tests the XORed words against these signs: the keys of words 0, 4 and 6 (B0, B6, B2)
    // negative, those of words 1, 2, 3, 5 and 7 (B1, B4, B5, B7, B3) not. XXH3's kSecret words plus or minus 1337.
    assertEquals(0xbe4ba423396cfeb8L + 1337, Xxh3.B0);
    org.junit.jupiter.api.Assertions.assertTrue(Xxh3.B0 < 0 && Xxh3.B6 < 0 && Xxh3.B2 < 0);
    org.junit.jupiter.api.Assertions.assertTrue(
        Xxh3.B1 >= 0 && Xxh3.B4 >= 0 && Xxh3.B5 >= 0 && Xxh3.B7 >= 0 && Xxh3.B3 >= 0);
  }

  /**
   * Every token position of a block, in the first, a middle and the last block, both loops (whole and from block 1):
   * a token with its top bit set makes the word loop decline exactly when its index is odd (the top bit of its
   * word), whichever of the eight words and keys it is in, and the router's hashes equal the reference's either way.
   */
  @Test
  void theWordLoopDeclinesATopBitAtEachOddPositionOnly() {
    org.junit.jupiter.api.Assumptions.assumeTrue(IntWords.AVAILABLE);
    int blocks = 7;
    SplittableRandom random = new SplittableRandom(1313);
    LongHashFunction local = LongHashFunction.xx3(BlockHasher.SEED);
    for (int block : new int[] {0, 3, blocks - 1}) {
      for (int position = 0; position < 16; position++) {
        for (int value : new int[] {-1, Integer.MIN_VALUE, Integer.MIN_VALUE | random.nextInt()}) {
          int[] tokens = random.ints(blocks * 16, 0, 128_256).toArray();
          tokens[block * 16 + position] = value;
          String where = "block " + block + ", position " + position + ", token " + value;
          long[] whole = new long[blocks];
          assertEquals(position % 2 == 0, Xxh3.sequence16Base(tokens, blocks, whole), where + ": whole");
          long[] parts = new long[blocks];
          boolean words = Xxh3.sequence16Base(tokens, 1, parts);
          words &= Xxh3.sequence16BaseFrom(tokens, 1, blocks, parts);
          assertEquals(position % 2 == 0, words, where + ": in two parts");
          long[] out = new long[blocks];
          HASHER.sequenceHashes(tokens, tokens.length, null, null, out);
          long previous = 0;
          for (int b = 0; b < blocks; b++) {
            long l = local.hashInts(tokens, b * 16, 16);
            previous = b == 0 ? l : CHAIN.hashBytes(
                ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(previous).putLong(l).array());
            assertEquals(previous, out[b], where + ": block " + b);
            if (position % 2 == 0) { // the word loops' own hashes, when they accept the prompt
              assertEquals(previous, whole[b], where + ": word loop, block " + b);
              assertEquals(previous, parts[b], where + ": two parts, block " + b);
            }
          }
        }
      }
    }
  }
}
