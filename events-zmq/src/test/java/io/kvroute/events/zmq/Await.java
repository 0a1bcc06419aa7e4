package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Bounded polling for conditions reached by other threads. */
final class Await {
  private Await() {}

  /** Whether {@code condition} holds within {@code timeout}: for retrying an action a lossy transport may drop. */
  static boolean within(Duration timeout, BooleanSupplier condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        return false;
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  static void until(BooleanSupplier condition, Supplier<String> what) {
    if (!within(Duration.ofSeconds(30), condition)) {
      fail(Thread.currentThread().isInterrupted() ? "interrupted" : "timed out waiting for " + what.get());
    }
  }
}
