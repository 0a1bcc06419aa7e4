package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PrefixTable#match}, which gathers probe-slot reads in chunks (1, 16, then 128 blocks), against the
 * definition walked block by block (every chained entry of each block, found by scanning the whole table, stopping
 * at the first block no slot extends): the same depths, GPU depths and touched slots, on prompts spanning several
 * chunks, held to different depths by several workers in two tiers, over tables full enough for long probe runs.
 */
class PrefixTableMatchTest {
  private static final int BLOCK = 4;
  private static final BlockHasher HASHER = BlockHasher.of(BLOCK);

  static Stream<Arguments> seeds() {
    return IntStream.range(0, 40).mapToObj(i -> Arguments.of("seed " + (500 + i), 500L + i));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void gatheredMatchEqualsTheBlockByBlockWalk(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int budget = 1 << (10 + random.nextInt(4));
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).maxEntries(budget).build();
    int workers = 1 + random.nextInt(6);
    int blocks = 1 + random.nextInt(400); // 1 to 3 chunks of 128 after block 0
    int[][] docs = new int[3][];
    for (int d = 0; d < docs.length; d++) {
      docs[d] = Fixtures.prompt(seed * 7 + d, blocks * BLOCK);
    }
    // Documents sharing a prefix: doc 1 starts with part of doc 0.
    int shared = random.nextInt(blocks + 1) * BLOCK;
    System.arraycopy(docs[0], 0, docs[1], 0, shared);
    for (int w = 0; w < workers; w++) {
      WorkerId worker = WorkerId.of("w" + w);
      for (int[] doc : docs) {
        int held = random.nextInt(blocks + 1);
        if (held > 0) {
          KvEvent.BlockStored all = Fixtures.storedFor(Arrays.copyOf(doc, held * BLOCK), BLOCK, seed * 31 + w);
          StorageTier tier = random.nextInt(3) == 0 ? StorageTier.HOST : StorageTier.GPU;
          index.apply(worker, new KvEvent.BlockStored(all.blockHashes(), null, all.tokenIds(), BLOCK, null, tier,
              null, null));
        }
      }
      // Noise: other content filling the buckets, for longer chains.
      for (int k = 0; k < budget / (workers * 8); k++) {
        index.apply(worker, Fixtures.storedFor(Fixtures.prompt(random.nextLong(), 8 * BLOCK), BLOCK, w));
      }
    }
    for (int[] doc : docs) {
      long[] query = HASHER.sequenceHashes(doc);
      int count = random.nextInt(query.length + 1);
      PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
      int touched = index.matchLocked(query, count, scratch);
      int[] touchedSlots = Arrays.copyOf(scratch.touched, touched);
      List<int[]> expected = index.inspect(t -> walk(t, query, count));
      int[] sortedSlots = touchedSlots.clone();
      Arrays.sort(sortedSlots);
      assertArrayEquals(expected.get(0), sortedSlots, name + ": touched slots (each once)");
      for (int slot : touchedSlots) {
        assertEquals(expected.get(1)[slot], scratch.depth[slot], name + ": depth of slot " + slot);
        assertEquals(expected.get(2)[slot], scratch.gpuDepth[slot], name + ": GPU depth of slot " + slot);
      }
      scratch.reset(touched);
      for (int s = 0; s < scratch.depth.length; s++) {
        assertEquals(0, scratch.depth[s] | scratch.gpuDepth[s], "reset clears slot " + s);
      }
    }
  }

  static Stream<Arguments> tierSeeds() {
    return IntStream.range(0, 30).mapToObj(i -> Arguments.of("seed " + (900 + i), 900L + i));
  }

