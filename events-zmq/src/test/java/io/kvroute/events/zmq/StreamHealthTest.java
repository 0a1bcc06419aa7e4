package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.EventStreamState;
import io.kvroute.WorkerId;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class StreamHealthTest {
  private static final WorkerId W = WorkerId.of("w");

  private static StreamHealth reading(@Nullable Duration age, long lastSequence, long purges) {
    return StreamHealth.of(W, EventStreamState.LIVE, true, age, lastSequence, false, false, false, purges);
  }

  @Test
  void theFactoryChecksItsArguments() {
    assertEquals("purges must not be negative but was -1",
        assertThrows(IllegalArgumentException.class, () -> reading(null, 3, -1)).getMessage());
    assertEquals("lastSequence must be in [-1, 9223372036854775807] but was -2",
        assertThrows(IllegalArgumentException.class, () -> reading(null, -2, 0)).getMessage());
    assertEquals("lastBatchAge must not be negative but was PT-1S",
        assertThrows(IllegalArgumentException.class, () -> reading(Duration.ofSeconds(-1), 3, 0)).getMessage());
    assertEquals("state", assertThrows(NullPointerException.class,
        () -> StreamHealth.of(W, null, true, null, -1, false, false, false, 0)).getMessage());
  }

  @Test
  void readingsAreValues() {
    assertEquals(reading(Duration.ofMillis(5), 7, 1), reading(Duration.ofMillis(5), 7, 1));
    assertEquals(reading(null, -1, 0).hashCode(), reading(null, -1, 0).hashCode());
    assertNotEquals(reading(null, -1, 0), reading(Duration.ZERO, -1, 0));
    assertNull(reading(null, -1, 0).lastBatchAge());
    assertEquals(EventStreamState.LIVE, reading(null, -1, 0).state());
  }
}
