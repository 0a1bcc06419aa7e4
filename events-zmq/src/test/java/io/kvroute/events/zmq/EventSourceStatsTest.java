package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class EventSourceStatsTest {
  private static EventSourceStats reading(long batches, long strayBatches) {
    return EventSourceStats.of(batches, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, strayBatches);
  }

  @Test
  void theFactoryChecksEachCountAndNamesIt() {
    assertEquals("strayBatches must not be negative but was -1",
        assertThrows(IllegalArgumentException.class, () -> reading(1, -1)).getMessage());
    assertEquals("batches must not be negative but was -5",
        assertThrows(IllegalArgumentException.class, () -> reading(-5, 0)).getMessage());
  }

  @Test
  void readingsAreValues() {
    assertEquals(reading(2, 1), reading(2, 1));
    assertEquals(reading(2, 1).hashCode(), reading(2, 1).hashCode());
    assertNotEquals(reading(2, 1), reading(2, 0));
    assertEquals(2, reading(2, 1).batches());
    assertEquals(4, reading(2, 1).storedBlocks());
    assertEquals(true, reading(2, 1).toString().startsWith("EventSourceStats[batches=2, events=3, storedBlocks=4"));
  }
}
