package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KvIndexerTest {
  private static final WorkerId W = WorkerId.of("w");
  private final List<String> reports = new ArrayList<>();
  private final IndexListener recorder = new IndexListener() { // a plain index listener: no router involved
    @Override
    public void onOrphanBlocks(WorkerId worker, int blocks) {
      reports.add("orphan " + blocks);
    }

    @Override
    public void onBlockSizeMismatch(WorkerId worker, int expected, int actual, int blocks) {
      reports.add("mismatch " + expected + "/" + actual + " " + blocks);
    }

    @Override
    public void onInvalidEvent(WorkerId worker, KvEvent event, String reason) {
      reports.add("invalid " + reason);
    }

    @Override
    public void onUnknownRemoval(WorkerId worker, int blocks) {
      reports.add("unknown " + blocks);
    }

    @Override
    public void onIndexEviction(int entries) {
      reports.add("evicted " + entries);
    }
  };

  private KvIndexer index(int maxEntries) {
    return KvIndexer.newBuilder().blockSize(16).maxEntries(maxEntries).listener(recorder).build();
  }

  @Test
  void childrenChainOntoTheirParentsRouterHash() {
    KvIndexer index = index(1000);
    int[] prompt = Fixtures.prompt(1, 64);
    KvEvent.BlockStored all = Fixtures.storedFor(prompt, 16, 9);
    long[] h = all.blockHashes();
    index.apply(W, KvEvent.BlockStored.of(Arrays.copyOf(h, 2), null, Arrays.copyOf(prompt, 32), 16));
    index.apply(W, KvEvent.BlockStored.of(Arrays.copyOfRange(h, 2, 4), h[1], Arrays.copyOfRange(prompt, 32, 64), 16));
    assertEquals(Map.of(W, new PrefixMatch(4, 4)), index.findMatches(BlockHasher.of(16).sequenceHashes(prompt)));
    assertTrue(reports.isEmpty(), reports.toString());
  }

  @Test
  void unknownParentIsReportedAndNeverMatches() {
    KvIndexer index = index(1000);
    int[] prompt = Fixtures.prompt(2, 64);
    long[] h = Fixtures.storedFor(prompt, 16, 9).blockHashes();
    index.apply(W, KvEvent.BlockStored.of(Arrays.copyOfRange(h, 2, 4), 12345L, Arrays.copyOfRange(prompt, 32, 64),
        16));
    assertEquals(List.of("orphan 2"), reports);
    assertEquals(2, index.stats().orphanBlocks());
    assertEquals(Map.of(), index.findMatches(BlockHasher.of(16).sequenceHashes(prompt)));
    index.apply(W, KvEvent.BlockRemoved.of(h[2], h[3]));
    assertEquals(0, index.stats().entries(), "orphans' removals resolve");
    assertEquals(0, index.stats().unknownRemovals());
  }

  @Test
  void mismatchedBlockSizeIsReportedAndDropped() {
    KvIndexer index = index(1000);
    int[] prompt = Fixtures.prompt(3, 64);
    index.apply(W, Fixtures.storedFor(prompt, 32, 1));
    assertEquals(List.of("mismatch 16/32 2"), reports);
    assertEquals(0, index.stats().entries());
    assertEquals(2, index.stats().mismatchedBlocks());
  }

  @Test
  void malformedEventsAreDroppedWhole() {
    KvIndexer index = index(1000);
    index.apply(W, KvEvent.BlockStored.of(new long[] {1, 2}, null, new int[20], 16));
    index.apply(W, KvEvent.BlockStored.of(new long[] {1, 1}, null, new int[32], 16));
    index.apply(W, KvEvent.BlockStored.of(new long[] {5}, 5L, new int[16], 16));
    assertEquals(3, index.stats().invalidEvents());
    assertEquals(0, index.stats().entries());
    assertTrue(reports.get(0).contains("token_ids has 20 tokens"), reports.get(0));
    assertTrue(reports.get(1).contains("repeats"), reports.get(1));
    assertTrue(reports.get(2).contains("parent"), reports.get(2));
  }

  @Test
  void repeatedHashesAreFoundInLongEventsToo() {
    KvIndexer index = index(1000);
    KvEvent.BlockStored ok = Fixtures.storedFor(Fixtures.prompt(11, 40 * 16), 16, 1);
    long[] hashes = ok.blockHashes().clone();
    hashes[37] = hashes[3];
    index.apply(W, KvEvent.BlockStored.of(hashes, null, ok.tokenIds(), 16));
    assertEquals(1, index.stats().invalidEvents());
    index.apply(W, ok);
    assertEquals(40, index.stats().entries());
  }

  @Test
  void duplicateStoresAreReferenceCounted() {
    KvIndexer index = index(1000);
    KvEvent.BlockStored stored = Fixtures.storedFor(Fixtures.prompt(4, 32), 16, 1);
    index.apply(W, stored);
    index.apply(W, stored);
    index.apply(W, KvEvent.BlockRemoved.of(stored.blockHashes()));
    assertEquals(2, index.stats().entries());
    index.apply(W, KvEvent.BlockRemoved.of(stored.blockHashes()));
    assertEquals(0, index.stats().entries());
    index.apply(W, KvEvent.BlockRemoved.of(stored.blockHashes()));
    assertEquals(List.of("unknown 2"), reports);
  }

  @Test
  void tiersAreTrackedSeparately() {
    KvIndexer index = index(1000);
    int[] prompt = Fixtures.prompt(5, 64);
    KvEvent.BlockStored gpu = Fixtures.storedFor(prompt, 16, 1);
    index.apply(W, gpu);
    index.apply(W, new KvEvent.BlockStored(gpu.blockHashes(), null, new int[0], 0, null, StorageTier.HOST, null,
        null)); // offloaded copy without tokens
    index.apply(W, new KvEvent.BlockRemoved(Arrays.copyOfRange(gpu.blockHashes(), 1, 4), StorageTier.GPU));
    assertEquals(Map.of(W, new PrefixMatch(4, 1)), index.findMatches(BlockHasher.of(16).sequenceHashes(prompt)));
    assertEquals(StorageTier.HOST, index.findMatches(BlockHasher.of(16).sequenceHashes(prompt)).get(W).tier());
  }

  @Test
  void slidingWindowGroupsAreIgnored() {
    KvIndexer index = index(1000);
    KvEvent.BlockStored s = Fixtures.storedFor(Fixtures.prompt(6, 32), 16, 1);
    index.apply(W, new KvEvent.BlockStored(s.blockHashes(), null, s.tokenIds(), 16, null, StorageTier.GPU,
        "sliding_window", null));
    assertEquals(0, index.stats().entries());
    assertEquals(2, index.stats().ignoredBlocks());
  }

  @Test
  void budgetDropsTheLeastRecentlyStoredFirst() {
    KvIndexer index = index(8);
    int[] older = Fixtures.prompt(7, 64);
    int[] newer = Fixtures.prompt(8, 64);
    index.apply(W, Fixtures.storedFor(older, 16, 1));
    index.apply(W, Fixtures.storedFor(newer, 16, 1));
    index.apply(W, Fixtures.storedFor(older, 16, 1)); // refreshes the older prompt
    int[] third = Fixtures.prompt(9, 32);
    index.apply(W, Fixtures.storedFor(third, 16, 1));
    assertEquals(8, index.stats().entries());
    assertEquals(2, index.stats().evictedEntries());
    assertEquals(List.of("evicted 2"), reports);
    BlockHasher hasher = BlockHasher.of(16);
    assertEquals(4, index.findMatches(hasher.sequenceHashes(older)).get(W).blocks());
    assertEquals(2, index.findMatches(hasher.sequenceHashes(third)).get(W).blocks());
    assertEquals(Map.of(), index.findMatches(hasher.sequenceHashes(newer)), "the newer prompt's head went first");
    IndexInvariants.check(index);
  }

  @Test
  void statsEstimateAboutSeventyTwoBytesPerEntryWhenFull() {
    KvIndexer index = KvIndexer.newBuilder().maxEntries(1 << 16).build();
    for (int p = 0; index.stats().entries() < (1 << 16); p++) {
      index.apply(WorkerId.of("w" + (p % 8)), Fixtures.storedFor(Fixtures.prompt(p, 1024), 16, p));
    }
    IndexStats stats = index.stats();
    assertEquals(1 << 16, stats.entries());
    // Per entry: 5 longs of table (40 B), its parent's sequence hash (8 B), two ints of engine-chain heads (8 B)
    // and two sequence probe slots of a long each (16 B), plus one spare slot for the whole table.
    assertEquals(72.0 + 8.0 / (1 << 16), stats.bytesPerEntry(), 1e-9, "bytes per entry");
    assertEquals(8, stats.entriesPerWorker().size());
  }

  @Test
  void clearingAndRemovingWorkersScopesToTheWorkerAndRank() {
    KvIndexer index = index(1000);
    WorkerId rank1 = W.withRank(1);
    KvEvent.BlockStored s = Fixtures.storedFor(Fixtures.prompt(10, 64), 16, 1);
    index.apply(W, s);
    index.apply(rank1, s);
    index.apply(rank1, KvEvent.AllBlocksCleared.INSTANCE);
    assertEquals(4, index.entriesOf(W));
    assertEquals(0, index.entriesOf(rank1));
    assertTrue(index.removeWorker(W));
    assertEquals(0, index.stats().entries());
  }

  @Test
  void builderValidatesByName() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> KvIndexer.newBuilder().maxEntries(0))
        .getMessage().contains("maxEntries"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> KvIndexer.newBuilder().blockSize(-4))
        .getMessage().contains("blockSize"));
    assertTrue(assertThrows(NullPointerException.class, () -> index(10).apply(null, KvEvent.AllBlocksCleared.INSTANCE))
        .getMessage().contains("worker"));
    assertTrue(assertThrows(NullPointerException.class, () -> KvEvent.BlockStored.of(null, null, new int[0], 16))
        .getMessage().contains("blockHashes"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> KvEvent.BlockStored.of(new long[0], null,
        new int[0], -1)).getMessage().contains("blockSize"));
  }
}
