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
  }

  @Test
  void theBuildersKeepTheirMessages() {
    refused("maxPromptTokens must be positive but was 0", () -> Router.newBuilder().maxPromptTokens(0));
    refused("bookingTimeout must be positive but was PT0S", () -> Router.newBuilder().bookingTimeout(Duration.ZERO));
    refused("dataParallelRank must not be negative but was -1", () -> new WorkerId("w", -1));
    refused("minOverlapFraction must be in [0, 1] but was 2.0", () -> new CacheAffinityConfig(8, 2.0, 2.0));
  }
}
