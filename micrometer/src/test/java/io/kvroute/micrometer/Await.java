package io.kvroute.micrometer;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Polls a condition for up to 20 s. */
final class Await {
  private Await() {}

  static void until(BooleanSupplier condition, Supplier<String> what) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what.get());
      }
      Thread.sleep(5);
    }
  }
}
