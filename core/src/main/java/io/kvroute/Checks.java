package io.kvroute;

import java.time.Duration;

/**
 * Argument checks for builders, configurations and values, each naming the field and the value it refused, in one
 * wording ({@code "maxEntries must be positive but was 0"}); stateless, thread-safe. Each returns its argument, so
 * that a setter reads {@code this.x = Checks.positive("x", x)}.
 */
final class Checks {
  private Checks() {}

  /**
   * @throws IllegalArgumentException if {@code value} is not positive
   */
  static int positive(String name, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * @throws IllegalArgumentException if {@code value} is zero or negative
   */
  static Duration positive(String name, Duration value) {
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * @throws IllegalArgumentException if {@code value} is negative
   */
  static int notNegative(String name, int value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  /**
   * @throws IllegalArgumentException if {@code value} is negative, NaN or infinite
   */
  static double finiteNotNegative(String name, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and >= 0 but was " + value);
    }
    return value;
  }

  /**
   * @throws IllegalArgumentException if {@code value} is outside [0, 1] or NaN
   */
  static double unitInterval(String name, double value) {
    if (!(value >= 0 && value <= 1)) {
      throw new IllegalArgumentException(name + " must be in [0, 1] but was " + value);
    }
    return value;
  }
}
