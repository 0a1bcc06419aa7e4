package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Bounded polling for conditions reached by other threads. */
final class Await {
  private Await() {}

  static void until(BooleanSupplier condition, Supplier<String> what) {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        fail("timed out waiting for " + what.get());
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        fail("interrupted");
      }
    }
  }
}
