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
    return threeEmpty(random, unseen, 10, 20);
  }

  /** No worker holds the prompt; decode blocks 0, {@code b} and {@code c}: costs 4, 4 + b, 4 + c. */
  private static Candidates threeEmpty(SplittableRandom random, double unseen, int b, int c2) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 0, 0, 0, null);
    c.add(B, 0, 0, 0, null);
    c.add(C, 0, 0, 0, null);
    c.admit(random, 0);
    c.unseenPeerSelections(unseen);
    c.setLoad(0, 0, 0, 0, 0);
    c.setLoad(1, 0, 0, b, 1);
    c.setLoad(2, 0, 0, c2, 2);
    return c;
  }

  private static int[] counts(double unseen, int draws) {
    return counts(unseen, draws, 10, 20);
  }

  private static int[] counts(double unseen, int draws, int b, int c) {
    SplittableRandom random = new SplittableRandom(7);
    int[] counts = new int[3];
    for (int i = 0; i < draws; i++) {
      counts[RouterPolicy.kvAware().select(threeEmpty(random, unseen, b, c))]++;
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
  void burstPositionsAtOneCostGoToTheWorkersHoldingItAlike() {
    // Costs 4, 12, 12; a copy adds 4 + 4 = 8. One router's burst of 4: the 1st to A (4); then A, B and C all cost 12,
    // and one router's uniform choice between equal costs sends the 2nd, 3rd and 4th to them in a random order, one
    // each. Positions 0-3 equally likely: A 1/4 + 3/4 x 1/3 = 1/2, B and C 1/4 each.
    int[] counts = counts(3.0, 8_000, 8, 8);
    assertEquals(8_000, counts[0] + counts[1] + counts[2]);
    // Binomial(8,000, 1/2): standard deviation 44.7; Binomial(8,000, 1/4): 38.7; 5 of them either side.
    assertTrue(Math.abs(counts[0] - 4_000) < 224, "A chosen " + counts[0] + " of 8,000 times, expected about 4,000");
    assertTrue(Math.abs(counts[1] - 2_000) < 194, "B chosen " + counts[1] + " of 8,000 times, expected about 2,000");
    assertTrue(Math.abs(counts[2] - 2_000) < 194, "C chosen " + counts[2] + " of 8,000 times, expected about 2,000");
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
