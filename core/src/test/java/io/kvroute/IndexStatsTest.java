package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class IndexStatsTest {
  private static IndexStats withEntries(long entries, Map<WorkerId, Long> perWorker) {
    return IndexStats.of(entries, perWorker, 64, 1000, 2560, 7, 1, 0, 0, 0, 0, 0, 0);
  }

  @Test
  void theFactoryChecksEachCountAndNamesIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> IndexStats.of(0, Map.of(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1));
    assertEquals("evictedEntries must not be negative but was -1", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> withEntries(-2, Map.of()));
    assertEquals("entries must not be negative but was -2", e.getMessage());
    assertEquals("entriesPerWorker",
        assertThrows(NullPointerException.class, () -> withEntries(0, null)).getMessage());
  }

  @Test
  void aReadingIsAValueThatKeepsNoReferenceToTheCallersMap() {
    Map<WorkerId, Long> perWorker = new HashMap<>(Map.of(WorkerId.of("a"), 40L));
    IndexStats stats = withEntries(40, perWorker);
    perWorker.put(WorkerId.of("b"), 1L);
    assertEquals(Map.of(WorkerId.of("a"), 40L), stats.entriesPerWorker());
    assertEquals(withEntries(40, Map.of(WorkerId.of("a"), 40L)), stats);
    assertEquals(withEntries(40, Map.of(WorkerId.of("a"), 40L)).hashCode(), stats.hashCode());
    assertNotEquals(withEntries(41, Map.of(WorkerId.of("a"), 40L)), stats);
    assertEquals(2560.0 / 40, stats.bytesPerEntry());
    assertEquals(0.0, withEntries(0, Map.of()).bytesPerEntry());
    assertEquals(true, stats.toString().startsWith("IndexStats[entries=40, entriesPerWorker={"), stats.toString());
  }

  @Test
  void theIndexReportsThroughTheFactory() {
    KvIndexer index = KvIndexer.newBuilder().blockSize(4).build();
    WorkerId a = WorkerId.of("a");
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    index.apply(a, KvEvent.BlockStored.of(new long[] {11, 12}, null, tokens, 4));
    IndexStats stats = index.stats();
    assertEquals(2, stats.entries());
    assertEquals(Map.of(a, 2L), stats.entriesPerWorker());
    assertEquals(2, stats.storedBlocks());
    assertEquals(stats, index.stats(), "two readings of an unchanged index are equal values");
  }
}
