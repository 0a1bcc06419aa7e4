package io.kvroute.testkit;

import io.kvroute.Ticker;
import io.kvroute.internal.Checks;
import java.time.Duration;
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
    Checks.notNegative("duration", duration);
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
    Checks.notNegative("nanoseconds", nanoseconds);
    nanos.addAndGet(nanoseconds);
    return this;
  }

  @Override
  public String toString() {
    return "FakeTicker{" + nanos.get() + " ns}";
  }
}
