package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Regression tests for issue 8 items 8 and 9 (policy state and arithmetic). */
class PolicyRegressionTest {

  @Test
  void leastLoadedComparesEngineQueuesWithoutIntOverflow() {
    int[] tokens = Fixtures.prompt(1, 64);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(tokens), tokens.length, 16, BlockHasher.of(16).sequenceHashes(tokens));
    // Same booked load on both; a's engine reports a queue whose sum exceeds Integer.MAX_VALUE.
    c.add(Worker.of(WorkerId.of("a")), 0, 0, 0, new EngineLoad(Integer.MAX_VALUE, Integer.MAX_VALUE, 0.5, 0));
    c.add(Worker.of(WorkerId.of("b")), 0, 0, 0, new EngineLoad(1, 0, 0.5, 0));
    c.admit(new SplittableRandom(7), 0);
    c.setLoad(0, 0, 0, 4, 0);
    c.setLoad(1, 0, 0, 4, 0);
    for (int i = 0; i < 20; i++) {
      assertEquals(1, RouterPolicy.leastLoaded().select(c), "the 1-request queue is shorter than 2^32 - 2");
    }
  }

  @Test
  void kvAwareBreaksTiesToTheSmallestTreeThenUniformly() {
    // Six candidates of equal cost; three share the smallest cached tree (3 blocks). Only those three may be chosen,
    // each about a third of the time (30,000 draws: a third is 10,000, sd 82; 600 is over 7 sd).
    int[] tokens = Fixtures.prompt(2, 64);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(tokens), tokens.length, 16, BlockHasher.of(16).sequenceHashes(tokens));
    long[] cached = {5, 3, 3, 9, 3, 4};
    for (int i = 0; i < cached.length; i++) {
      c.add(Worker.of(WorkerId.of("w" + i)), 0, 0, cached[i], null);
    }
    c.admit(new SplittableRandom(13), 0);
    for (int i = 0; i < cached.length; i++) {
      c.setLoad(i, 0, 0, 4, 0);
    }
    int[] chosen = new int[cached.length];
    RouterPolicy policy = RouterPolicy.kvAware();
    for (int draw = 0; draw < 30_000; draw++) {
      chosen[policy.select(c)]++;
    }
    for (int i = 0; i < cached.length; i++) {
      if (cached[i] == 3) {
        assertTrue(Math.abs(chosen[i] - 10_000) < 600, "candidate " + i + " chosen " + chosen[i] + " times");
      } else {
        assertEquals(0, chosen[i], "candidate " + i + " has a larger tree");
      }
    }
  }

  @Test
  void cacheAffinityForgetsDepartedWorkers() {
    Policies.CacheAffinity policy = (Policies.CacheAffinity) RouterPolicy.cacheAffinity();
    Router router = Router.newBuilder().policy(policy).ticker(new FakeTicker()).randomSeed(3).build();
    int live = 3;
    for (int w = 0; w < live; w++) {
      router.addWorker(Worker.of(WorkerId.of("w" + w)));
    }
    // An autoscaling fleet: 3 workers live at any time, 3,000 ids over the run, a new prefix per request.
    for (int i = 0; i < 3_000; i++) {
      router.removeWorker(WorkerId.of("w" + i));
      router.addWorker(Worker.of(WorkerId.of("w" + (i + live))));
      router.select(Fixtures.prompt(1_000 + i, 256)).close();
      assertTrue(policy.trackedWorkers() <= 2 * live + 9, // swept above 2n + 8, then one placement recorded
          "after " + (i + 1) + " churns the policy tracks " + policy.trackedWorkers() + " workers");
    }
  }

  @Test
  void placementCountsDecayLazilyAsIfEveryEntryDecayedOnEachPlacement() {
    SplittableRandom random = new SplittableRandom(11);
    PlacementCounts lazy = new PlacementCounts(0.9);
    double[] eager = new double[4];
    WorkerId[] ids = {WorkerId.of("a"), WorkerId.of("b"), WorkerId.of("c"), WorkerId.of("d")};
    for (int step = 0; step < 500; step++) {
      int w = random.nextInt(4);
      for (int i = 0; i < 4; i++) {
        eager[i] *= 0.9;
      }
      eager[w] += 1;
      lazy.record(ids[w]);
      for (int i = 0; i < 4; i++) {
        assertEquals(eager[i], lazy.get(ids[i]), 1e-9, "worker " + i + " at step " + step);
      }
    }
  }

  @Test
  void aFullyCachedPromptPredictsTheBlocksVllmCanHit() {
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(new FakeTicker()).randomSeed(1).build();
    WorkerId a = WorkerId.of("a");
    router.addWorker(Worker.of(a));
    int[] prompt = Fixtures.prompt(5, 368); // 23 full blocks
    router.eventSink().apply(a, Fixtures.storedFor(prompt, 16, 9));
    try (Routing routing = router.select(prompt)) {
      assertEquals(23, routing.matchedBlocks());
      assertEquals(352, routing.predictedCachedTokens(), "vLLM hits at most (368 - 1) / 16 = 22 blocks");
    }
    int[] longer = Fixtures.concat(prompt, Fixtures.prompt(6, 5)); // 373 tokens: 23 full blocks may all hit
    try (Routing routing = router.select(longer)) {
      assertEquals(368, routing.predictedCachedTokens());
    }
  }
}
