package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@code kvAware}'s placement within a burst of selections its peers made on the same view (Policies.KvAware
 * .burstPosition) and the router's estimate of that burst (Admission.unseenPeerSelections); expectations worked out
 * by hand from the cost {@code prefill blocks + decode blocks} (overlap weight 1).
 */
class BurstPlacementTest {
  private static final Worker A = Worker.of(WorkerId.of("a"));
  private static final Worker B = Worker.of(WorkerId.of("b"));
  private static final Worker C = Worker.of(WorkerId.of("c"));
  private static final int[] PROMPT = Fixtures.prompt(1, 4 * 16); // 4 blocks
  private static final long[] HASHES = BlockHasher.of(16).sequenceHashes(PROMPT);

  /** No worker holds the prompt; decode blocks 0, 10, 20: costs 4, 14, 24. */
  private static Candidates threeEmpty(SplittableRandom random, double unseen) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 0, 0, 0, null);
    c.add(B, 0, 0, 0, null);
    c.add(C, 0, 0, 0, null);
    c.admit(random, 0);
    c.unseenPeerSelections(unseen);
    c.setLoad(0, 0, 0, 0, 0);
    c.setLoad(1, 0, 0, 10, 1);
    c.setLoad(2, 0, 0, 20, 2);
    return c;
  }

  private static int[] counts(double unseen, int draws) {
    SplittableRandom random = new SplittableRandom(7);
    int[] counts = new int[3];
    for (int i = 0; i < draws; i++) {
      counts[RouterPolicy.kvAware().select(threeEmpty(random, unseen))]++;
    }
    return counts;
  }

  @Test
  void withoutUnseenSelectionsTheLowestCostWins() {
    assertEquals(1_000, counts(0, 1_000)[0]);
  }

  @Test
  void aBurstOfThreeGoesWhereOneRouterWouldPutItsThreeRequests() {
    // Burst positions 0, 1, 2 equally likely. One router: the 1st to A (4); A becomes 4 + 4 + 4 = 12 < B's 14, so
    // the 2nd to A too; A becomes 20 > 14, so the 3rd to B. C (24) is never reached: A 2/3, B 1/3, C 0.
    int[] counts = counts(2.0, 3_000);
    assertEquals(0, counts[2]);
    assertEquals(3_000, counts[0] + counts[1]);
    // Binomial(3,000, 2/3): standard deviation 25.8; 5 of them either side.
    assertTrue(Math.abs(counts[0] - 2_000) < 130, "A chosen " + counts[0] + " of 3,000 times, expected about 2,000");
  }

  @Test
  void aFractionalBurstAddsItsLastPositionWithThatProbability() {
    // unseen 0.5: two positions half the time, else one: position 1 with probability 1/2 x 1/2 = 1/4, and one
    // router's 2nd request also goes to A (12 < 14), so A always wins; with 1.5: positions 2 or 3 equally, and the
    // third position (B) has probability 1/2 x 1/3 = 1/6.
    assertEquals(2_000, counts(0.5, 2_000)[0]);
    int[] counts = counts(1.5, 6_000);
    assertEquals(0, counts[2]);
    // Binomial(6,000, 1/6): standard deviation 28.9.
    assertTrue(Math.abs(counts[1] - 1_000) < 145, "B chosen " + counts[1] + " of 6,000 times, expected about 1,000");
  }

  @Test
  void theUnseenEstimateIsPeersTimesTheViewDelayOverThisRoutersLastGap() {
    SharedLoad port = new SharedLoad() {
      @Override
      public void start(RemoteLoad view) {}

      @Override
      public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
          boolean predicted) {}

      @Override
      public void firstToken(long bookingId) {}

      @Override
      public void closed(long bookingId) {}

      @Override
      public int peerCount() {
        return 3;
      }

      @Override
      public long viewDelayNanos() {
        return 100_000;
      }
    };
    Admission admission = new Admission(16, 1_000_000_000L, 1, new HealthReports(Ticker.systemTicker(),
        RouterListener.NONE), port);
    assertEquals(0.0, admission.unseenPeerSelections(5_000_000)); // the first selection has no gap
    assertEquals(2.0, admission.unseenPeerSelections(5_150_000), 1e-12); // 3 x 100 us / 150 us
    assertEquals(0.0003, admission.unseenPeerSelections(1_005_150_000L), 1e-12); // 3 x 100 us / 1 s
    Admission alone = new Admission(16, 1_000_000_000L, 1, new HealthReports(Ticker.systemTicker(), RouterListener.NONE),
        SharedLoad.NONE);
    alone.unseenPeerSelections(0);
    assertEquals(0.0, alone.unseenPeerSelections(1_000));
  }
}
