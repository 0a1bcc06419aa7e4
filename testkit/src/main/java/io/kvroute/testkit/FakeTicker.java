package io.kvroute.testkit;

import io.kvroute.Ticker;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/** A manually advanced {@link Ticker} for tests, starting at 0; thread-safe. */
public final class FakeTicker implements Ticker {
  private final AtomicLong nanos = new AtomicLong();

  /** A ticker at 0. */
  public FakeTicker() {}

  @Override
  public long read() {
    return nanos.get();
  }

  /**
   * Moves time forward.
   *
   * @param duration how far; not negative
   * @return this ticker
   * @throws IllegalArgumentException if {@code duration} is negative
   */
  public FakeTicker advance(Duration duration) {
    Objects.requireNonNull(duration, "duration");
    if (duration.isNegative()) {
      throw new IllegalArgumentException("duration must not be negative but was " + duration);
    }
    nanos.addAndGet(duration.toNanos());
    return this;
  }

  /**
   * Moves time forward.
   *
   * @param nanoseconds how far; not negative
   * @return this ticker
   * @throws IllegalArgumentException if {@code nanoseconds} is negative
   */
  public FakeTicker advanceNanos(long nanoseconds) {
    if (nanoseconds < 0) {
      throw new IllegalArgumentException("nanoseconds must not be negative but was " + nanoseconds);
    }
    nanos.addAndGet(nanoseconds);
    return this;
  }

  @Override
  public String toString() {
    return "FakeTicker{" + nanos.get() + " ns}";
  }
}
