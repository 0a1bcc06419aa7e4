package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PrefixTable#match} bisects a prompt's depth over the slots holding block 0 when none of them has holes,
 * and walks it block by block otherwise. Here workers' holdings get holes the ways an engine's events make them (a
 * block removed under its live children, a sequence's tail offloaded to the host tier while its head stays on the
 * GPU, a tail stored before its head and stored again once the head is known, a removed block stored again, the
 * entry budget evicting heads first; beside them shadows promoted, tokenless offload placeholders, a worker cleared
 * or removed), and the answers must be the block-by-block definition's
 * ({@link PrefixTableMatchTest#walk}, a scan of the whole table) while the hole counts must be the ones recomputed by
 * {@link IndexInvariants}. The same cases bisected regardless of holes give wrong answers, which shows that they
 * exercise the fallback.
 */
class BisectingMatchTest {
  private static final int BLOCK = 4;
  private static final BlockHasher HASHER = BlockHasher.of(BLOCK);

  static Stream<Arguments> seeds() {
    return IntStream.range(0, 60).mapToObj(i -> Arguments.of("seed " + (700 + i), 700L + i));
  }

  /** One seeded case: an index whose workers hold three documents (sharing prefixes) with holes, and its queries. */
  private static final class Case {
    final KvIndexer index;
    final long[][] queries;
    final int[] counts;

    Case(long seed) {
      SplittableRandom random = new SplittableRandom(seed);
      // Mostly roomy (holes from events only), sometimes a budget that evicts heads first.
      int budget = random.nextInt(4) == 0 ? 1 << (8 + random.nextInt(3)) : 1 << 14;
      index = KvIndexer.newBuilder().blockSize(BLOCK).maxEntries(budget).build();
      int blocks = 2 + random.nextInt(300);
      int[][] docs = new int[3][];
      for (int d = 0; d < docs.length; d++) {
        docs[d] = Fixtures.prompt(seed * 11 + d, blocks * BLOCK);
      }
      int shared = random.nextInt(blocks + 1) * BLOCK;
      System.arraycopy(docs[0], 0, docs[1], 0, shared);
      System.arraycopy(docs[0], 0, docs[2], 0, random.nextInt(shared + 1) / BLOCK * BLOCK);
      int workers = 1 + random.nextInt(5);
      for (int w = 0; w < workers; w++) {
        WorkerId worker = WorkerId.of("w" + w);
        for (int[] doc : docs) {
          int held = random.nextInt(blocks + 1);
          if (held == 0) {
            continue;
          }
          KvEvent.BlockStored all = Fixtures.storedFor(Arrays.copyOf(doc, held * BLOCK), BLOCK, seed * 31 + w);
          long[] engine = all.blockHashes();
          int k = random.nextInt(held); // where a hole is made
          switch (random.nextInt(9)) {
            case 0: // whole, no hole
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              break;
            case 1: // a block removed under its live children
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              index.apply(worker, new KvEvent.BlockRemoved(new long[] {engine[k]}, StorageTier.GPU));
              break;
            case 2: // the tail offloaded to the host tier, then dropped from the GPU
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              if (k > 0) {
                index.apply(worker, slice(all, k, held, StorageTier.HOST));
                long[] tail = Arrays.copyOfRange(engine, k, held);
                index.apply(worker, new KvEvent.BlockRemoved(tail, StorageTier.GPU));
              }
              break;
            case 3: // the tail stored before the head (orphans), then the head, then the tail again
              if (k > 0) {
                index.apply(worker, slice(all, k, held, StorageTier.GPU));
                index.apply(worker, slice(all, 0, k, StorageTier.GPU));
              }
              index.apply(worker, slice(all, k, held, StorageTier.GPU));
              break;
            case 4: // a block removed, then stored again: the hole closes
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              index.apply(worker, new KvEvent.BlockRemoved(new long[] {engine[k]}, StorageTier.GPU));
              index.apply(worker, slice(all, k, k + 1, StorageTier.GPU));
              break;
            case 6: { // the same content under a second set of engine hashes (shadows), then the first removed
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              KvEvent.BlockStored again = Fixtures.storedFor(Arrays.copyOf(doc, held * BLOCK), BLOCK, seed * 37 + w);
              index.apply(worker, slice(again, 0, held, StorageTier.GPU));
              long[] firstCopy = Arrays.copyOfRange(engine, k, held);
              index.apply(worker, new KvEvent.BlockRemoved(firstCopy, StorageTier.GPU));
              if (random.nextBoolean()) { // and the second copy's head: its tail stays, as shadows promoted
                index.apply(worker, new KvEvent.BlockRemoved(
                    Arrays.copyOfRange(again.blockHashes(), 0, k + 1), StorageTier.GPU));
              }
              break;
            }
            case 7: // tokenless offload placeholders in the host tier for part of what the GPU holds, then the GPU's
              index.apply(worker, slice(all, 0, held, StorageTier.GPU));
              long[] offloaded = Arrays.copyOfRange(engine, k, held);
              index.apply(worker, new KvEvent.BlockStored(offloaded, k == 0 ? null : engine[k - 1], new int[0], 0,
                  null, StorageTier.HOST, null, null));
              if (random.nextBoolean()) {
                index.apply(worker, new KvEvent.BlockRemoved(offloaded, StorageTier.GPU));
              }
              break;
            default: // in pieces, each chained to the one before, some in the host tier
              for (int from = 0; from < held; ) {
                int to = Math.min(held, from + 1 + random.nextInt(40));
                index.apply(worker, slice(all, from, to, random.nextInt(3) == 0 ? StorageTier.HOST : StorageTier.GPU));
                from = to;
              }
          }
        }
      }
      if (workers > 1 && random.nextInt(4) == 0) { // a worker cleared, or removed: its holes go with it
        WorkerId gone = WorkerId.of("w" + random.nextInt(workers));
        if (random.nextBoolean()) {
          index.apply(gone, new KvEvent.AllBlocksCleared());
        } else {
          index.removeWorker(gone);
        }
      }
      queries = new long[docs.length][];
      counts = new int[docs.length];
      for (int d = 0; d < docs.length; d++) {
        queries[d] = HASHER.sequenceHashes(docs[d]);
        counts[d] = queries[d].length - random.nextInt(Math.min(queries[d].length, 4));
      }
    }
  }

  private static KvEvent.BlockStored slice(KvEvent.BlockStored all, int from, int to, StorageTier tier) {
    long[] hashes = Arrays.copyOfRange(all.blockHashes(), from, to);
    @Nullable Long parent = from == 0 ? null : all.blockHashes()[from - 1];
    int[] tokens = Arrays.copyOfRange(all.tokenIds(), from * BLOCK, to * BLOCK);
    return new KvEvent.BlockStored(hashes, parent, tokens, BLOCK, null, tier, null, null);
  }

  /** Whether a match (bisecting regardless of holes, or not) gives the definition's answers; asserts if asked. */
  private static boolean matches(Case c, int d, boolean ignoreHoles, @Nullable String name) {
    long[] query = c.queries[d];
    int count = c.counts[d];
    PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
    int touched = c.index.inspect(t -> t.match(query, count, scratch, t.slotEntries.length, ignoreHoles));
    List<int[]> expected = c.index.inspect(t -> PrefixTableMatchTest.walk(t, query, count));
    int[] slots = Arrays.copyOf(scratch.touched, touched);
    Arrays.sort(slots);
    boolean same = Arrays.equals(expected.get(0), slots);
    if (name != null) {
      assertArrayEquals(expected.get(0), slots, name + ": touched slots");
    }
    for (int slot : slots) {
      same &= expected.get(1)[slot] == scratch.depth[slot] && expected.get(2)[slot] == scratch.gpuDepth[slot];
      if (name != null) {
        assertEquals(expected.get(1)[slot], scratch.depth[slot], name + ": depth of slot " + slot);
        assertEquals(expected.get(2)[slot], scratch.gpuDepth[slot], name + ": GPU depth of slot " + slot);
      }
    }
    scratch.reset(touched);
    return same;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void matchEqualsTheBlockByBlockWalkWithHoles(String name, long seed) {
    Case c = new Case(seed);
    IndexInvariants.check(c.index); // including the hole counts
    for (int d = 0; d < c.queries.length; d++) {
      matches(c, d, false, name + ", document " + d);
    }
  }

  @Test
  void bisectingRegardlessOfHolesGivesWrongAnswersOnTheseCases() {
    int wrong = 0;
    int queries = 0;
    int bisected = 0;
    for (long seed = 700; seed < 760; seed++) {
      Case c = new Case(seed);
      for (int d = 0; d < c.queries.length; d++) {
        queries++;
        wrong += matches(c, d, true, null) ? 0 : 1;
        long[] query = c.queries[d];
        int count = c.counts[d];
        bisected += c.index.inspect(t -> {
          int[] holders = PrefixTableMatchTest.walk(t, query, count).get(0);
          return count > 1 && holders.length > 0 && Arrays.stream(holders).allMatch(s -> t.slotHoles[s] == 0);
        }) ? 1 : 0;
      }
    }
    assertTrue(wrong > 0, "bisecting over holes was right on all " + queries + " queries: the cases test nothing");
    // And the cases also take the bisecting path (block 0's holders without holes), which the test above checks.
    assertTrue(bisected >= queries / 8, bisected + " of " + queries + " queries bisected");
  }

  @Test
  void aRemovedBlockMakesAHoleThatStoringItAgainCloses() {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("w");
    int[] doc = Fixtures.prompt(42, 8 * BLOCK);
    KvEvent.BlockStored all = Fixtures.storedFor(doc, BLOCK, 7);
    long[] query = HASHER.sequenceHashes(doc);
    index.apply(worker, all);
    assertEquals(0, (int) index.inspect(t -> t.slotHoles[0]), "a whole sequence has no hole");
    assertEquals(8, index.findMatches(query).get(worker).blocks());
    index.apply(worker, new KvEvent.BlockRemoved(new long[] {all.blockHashes()[3]}, StorageTier.GPU));
    // Block 4 is held, its parent (block 3) is not: one hole; the match stops at block 3 all the same.
    assertEquals(1, (int) index.inspect(t -> t.slotHoles[0]), "block 4 without its parent");
    assertEquals(3, index.findMatches(query).get(worker).blocks());
    IndexInvariants.check(index);
    index.apply(worker, slice(all, 3, 4, StorageTier.GPU));
    assertEquals(0, (int) index.inspect(t -> t.slotHoles[0]), "block 3 stored again");
    assertEquals(8, index.findMatches(query).get(worker).blocks());
    IndexInvariants.check(index);
    index.apply(worker, new KvEvent.BlockRemoved(new long[] {all.blockHashes()[0]}, StorageTier.GPU));
    assertEquals(1, (int) index.inspect(t -> t.slotHoles[0]), "block 1 without block 0");
    assertEquals(null, index.findMatches(query).get(worker));
    IndexInvariants.check(index);
  }
}
