package io.kvroute.internal;

import java.time.Duration;
import java.util.Objects;

/**
 * The argument checks of every kvroute module's builders, configurations and values, each naming the field and the
 * value it refused, in one wording ({@code "maxEntries must be positive but was 0"}); stateless, thread-safe. Each
 * returns its argument, so that a setter reads {@code this.x = Checks.positive("x", x)}. Checks of a
 * {@link Duration} also refuse null, with {@link NullPointerException} naming the field.
 *
 * <p>Not API: this package is exported only to kvroute's own modules, and it may change in any release.
 */
public final class Checks {
  private Checks() {}

  /**
   * Requires a positive value.
   *
   * @param name the field, for the message
   * @param value the value
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is not positive
   */
  public static int positive(String name, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * Requires a positive value.
   *
   * @param name the field, for the message
   * @param value the value
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is not positive
   */
  public static long positive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * Requires a positive duration.
   *
   * @param name the field, for the message
   * @param value the duration
   * @return {@code value}
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is zero or negative
   */
  public static Duration positive(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /**
   * Requires a value of zero or more.
   *
   * @param name the field, for the message
   * @param value the value
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is negative
   */
  public static int notNegative(String name, int value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  /**
   * Requires a value of zero or more.
   *
   * @param name the field, for the message
   * @param value the value
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is negative
   */
  public static long notNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  /**
   * Requires a duration of zero or more.
   *
   * @param name the field, for the message
   * @param value the duration
   * @return {@code value}
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is negative
   */
  public static Duration notNegative(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  /**
   * Requires a value within bounds.
   *
   * @param name the field, for the message
   * @param value the value
   * @param min the smallest value allowed
   * @param max the largest value allowed
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is below {@code min} or above {@code max}
   */
  public static int inRange(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "] but was " + value);
    }
    return value;
  }

  /**
   * Requires a value within bounds.
   *
   * @param name the field, for the message
   * @param value the value
   * @param min the smallest value allowed
   * @param max the largest value allowed
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is below {@code min} or above {@code max}
   */
  public static long inRange(String name, long value, long min, long max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "] but was " + value);
    }
    return value;
  }

  /**
   * Requires a duration within bounds.
   *
   * @param name the field, for the message
   * @param value the duration
   * @param min the shortest duration allowed
   * @param max the longest duration allowed
   * @return {@code value}
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is shorter than {@code min} or longer than {@code max}
   */
  public static Duration inRange(String name, Duration value, Duration min, Duration max) {
    Objects.requireNonNull(value, name);
    if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
      throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "] but was " + value);
    }
    return value;
  }

  /**
   * Requires a finite number of zero or more.
   *
   * @param name the field, for the message
   * @param value the number
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is negative, NaN or infinite
   */
  public static double finiteNotNegative(String name, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and >= 0 but was " + value);
    }
    return value;
  }

  /**
   * Requires a finite positive number.
   *
   * @param name the field, for the message
   * @param value the number
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is zero, negative, NaN or infinite
   */
  public static double finitePositive(String name, double value) {
    if (!(value > 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + " must be finite and > 0 but was " + value);
    }
    return value;
  }

  /**
   * Requires a fraction.
   *
   * @param name the field, for the message
   * @param value the number
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is outside [0, 1] or NaN
   */
  public static double unitInterval(String name, double value) {
    if (!(value >= 0 && value <= 1)) {
      throw new IllegalArgumentException(name + " must be in [0, 1] but was " + value);
    }
    return value;
  }

  /**
   * Requires a string with a character other than white space.
   *
   * @param name the field, for the message
   * @param value the string
   * @return {@code value}
   * @throws NullPointerException if {@code value} is null
   * @throws IllegalArgumentException if {@code value} is empty or blank
   */
  public static String notBlank(String name, String value) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank but was '" + value + "'");
    }
    return value;
  }

  /**
   * Requires a bound on bytes to read: positive, and below {@link Long#MAX_VALUE} so that one more byte can be
   * requested to detect a larger input.
   *
   * @param name the field, for the message
   * @param value the bound
   * @return {@code value}
   * @throws IllegalArgumentException if {@code value} is not positive or is {@link Long#MAX_VALUE}
   */
  public static long byteLimit(String name, long value) {
    if (value <= 0 || value == Long.MAX_VALUE) {
      throw new IllegalArgumentException(name + " must be positive and below 2^63 - 1 but was " + value);
    }
    return value;
  }
}
