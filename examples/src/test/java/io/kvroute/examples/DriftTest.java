package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DriftTest {
  @Test
  void spreadIsTheRangeOverTheMeanMagnitude() {
    // range 2, mean |v| (1 + 2 + 3) / 3 = 2
    assertEquals(1.0, Drift.spread(new double[] {1, 2, 3}), 1e-12);
    assertEquals(0.0, Drift.spread(new double[] {5, 5, 5, 5}), 0);
    // range 4, mean |v| (2 + 2) / 2 = 2
    assertEquals(2.0, Drift.spread(new double[] {-2, 2}), 1e-12);
  }

  @Test
  void anUnsetOrUnknownValueIsLeftOut() {
    assertTrue(Double.isNaN(Drift.spread(new double[] {1, Double.NaN})));
    assertTrue(Double.isNaN(Drift.spread(new double[] {1, Long.MIN_VALUE})));
  }

  @Test
  void flagsCountDisagreement() {
    assertEquals(0, Drift.disagree(new double[] {1, 1, 1}));
    assertEquals(1, Drift.disagree(new double[] {1, 0, 1}));
  }
}
