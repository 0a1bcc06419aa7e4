package io.kvroute.transport.okhttp;

import java.time.Duration;
import java.util.Objects;

/**
 * The builders' argument checks, each naming the setting and the value it refused; stateless, thread-safe. Each
 * returns its argument, so that a setter reads {@code this.x = Checks.positive("x", x)}.
 */
final class Checks {
  private Checks() {}

  /**
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is zero or negative
   */
  static Duration positive(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is negative
   */
  static Duration notNegative(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  /**
   * A bound on the bytes of a response: positive, and below {@link Long#MAX_VALUE} so that one more byte can be
   * requested to detect a larger response.
   *
   * @throws IllegalArgumentException if {@code value} is not positive or is {@link Long#MAX_VALUE}
   */
  static long byteLimit(String name, long value) {
    if (value <= 0 || value == Long.MAX_VALUE) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }
}
