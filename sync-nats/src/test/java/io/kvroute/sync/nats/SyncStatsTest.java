package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SyncStatsTest {
  private static SyncStats reading(long framesSent, boolean connected, Map<String, Long> peers) {
    return SyncStats.of(9, framesSent, 100, 2, 50, 0, 0, 1, connected, peers, 0, 0);
  }

  @Test
  void theFactoryChecksEachCountAndNamesIt() {
    assertEquals("framesSent must not be negative but was -1",
        assertThrows(IllegalArgumentException.class, () -> reading(-1, true, Map.of())).getMessage());
    assertEquals("peers", assertThrows(NullPointerException.class, () -> reading(1, true, null)).getMessage());
  }

  @Test
  void readingsAreValuesThatKeepNoReferenceToTheCallersMap() {
    Map<String, Long> peers = new HashMap<>(Map.of("replica-b", 7L));
    SyncStats stats = reading(3, true, peers);
    peers.clear();
    assertEquals(Map.of("replica-b", 7L), stats.peers());
    assertEquals(reading(3, true, Map.of("replica-b", 7L)), stats);
    assertEquals(reading(3, true, Map.of("replica-b", 7L)).hashCode(), stats.hashCode());
    assertNotEquals(reading(3, false, Map.of("replica-b", 7L)), stats);
    assertEquals(true, stats.connected());
  }
}
