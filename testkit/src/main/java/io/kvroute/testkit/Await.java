package io.kvroute.testkit;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assertions;

/**
 * Waits for a condition that another thread makes true (an event applied, a connection made), polling every 5 ms
 * up to a deadline; stateless, thread-safe. The deadline is generous (20 s by default) because it only bounds a
 * failing test: a passing one returns as soon as the condition holds, so no test depends on timing.
 */
public final class Await {
  /** The default deadline. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);

  private Await() {}

  /**
   * Waits up to {@link #DEFAULT_TIMEOUT} for {@code condition}.
   *
   * @param condition polled until true
   * @param what describes the wait, evaluated only on failure (for example the state seen)
   * @throws InterruptedException if interrupted while waiting
   * @throws org.opentest4j.AssertionFailedError if the condition does not hold in time
   */
  public static void until(BooleanSupplier condition, Supplier<String> what) throws InterruptedException {
    until(DEFAULT_TIMEOUT, condition, what);
  }

  /**
   * Whether {@code condition} holds within {@code timeout}, polled every 5 ms: for retrying an action that a lossy
   * transport may drop (a ZeroMQ subscriber misses what is published before it connects).
   *
   * @param timeout how long to poll
   * @param condition polled until true
   * @return whether it held in time
   * @throws InterruptedException if interrupted while waiting
   */
  public static boolean within(Duration timeout, BooleanSupplier condition) throws InterruptedException {
    Objects.requireNonNull(condition, "condition");
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      Thread.sleep(5);
    }
    return true;
  }

  /**
   * Waits up to {@code timeout} for {@code condition}.
   *
   * @param timeout the deadline
   * @param condition polled until true
   * @param what describes the wait, evaluated only on failure
   * @throws InterruptedException if interrupted while waiting
   * @throws org.opentest4j.AssertionFailedError if the condition does not hold in time
   */
  public static void until(Duration timeout, BooleanSupplier condition, Supplier<String> what)
      throws InterruptedException {
    Objects.requireNonNull(what, "what");
    if (!within(timeout, condition)) {
      Assertions.fail("timed out after " + timeout + " waiting for " + what.get());
    }
  }
}
