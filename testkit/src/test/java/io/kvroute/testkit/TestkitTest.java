package io.kvroute.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import io.kvroute.BlockHasher;
import io.kvroute.KvEvent;
import io.kvroute.RouterPolicy;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;
import org.opentest4j.AssertionFailedError;

class TestkitTest {
  /** A policy that breaks the contract: it names a candidate that does not exist. */
  static class OutOfRangePolicyContract extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return c -> c.size();
    }
  }

  /** A policy that keeps it: always the first candidate. */
  static class FirstPolicyContract extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return c -> 0;
    }
  }

  private static Events run(Class<?> contract) {
    return EngineTestKit.engine("junit-jupiter").selectors(selectClass(contract)).execute().testEvents();
  }

  @Test
  void theContractFailsABrokenPolicyAndPassesAValidOne() {
    Events broken = run(OutOfRangePolicyContract.class);
    assertEquals(16, broken.started().count());
    assertEquals(16, broken.failed().count());
    Events valid = run(FirstPolicyContract.class);
    assertEquals(16, valid.started().count());
    assertEquals(16, valid.succeeded().count());
  }

  @Test
  void theTickerMovesOnlyWhenAdvanced() {
    FakeTicker ticker = new FakeTicker();
    assertEquals(0, ticker.read());
    assertEquals(1_500_000_000L, ticker.advance(Duration.ofMillis(1500)).read());
    assertEquals(1_500_000_007L, ticker.advanceNanos(7).read());
    assertThrows(IllegalArgumentException.class, () -> ticker.advance(Duration.ofNanos(-1)));
    assertThrows(IllegalArgumentException.class, () -> ticker.advanceNanos(-1));
  }

  @Test
  void awaitReturnsWhenTheConditionHoldsAndFailsWhenItNeverDoes() throws InterruptedException {
    AtomicInteger polls = new AtomicInteger();
    Await.until(() -> polls.incrementAndGet() >= 3, () -> "three polls");
    assertEquals(3, polls.get());
    AssertionFailedError e = assertThrows(AssertionFailedError.class,
        () -> Await.until(Duration.ofMillis(20), () -> false, () -> "state: never"));
    assertEquals(true, e.getMessage().contains("state: never"), e.getMessage());
  }

  @Test
  void withinSaysWhetherTheConditionHeldInTime() throws InterruptedException {
    AtomicInteger polls = new AtomicInteger();
    assertTrue(Await.within(Duration.ofSeconds(20), () -> polls.incrementAndGet() >= 3));
    assertEquals(3, polls.get(), "returns at the first poll that holds");
    AtomicInteger never = new AtomicInteger();
    assertFalse(Await.within(Duration.ofMillis(20), () -> never.incrementAndGet() < 0));
    assertTrue(never.get() >= 2, "polled until the deadline, then once more: " + never.get());
  }

  @Test
  void fixturesAreSeededAndEventsMatchTheRoutersHashes() {
    assertEquals(java.util.Arrays.toString(Fixtures.prompt(3, 50)), java.util.Arrays.toString(Fixtures.prompt(3, 50)));
    assertNotEquals(java.util.Arrays.toString(Fixtures.prompt(3, 50)),
        java.util.Arrays.toString(Fixtures.prompt(4, 50)));
    int[] tokens = Fixtures.prompt(9, 40);
    KvEvent.BlockStored stored = Fixtures.storedFor(tokens, 16, 5);
    assertEquals(2, stored.blockHashes().length); // full blocks only
    long[] seq = BlockHasher.of(16).sequenceHashes(tokens);
    assertEquals(Fixtures.engineHash(5, seq[1]), stored.blockHashes()[1]);
    assertNotEquals(Fixtures.engineHash(6, seq[1]), stored.blockHashes()[1]);
    assertEquals(90, Fixtures.concat(Fixtures.prompt(1, 40), Fixtures.prompt(2, 50)).length);
    // Mutation audit: an engine's BlockStored carries the token ids of its full blocks only (40 tokens: 2 x 16).
    assertEquals(java.util.Arrays.toString(java.util.Arrays.copyOf(tokens, 32)),
        java.util.Arrays.toString(stored.tokenIds()));
  }
}
