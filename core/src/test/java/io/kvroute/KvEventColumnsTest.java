package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The columns' own contract: what is committed is what {@link KvEventColumns#event} gives back. */
class KvEventColumnsTest {
  @Test
  void committedEventsComeBackAsTheEventsTheyDescribe() {
    KvEventColumns columns = new KvEventColumns();
    columns.appendHash(1);
    columns.appendHash(2);
    for (int t = 0; t < 8; t++) {
      columns.appendToken(t);
    }
    columns.commitStored(true, 9, 4, StorageTier.HOST, "lora", "full_attention", new long[][] {{5}}, 3);
    columns.appendHash(7);
    columns.appendToken(99); // a removal's tokens are dropped
    columns.commitRemoved(StorageTier.GPU, -1);
    columns.appendHash(8);
    columns.commitCleared(0); // so are a clear's hashes
    assertEquals(3, columns.size());
    KvEvent.BlockStored stored = (KvEvent.BlockStored) columns.event(0);
    assertEquals(new KvEvent.BlockStored(new long[] {1, 2}, 9L, new int[] {0, 1, 2, 3, 4, 5, 6, 7}, 4, "lora",
        StorageTier.HOST, "full_attention", new long[][] {{5}}), stored);
    assertEquals(KvEvent.BlockRemoved.of(7), columns.event(1));
    assertSame(KvEvent.AllBlocksCleared.INSTANCE, columns.event(2));
    assertEquals(List.of(3, -1, 0), List.of(columns.group(0), columns.group(1), columns.group(2)));
    assertEquals(List.of(2, 1, 0), List.of(columns.blocks(0), columns.blocks(1), columns.blocks(2)));
    assertThrows(IndexOutOfBoundsException.class, () -> columns.event(3));
  }

  @Test
  void discardingTheOpenEventKeepsTheCommittedOnes() {
    KvEventColumns columns = new KvEventColumns();
    columns.add(KvEvent.BlockRemoved.of(1, 2));
    columns.appendHash(3);
    columns.appendToken(4);
    assertEquals(1, columns.openHashes());
    columns.discardOpen();
    assertEquals(0, columns.openHashes() + columns.openTokens());
    columns.appendHash(5);
    columns.commitRemoved(StorageTier.GPU, -1);
    assertEquals(List.of(KvEvent.BlockRemoved.of(1, 2), KvEvent.BlockRemoved.of(5)), columns.toEvents());
  }

  @Test
  void removeIfKeepsTheOthersInOrderAndGrowsPastItsFirstCapacity() {
    KvEventColumns columns = new KvEventColumns();
    List<KvEvent> kept = new ArrayList<>();
    boolean[] drop = new boolean[100];
    for (int i = 0; i < 100; i++) { // beyond the initial 16 events and 4,096 tokens
      int[] tokens = Fixtures.prompt(i, 64);
      KvEvent.BlockStored event = Fixtures.storedFor(tokens, 16, i);
      columns.add(event);
      drop[i] = i % 3 == 0;
      if (!drop[i]) {
        kept.add(event);
      }
    }
    columns.removeIf(drop);
    assertEquals(kept, columns.toEvents());
    columns.clear();
    assertEquals(0, columns.size());
  }

  @Test
  void aSinkWithoutItsOwnColumnPathGetsTheEventsAsObjects() {
    List<KvEvent> received = new ArrayList<>();
    KvEventSink sink = (worker, event) -> received.add(event);
    KvEventColumns columns = new KvEventColumns();
    columns.add(KvEvent.BlockRemoved.of(4));
    columns.appendHash(6);
    columns.commitRemoved(StorageTier.GPU, -1);
    sink.applyColumns(WorkerId.of("w"), columns);
    assertEquals(List.of(KvEvent.BlockRemoved.of(4), KvEvent.BlockRemoved.of(6)), received);
  }
}
