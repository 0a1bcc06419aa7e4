package io.kvroute;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A manually advanced {@link Ticker} for tests; thread-safe. */
public final class FakeTicker implements Ticker {
  private final AtomicLong nanos = new AtomicLong();

  @Override
  public long read() {
    return nanos.get();
  }

  /** Moves time forward. */
  public FakeTicker advance(Duration duration) {
    nanos.addAndGet(duration.toNanos());
    return this;
  }
}
