package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

class BlockHasherTest {
  private static final BlockHasher FOUR = BlockHasher.of(4);

  // Known answers from ../shared/reference/dynamo-kv-router.md §2.1 (Dynamo docs and python-xxhash).
  @Test
  void localHashMatchesDynamoVector() {
    assertEquals(Long.parseUnsignedLong("14643705804678351452"), FOUR.localHash(new int[] {1, 2, 3, 4}, 0, null, null));
  }

  @Test
  void secondBlockMatchesVector() {
    assertEquals(Long.parseUnsignedLong("16777012769546811212"),
        FOUR.localHash(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, 4, null, null));
  }

  @Test
  void sequenceHashChainsLikeDynamo() {
    long[] seq = FOUR.sequenceHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
    assertEquals(2, seq.length);
    assertEquals(Long.parseUnsignedLong("14643705804678351452"), seq[0]);
    assertEquals(Long.parseUnsignedLong("4945711292740353085"), seq[1]);
  }

  @Test
  void loraNameFoldsIntoSeed() {
    assertEquals(Long.parseUnsignedLong("15671544057904749233"),
        FOUR.localHash(new int[] {1, 2, 3, 4}, 0, "my-lora", null));
    long[] out = new long[1];
    FOUR.sequenceHashes(new int[] {1, 2, 3, 4}, 4, "my-lora", null, out);
    assertEquals(Long.parseUnsignedLong("15671544057904749233"), out[0]);
  }

  @Test
  void xxh3GoldenVectorsFromConventions() {
    int[] oneToSixteen = new int[16];
    for (int i = 0; i < 16; i++) {
      oneToSixteen[i] = i + 1;
    }
    assertEquals(0xd2e217905d2bda1dL, LongHashFunction.xx3(0).hashInts(oneToSixteen));
    assertEquals(0x996e0ade0c87c9c2L, LongHashFunction.xx3(42).hashInts(oneToSixteen));
  }

  @Test
  void sixteenByteFastPathEqualsGeneralXxh3() {
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 10_000; i++) {
      long a = random.nextLong();
      long b = random.nextLong();
      long seed = i % 2 == 0 ? BlockHasher.SEED : random.nextLong();
      assertEquals(LongHashFunction.xx3(seed).hashLongs(new long[] {a, b}), Xxh3.hash16(a, b, seed),
          "seed=" + seed + " a=" + a + " b=" + b);
    }
  }

  @Test
  void midSizeIntPathEqualsGeneralXxh3ForEveryLength() {
    SplittableRandom random = new SplittableRandom(11);
    for (int tokens = 5; tokens <= 32; tokens++) {
      for (int trial = 0; trial < 200; trial++) {
        int[] input = new int[tokens + 3];
        for (int i = 0; i < input.length; i++) {
          input[i] = random.nextInt();
        }
        long seed = trial % 3 == 0 ? BlockHasher.SEED : random.nextLong();
        assertEquals(LongHashFunction.xx3(seed).hashInts(input, 2, tokens), Xxh3.hashInts(input, 2, tokens, seed),
            "tokens=" + tokens + " seed=" + seed);
      }
    }
  }

  @Test
  void sixteenTokenPathEqualsGeneralXxh3() {
    SplittableRandom random = new SplittableRandom(16);
    for (int trial = 0; trial < 2_000; trial++) {
      int[] input = new int[16 + 5];
      for (int i = 0; i < input.length; i++) {
        input[i] = random.nextInt();
      }
      int offset = random.nextInt(6);
      long seed = trial % 3 == 0 ? BlockHasher.SEED : random.nextLong();
      assertEquals(LongHashFunction.xx3(seed).hashInts(input, offset, 16), Xxh3.hashInts16(input, offset, seed),
          "offset=" + offset + " seed=" + seed);
    }
  }

  @Test
  void sequenceHashesChainTheLocalHashesOfEveryBlock() {
    // The 16-token fast path of sequenceHashes against the definition: local hash per block, chained.
    SplittableRandom random = new SplittableRandom(17);
    BlockHasher hasher = BlockHasher.of(16);
    for (String lora : new String[] {null, "adapter-a"}) {
      int[] tokens = random.ints(16 * 9 + 7, 0, 128_256).toArray();
      long[] out = new long[9];
      assertEquals(9, hasher.sequenceHashes(tokens, tokens.length, lora, null, out));
      long previous = 0;
      for (int b = 0; b < 9; b++) {
        long local = hasher.localHash(tokens, b * 16, lora, null);
        if (lora == null) {
          assertEquals(LongHashFunction.xx3(BlockHasher.SEED).hashInts(tokens, b * 16, 16), local);
        }
        previous = b == 0 ? local : BlockHasher.sequenceHash(previous, local);
        assertEquals(previous, out[b], "block " + b + " lora " + lora);
      }
    }
  }

  @Test
  void partialLastBlockIsIgnored() {
    long[] full = FOUR.sequenceHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
    long[] partial = FOUR.sequenceHashes(new int[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    assertArrayEquals(full, partial);
    assertEquals(0, FOUR.sequenceHashes(new int[] {1, 2, 3}).length);
  }

  @Test
  void extraKeysChangeTheHashAndAreOrderIndependent() {
    int[] tokens = {1, 2, 3, 4};
    long plain = FOUR.localHash(tokens, 0, null, null);
    long withKeys = FOUR.localHash(tokens, 0, null, new long[] {5, 3});
    assertNotEquals(plain, withKeys);
    assertEquals(withKeys, FOUR.localHash(tokens, 0, null, new long[] {3, 5}));
    long[] out = new long[1];
    FOUR.sequenceHashes(tokens, 4, null, new long[][] {{3, 5}}, out);
    assertEquals(withKeys, out[0]);
  }

  @Test
  void blockSizeIsConfigurable() {
    int[] tokens = new int[64];
    assertEquals(4, BlockHasher.of(16).sequenceHashes(tokens).length);
    assertEquals(1, BlockHasher.of(64).sequenceHashes(tokens).length);
  }

  @Test
  void badArgumentsAreRejectedWithTheirNames() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BlockHasher.of(0));
    assertTrue(e.getMessage().contains("blockSize"), e.getMessage());
    NullPointerException npe = assertThrows(NullPointerException.class,
        () -> FOUR.sequenceHashes(null, 0, null, null, new long[1]));
    assertTrue(npe.getMessage().contains("tokens"));
    IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
        () -> FOUR.sequenceHashes(new int[8], 8, null, null, new long[1]));
    assertTrue(small.getMessage().contains("out"), small.getMessage());
    IllegalArgumentException length = assertThrows(IllegalArgumentException.class,
        () -> FOUR.sequenceHashes(new int[8], 9, null, null, new long[4]));
    assertTrue(length.getMessage().contains("length"), length.getMessage());
  }
}
