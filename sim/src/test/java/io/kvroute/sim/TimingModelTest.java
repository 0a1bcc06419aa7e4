package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TimingModelTest {
  @Test
  void stepTimeFollowsTheDocumentedFormula() {
    TimingModel m = new TimingModel(2, 0.5, 0.001, 0.25, 0.01);
    // 2 + 0.5*100 + 0.001*100^2 + 0.25*4 + 0.01*1000 = 2 + 50 + 10 + 1 + 10 = 73 ms
    assertEquals(73_000_000L, m.stepNanos(100, 4, 1000));
    assertEquals(0, m.stepNanos(0, 0, 0), "an empty step takes no time");
  }

  @Test
  void cachedPrefixMakesPrefillFaster() {
    TimingModel m = TimingModel.DEFAULT;
    long cold = m.stepNanos(2371, 0, 0);
    long warm = m.stepNanos(339, 0, 0);
    assertTrue(cold > 3 * warm);
    assertTrue(m.stepNanos(0, 8, 8 * 2400) > m.stepNanos(0, 1, 2400), "decode grows with batch and KV");
  }

  @Test
  void rejectsNegativeOrNonFiniteCoefficients() {
    assertThrows(IllegalArgumentException.class, () -> new TimingModel(-1, 0, 0, 0, 0));
    assertThrows(IllegalArgumentException.class, () -> new TimingModel(0, Double.NaN, 0, 0, 0));
    assertThrows(IllegalArgumentException.class, () -> new TimingModel(0, 0, Double.POSITIVE_INFINITY, 0, 0));
  }
}
