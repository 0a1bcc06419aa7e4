package io.kvroute;

/** A source of monotonic time in nanoseconds; implementations must be thread-safe. */
@FunctionalInterface
public interface Ticker {
  /**
   * Returns the current time in nanoseconds, from an arbitrary origin.
   *
   * @return nanoseconds; only differences between readings are meaningful
   */
  long read();

  /**
   * The system's monotonic clock ({@link System#nanoTime()}).
   *
   * @return a ticker reading {@link System#nanoTime()}
   */
  static Ticker systemTicker() {
    return System::nanoTime;
  }
}
