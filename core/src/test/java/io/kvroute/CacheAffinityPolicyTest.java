package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The overload rules of {@link RouterPolicy#cacheAffinity()}, on hand-built candidates. */
class CacheAffinityPolicyTest {
  private static final Worker A = Worker.of(WorkerId.of("a"));
  private static final Worker B = Worker.of(WorkerId.of("b"));

  private static int choose(long decodeBlocksOfA, long cachedBlocksOfA) {
    int[] tokens = Fixtures.prompt(1, 32 * 16);
    long[] hashes = BlockHasher.of(16).sequenceHashes(tokens);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(tokens), tokens.length, 16, hashes);
    c.add(A, 30, 30, cachedBlocksOfA, null);
    c.add(B, 0, 0, 500, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, 0, decodeBlocksOfA, 1);
    c.setLoad(1, 0, 0, 32, 1);
    return RouterPolicy.cacheAffinity().select(c);
  }

  @Test
  void theHolderWinsWhileItsCacheCanHoldWhatItsRequestsPin() {
    assertEquals(0, choose(90, 100));
  }

  @Test
  void aHolderWhoseRequestsWouldPinMoreThanItsCacheIsPassedOver() {
    assertEquals(1, choose(120, 100));
  }

  @Test
  void aWorkerThatHasNotFilledItsCacheIsNotJudgedByIt() {
    assertEquals(0, choose(120, 40), "40 cached blocks say nothing of a capacity above 64");
  }
}
