package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.internal.Checks;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class ChecksTest {
  private static void refused(String message, Executable check) {
    assertEquals(message, assertThrows(IllegalArgumentException.class, check).getMessage());
  }

  @Test
  void eachCheckNamesTheFieldAndTheValue() {
    refused("x must be positive but was 0", () -> Checks.positive("x", 0));
    refused("x must be positive but was -1", () -> Checks.positive("x", -1));
    refused("d must be positive but was PT0S", () -> Checks.positive("d", Duration.ZERO));
    refused("d must be positive but was PT-1S", () -> Checks.positive("d", Duration.ofSeconds(-1)));
    refused("n must not be negative but was -3", () -> Checks.notNegative("n", -3));
    refused("w must be finite and >= 0 but was -0.5", () -> Checks.finiteNotNegative("w", -0.5));
    refused("w must be finite and >= 0 but was NaN", () -> Checks.finiteNotNegative("w", Double.NaN));
    refused("w must be finite and >= 0 but was Infinity",
        () -> Checks.finiteNotNegative("w", Double.POSITIVE_INFINITY));
    refused("f must be in [0, 1] but was 1.5", () -> Checks.unitInterval("f", 1.5));
    refused("f must be in [0, 1] but was NaN", () -> Checks.unitInterval("f", Double.NaN));
    refused("b must be positive but was 0", () -> Checks.positive("b", 0L));
    refused("b must not be negative but was -1", () -> Checks.notNegative("b", -1L));
    refused("d must not be negative but was PT-0.001S", () -> Checks.notNegative("d", Duration.ofMillis(-1)));
    refused("r must be in [0, 7] but was 8", () -> Checks.inRange("r", 8, 0, 7));
    refused("r must be in [1, 10] but was 0", () -> Checks.inRange("r", 0L, 1L, 10L));
    refused("t must be in [PT0.001S, PT1H] but was PT1H0.001S",
        () -> Checks.inRange("t", Duration.ofMillis(3_600_001), Duration.ofMillis(1), Duration.ofHours(1)));
    refused("s must be finite and > 0 but was 0.0", () -> Checks.finitePositive("s", 0.0));
    refused("s must be finite and > 0 but was Infinity", () -> Checks.finitePositive("s", Double.POSITIVE_INFINITY));
    refused("name must not be blank but was ' '", () -> Checks.notBlank("name", " "));
    refused("max must be positive and below 2^63 - 1 but was 9223372036854775807",
        () -> Checks.byteLimit("max", Long.MAX_VALUE));
    assertEquals("d", assertThrows(NullPointerException.class, () -> Checks.positive("d", null)).getMessage());
    assertEquals("name", assertThrows(NullPointerException.class, () -> Checks.notBlank("name", null)).getMessage());
  }

  @Test
  void theBoundsThemselvesPassAndComeBack() {
    assertEquals(1, Checks.positive("x", 1));
    Duration nano = Duration.ofNanos(1);
    assertSame(nano, Checks.positive("d", nano));
    assertEquals(0, Checks.notNegative("n", 0));
    assertEquals(0.0, Checks.finiteNotNegative("w", 0.0));
    assertEquals(0.0, Checks.unitInterval("f", 0.0));
    assertEquals(1.0, Checks.unitInterval("f", 1.0));
    assertEquals(7, Checks.inRange("r", 7, 0, 7));
    assertEquals(0, Checks.inRange("r", 0, 0, 7));
    assertSame(Duration.ZERO, Checks.notNegative("d", Duration.ZERO));
    assertEquals(Long.MAX_VALUE - 1, Checks.byteLimit("max", Long.MAX_VALUE - 1));
    assertEquals("a", Checks.notBlank("name", "a"));
  }

  @Test
  void theBuildersKeepTheirMessages() {
    refused("maxPromptTokens must be positive but was 0", () -> Router.newBuilder().maxPromptTokens(0));
    refused("bookingTimeout must be positive but was PT0S", () -> Router.newBuilder().bookingTimeout(Duration.ZERO));
    refused("dataParallelRank must not be negative but was -1", () -> new WorkerId("w", -1));
    refused("minOverlapFraction must be in [0, 1] but was 2.0", () -> new CacheAffinityConfig(8, 2.0, 2.0));
    refused("maxEntries must be in [1, 268435456] but was 0", () -> KvIndexer.newBuilder().maxEntries(0));
    refused("learningWindow must be positive but was 0", () -> new PredictedTtftConfig(0.25, 1.0, 0, 0.75));
    refused("hostOverlapCredit must be in [0, 1] but was 1.5", () -> new KvAwareConfig(1.0, 0.0, 1.5));
    refused("name must not be blank but was ''", () -> WorkerId.of(""));
    refused("running must not be negative but was -1", () -> new EngineLoad(-1, 0, 0.5, 0));
  }
}
