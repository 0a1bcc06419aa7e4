package io.kvroute;

import java.time.Duration;

/**
 * A manually advanced {@link Ticker} for tests; thread-safe. Kept for the tests that name it in this package; it
 * delegates to kvroute-testkit's {@link io.kvroute.testkit.FakeTicker}.
 */
public final class FakeTicker implements Ticker {
  private final io.kvroute.testkit.FakeTicker delegate = new io.kvroute.testkit.FakeTicker();

  @Override
  public long read() {
    return delegate.read();
  }

  /** Moves time forward. */
  public FakeTicker advance(Duration duration) {
    delegate.advance(duration);
    return this;
  }
}