  /**
   * The walk stops reading a block's run once every worker still matching has advanced (in any tier and, for those
   * still matching on the GPU, on the GPU): here workers hold one document in both tiers to different depths, the
   * host copy often stored first (so that it comes first in the run and the GPU copy after it), beside workers that
   * hold shorter or longer prefixes of it, in tables full enough for long runs. The answers must be the definition's.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("tierSeeds")
  void aWorkersCopiesInBothTiersAreAllCounted(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int budget = 1 << (9 + random.nextInt(3));
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).maxEntries(budget).build();
    int blocks = 1 + random.nextInt(200);
    int[] doc = Fixtures.prompt(seed * 13, blocks * BLOCK);
    int workers = 1 + random.nextInt(5);
    for (int w = 0; w < workers; w++) {
      WorkerId worker = WorkerId.of("w" + w);
      // Noise first, so that the document's entries land in runs that other content has started.
      for (int k = 0; k < budget / (workers * 16); k++) {
        index.apply(worker, Fixtures.storedFor(Fixtures.prompt(random.nextLong(), 4 * BLOCK), BLOCK, w + 100));
      }
      StorageTier first = random.nextInt(4) == 0 ? StorageTier.GPU : StorageTier.HOST;
      StorageTier second = first == StorageTier.GPU ? StorageTier.HOST : StorageTier.GPU;
      for (StorageTier tier : new StorageTier[] {first, second}) {
        int held = random.nextInt(blocks + 1);
        if (held > 0) {
          KvEvent.BlockStored all = Fixtures.storedFor(Arrays.copyOf(doc, held * BLOCK), BLOCK,
              seed * 31 + w * 2 + tier.ordinal());
          index.apply(worker, new KvEvent.BlockStored(all.blockHashes(), null, all.tokenIds(), BLOCK, null, tier,
              null, null));
        }
      }
    }
    long[] query = HASHER.sequenceHashes(doc);
    int count = query.length - random.nextInt(Math.min(query.length, 3));
    PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
    int touched = index.matchLocked(query, count, scratch);
    List<int[]> expected = index.inspect(t -> walk(t, query, count));
    int[] sortedSlots = Arrays.copyOf(scratch.touched, touched);
    Arrays.sort(sortedSlots);
    assertArrayEquals(expected.get(0), sortedSlots, name + ": touched slots");
    for (int slot : sortedSlots) {
      assertEquals(expected.get(1)[slot], scratch.depth[slot], name + ": depth of slot " + slot);
      assertEquals(expected.get(2)[slot], scratch.gpuDepth[slot], name + ": GPU depth of slot " + slot);
    }
    scratch.reset(touched);
  }

  /**
   * The definition, independent of the lookup structure: block by block, every live entry of the table that is
   * neither an orphan nor a shadow and holds the block's sequence hash, in table order; returns touched slots (in
   * ascending order), depths and GPU depths.
   */
  static List<int[]> walk(PrefixTable t, long[] hashes, int count) {
    int[] depth = new int[1 << 10];
    int[] gpuDepth = new int[1 << 10];
    List<Integer> touched = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      boolean advanced = false;
      for (int e = 0; e < t.highWater; e++) {
        int base = e * PrefixTable.STRIDE;
        long m = t.table[base + PrefixTable.META];
        if ((m & PrefixTable.REFCOUNT_MASK) == 0 || (m & (PrefixTable.ORPHAN | PrefixTable.SHADOW)) != 0) {
          continue;
        }
        if (t.table[base + PrefixTable.SEQ] == hashes[i]) {
          int slotTier = (int) (t.table[base + PrefixTable.META] >>> 32);
          int slot = slotTier / PrefixTable.TIERS;
          if (depth[slot] == i) {
            if (i == 0) {
              touched.add(slot);
            }
            depth[slot] = i + 1;
            advanced = true;
          }
          if (slotTier % PrefixTable.TIERS == 0 && gpuDepth[slot] == i) {
            gpuDepth[slot] = i + 1;
          }
        }
      }
      if (!advanced) {
        break;
      }
    }
    return List.of(touched.stream().mapToInt(Integer::intValue).sorted().toArray(), depth, gpuDepth);
  }
}
