package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The cost of {@link RouterPolicy#predictedTtft()} on hand-built candidates, where, before any outcome is observed,
 * time is counted in prompt tokens (1 per token, no fixed cost), so every expected choice follows from the formula.
 */
class PredictedTtftPolicyTest {
  private static final Worker A = Worker.of(WorkerId.of("a"));
  private static final Worker B = Worker.of(WorkerId.of("b"));
  private static final int[] PROMPT = Fixtures.prompt(1, 32 * 16); // 32 blocks, 512 tokens
  private static final long[] HASHES = BlockHasher.of(16).sequenceHashes(PROMPT);

  /** A holds 30 of the 32 blocks with {@code queuedAtA} tokens queued; B holds nothing and is idle. */
  private static Candidates candidates(long queuedAtA, long cachedOfB) {
    return candidates(queuedAtA, cachedOfB, new SplittableRandom(1), 0);
  }

  /** As {@link #candidates(long, long)}, drawing from {@code random}, with {@code unseen} peer selections not in view. */
  private static Candidates candidates(long queuedAtA, long cachedOfB, SplittableRandom random, double unseen) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 30, 30, 600, null);
    c.add(B, 0, 0, cachedOfB, null);
    c.admit(random, 0);
    c.unseenPeerSelections(unseen);
    c.setLoad(0, 0, queuedAtA, 32, 1);
    c.setLoad(1, 0, 0, 32, 0);
    return c;
  }

  @Test
  void theHolderWinsWhileItsQueueCostsLessThanRecomputingThePrompt() {
    // A: 100 queued + 32 uncached = 132 tokens; B: 512.
    assertEquals(0, RouterPolicy.predictedTtft().select(candidates(100, 600)));
  }

  @Test
  void noRequestWaitsForACacheLongerThanItsOwnPrefillThere() {
    // A: 600 + 32 = 632 > B's 512 + A's own 32: A is passed over although B must recompute.
    assertEquals(1, RouterPolicy.predictedTtft().select(candidates(600, 600)));
  }

  /** Two idle workers holding nothing, a cold prompt, {@code unseen} peer selections. */
  private static Candidates idlePair(SplittableRandom random, double unseen) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 0, 0, 0, null);
    c.add(B, 0, 0, 0, null);
    c.admit(random, 0);
    c.unseenPeerSelections(unseen);
    c.setLoad(0, 0, 0, 0, 0);
    c.setLoad(1, 0, 0, 0, 0);
    return c;
  }

  @Test
  void aBurstOfTwoColdRequestsSpreadsOverTwoIdleWorkers() {
    // Equal costs (512 tokens each); the tie rules give the request alone to one of them, X. With one unseen peer
    // selection the burst is 2, positions 0 and 1 alike: position 0 goes to X; one router would have sent position 1
    // to the other, X's queue then holding position 0's 512 tokens. So each worker 1/2.
    SplittableRandom random = new SplittableRandom(3);
    int alone = RouterPolicy.predictedTtft().select(idlePair(random, 0));
    for (int i = 0; i < 100; i++) {
      assertEquals(alone, RouterPolicy.predictedTtft().select(idlePair(random, 0)), "no peers: always the same");
    }
    int[] counts = new int[2];
    for (int i = 0; i < 2_000; i++) {
      counts[RouterPolicy.predictedTtft().select(idlePair(random, 1.0))]++;
    }
    // Binomial(2,000, 1/2): standard deviation 22.4; 5 of them either side.
    assertTrue(Math.abs(counts[alone] - 1_000) < 112, "X chosen " + counts[alone] + " of 2,000 times");
  }

  @Test
  void aBurstStaysOnTheHolderWhileItsQueueAndTheEarlierCopiesCostLessThanRecomputing() {
    // A holds 30 of 32 blocks with 100 tokens queued: 132 against B's 512. A copy before this one adds its 32
    // uncached tokens at A: 164 < 512, so both positions of a burst of 2 go to A.
    SplittableRandom random = new SplittableRandom(5);
    for (int i = 0; i < 500; i++) {
      assertEquals(0, RouterPolicy.predictedTtft().select(candidates(100, 600, random, 1.0)));
    }
    // With 400 queued (432 against 512) the second copy at A costs 464 < 512: still A. With 460 queued (492) it costs
    // 524 > 512, so position 1 goes to B: B half the time.
    int toB = 0;
    for (int i = 0; i < 2_000; i++) {
      toB += RouterPolicy.predictedTtft().select(candidates(460, 600, random, 1.0));
    }
    assertTrue(Math.abs(toB - 1_000) < 112, "B chosen " + toB + " of 2,000 times, expected about 1,000");
  }

  /** Candidates for {@code prompt}: A holds {@code blocksAtA} with {@code queuedAtA} queued, B holds {@code blocksAtB}. */
  private static Candidates candidates(int[] prompt, int blocksAtA, long queuedAtA, int blocksAtB, long cachedOfB) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(prompt), prompt.length, 16, BlockHasher.of(16).sequenceHashes(prompt));
    c.add(A, blocksAtA, blocksAtA, 600, null);
    c.add(B, blocksAtB, blocksAtB, cachedOfB, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, queuedAtA, 32, 1);
    c.setLoad(1, 0, 0, 32, 0);
    return c;
  }

  @Test
  void duplicatingAPrefixOverWarmPrefixesIsPricedAndOverColdRoomIsNot() {
    // A: 500 queued + 32 = 532; B: 512 (recomputes). B is cheaper unless the copy evicts warm prefixes there.
    RouterPolicy roomy = RouterPolicy.predictedTtft();
    RouterPolicy crowded = RouterPolicy.predictedTtft();
    assertEquals(1, crowded.select(candidates(PROMPT, 30, 500, 0, 600)), "B's cache size is not known yet");
    assertEquals(1, roomy.select(candidates(PROMPT, 30, 500, 0, 600)));
    // B's tree shrinks (it evicted): 600 blocks is its capacity. Then 20 other prefixes of 30 blocks are served
    // from B's cache: its warm prefixes fill it (600 blocks).
    assertEquals(1, crowded.select(candidates(PROMPT, 30, 500, 0, 590)));
    for (int p = 0; p < 20; p++) {
      assertEquals(1, crowded.select(candidates(Fixtures.prompt(100 + p, 512), 0, 0, 30, 600)));
    }
    // Copying A's 30 shared blocks into B now evicts 30 warm blocks, priced at their prefill (30 x 16 = 480
    // tokens): B costs 512 + 480 = 992 > A's 532, and A is within its own prefill (32) of B's 512.
    assertEquals(0, crowded.select(candidates(PROMPT, 30, 500, 0, 600)));
    assertEquals(1, roomy.select(candidates(PROMPT, 30, 500, 0, 590)), "B's room holds the copy: no price");
    RouterPolicy free = RouterPolicy.predictedTtft(PredictedTtftConfig.DEFAULT.withEvictionPrice(0));
    free.select(candidates(PROMPT, 30, 500, 0, 600));
    free.select(candidates(PROMPT, 30, 500, 0, 590));
    for (int p = 0; p < 20; p++) {
      free.select(candidates(Fixtures.prompt(100 + p, 512), 0, 0, 30, 600));
    }
    assertEquals(1, free.select(candidates(PROMPT, 30, 500, 0, 600)), "with no eviction price B wins");
  }

  /** A holds {@code blocksAtA} of {@code prompt} in a tree of {@code cachedOfA} with {@code queuedAtA} queued; B is empty. */
  private static Candidates heldAtA(int[] prompt, int blocksAtA, long cachedOfA, long queuedAtA) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(prompt), prompt.length, 16, BlockHasher.of(16).sequenceHashes(prompt));
    c.add(A, blocksAtA, blocksAtA, cachedOfA, null);
    c.add(B, 0, 0, 0, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, queuedAtA, 32, 1);
    c.setLoad(1, 0, 0, 32, 0);
    return c;
  }

  /**
   * A copy away from a full holder whose prefix is reused there for the first time is priced for the stale copy it
   * leaves: A (500 queued + 32 uncached = 532 tokens) against an empty B (512, recomputing; its room holds the copy,
   * so no eviction price) costs B 512 + 30 x 16 = 992, and A wins. When the prefix was already shared at A (a
   * selection served it there from cache), its copy at A keeps its users and B wins as before.
   */
  @Test
  void aCopyThatLeavesTheHoldersCopyStaleIsPricedForIt() {
    RouterPolicy firstReuse = RouterPolicy.predictedTtft();
    RouterPolicy shared = RouterPolicy.predictedTtft();
    assertEquals(0, shared.select(heldAtA(PROMPT, 30, 600, 0)), "A: 32 tokens against B's 512");
    for (RouterPolicy p : List.of(firstReuse, shared)) {
      p.select(heldAtA(Fixtures.prompt(7, 512), 0, 600, 0));
      p.select(heldAtA(Fixtures.prompt(8, 512), 0, 590, 0)); // A's tree shrank: A is full
    }
    assertEquals(0, firstReuse.select(heldAtA(PROMPT, 30, 590, 500)));
    assertEquals(1, shared.select(heldAtA(PROMPT, 30, 590, 500)));
  }

  @Test
  void aRequestWaitsForACacheAsLongAsItSavesItselfAndTheOthers() {
    // A holder at 632 against the fastest 512, own prefill 32: passed over alone (632 > 544), kept when the
    // fastest choice would cost the others 100 (632 <= 644), unless this choice costs them 95 itself (632 > 549).
    assertTrue(!PredictedTtftPolicy.waitsNoLongerThanTheCacheSaves(632, 512, 32, 0, 0));
    assertTrue(PredictedTtftPolicy.waitsNoLongerThanTheCacheSaves(632, 512, 32, 100, 0));
    assertTrue(!PredictedTtftPolicy.waitsNoLongerThanTheCacheSaves(632, 512, 32, 100, 95));
    assertTrue(PredictedTtftPolicy.waitsNoLongerThanTheCacheSaves(544, 512, 32, 0, 0), "exactly its own prefill");
  }

  @Test
  void aPrefillDelaysWhoArrivesWhileItWaitsByAllOfItAndDuringItByHalf() {
    // One arrival per second, 2 s of prefill after 1 s of waiting: 1 arrival delayed 2 s while it waits, 2 during
    // the prefill delayed 1 s on average: 4 s.
    assertEquals(4e9, PredictedTtftPolicy.delayToOthers(1e-9, 2e9, 1e9), 1);
    assertEquals(0, PredictedTtftPolicy.delayToOthers(0, 2e9, 1e9), "no arrivals, nobody delayed");
    assertEquals(0, PredictedTtftPolicy.delayToOthers(1e-9, 0, 1e9), "a full hit adds no work");
  }

  /** A and B with their held blocks, queued prefill tokens and active requests; caches of 600 blocks. */
  private static Candidates tied(int[] prompt, int heldA, long queuedA, int activeA, int heldB, long queuedB,
      int activeB) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(prompt), prompt.length, 16, BlockHasher.of(16).sequenceHashes(prompt));
    c.add(A, heldA, heldA, 600, null);
    c.add(B, heldB, heldB, 600, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, queuedA, 32, activeA);
    c.setLoad(1, 0, queuedB, 32, activeB);
    return c;
  }

  /**
   * Two holders of the whole prefix with equal predicted costs (nothing queued, 32 tokens to prefill at either)
   * differ only in active requests: the one with fewer wins, whatever the prefix (its rendezvous hash would pick
   * either worker about half the time).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void equalCostsGoToTheWorkerWithFewerActiveRequests(long seed) {
    for (int p = 0; p < 16; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      assertEquals(1, RouterPolicy.predictedTtft().select(tied(prompt, 30, 0, 1, 30, 0, 0)), "prompt " + p);
      assertEquals(0, RouterPolicy.predictedTtft().select(tied(prompt, 30, 0, 0, 30, 0, 1)), "prompt " + p);
    }
  }

  /**
   * A new prefix (no worker holds any of it) ties at A and B (512 tokens each): where it lives is decided by the
   * placement counts and the rendezvous hash of the prefix, not by which worker is busier, so the choice is the same
   * whichever of them has the active request.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void whereANewPrefixLivesDoesNotDependOnActiveRequests(long seed) {
    for (int p = 0; p < 16; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      int busyA = RouterPolicy.predictedTtft().select(tied(prompt, 0, 0, 1, 0, 0, 0));
      int busyB = RouterPolicy.predictedTtft().select(tied(prompt, 0, 0, 0, 0, 0, 1));
      assertEquals(busyA, busyB, "prompt " + p);
    }
  }

  /**
   * Teaches {@code policy}, through a router, that first tokens take 20 ms plus 10 us per prompt token, whatever the
   * load: its fitted intercept, the tie tolerance (one engine step), becomes 20 ms. Returns the worker that saw the
   * last first token and completion (it has just begun an engine step).
   */
  private static WorkerId learnA20msStep(RouterPolicy policy, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    router.addWorker(A);
    router.addWorker(B);
    WorkerId last = null;
    for (int i = 0; i < 200; i++) {
      Routing r = router.select(Fixtures.prompt(seed * 1000 + i, 16 + random.nextInt(4000)));
      ticker.advance(Duration.ofNanos(20_000_000 + 10_000 * (r.queuedPrefillTokens() + r.bookedPrefillTokens)));
      r.firstToken();
      r.close();
      last = r.workerId();
    }
    return last;
  }

  /**
   * Two holders of the whole prefix within one engine step (20 ms, learned) of each other: A has 64 prompt tokens
   * waiting for their first token and no active request of its own beyond them, B has none waiting and one active
   * request. A's waiting prompt would share this request's prefill step, so the tie goes to B; preferring the fewest
   * active requests first would pick A, and keep requests that arrive together on the worker that just emptied, in
   * one prefill batch (a closed-loop convoy).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void betweenHoldersFewerWaitingPromptTokensComeBeforeFewerActiveRequests(long seed) {
    for (int p = 0; p < 8; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      RouterPolicy policy = RouterPolicy.predictedTtft();
      learnA20msStep(policy, seed * 100 + p);
      assertEquals(1, policy.select(tied(prompt, 30, 64, 0, 30, 0, 1)), "prompt " + p);
      policy = RouterPolicy.predictedTtft();
      learnA20msStep(policy, seed * 100 + p);
      assertEquals(0, policy.select(tied(prompt, 30, 0, 1, 30, 64, 0)), "prompt " + p);
    }
  }

  /**
   * Two holders of the whole prefix, nothing waiting at either, within one engine step of each other (a 20 ms step
   * learned), 1 s after the learning ended. A saw its last step end 1 ms ago: it has just begun a step and has 19 ms
   * of it left, which a request sent there waits out whole. B's last step end the router saw was 100 ms ago, more
   * than a step: its phase is unknown, 10 ms left on average. The tie goes to B even with one more active request
   * (which adds only its decode to a step; 2 against 1, so that the bounded load in requests, 3 of 4 here, passes
   * neither over); the same with the roles swapped.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void betweenHoldersTheWorkerFurtherIntoItsStepWinsOverFewerActiveRequests(long seed) {
    for (int p = 0; p < 8; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      RouterPolicy policy = RouterPolicy.predictedTtft();
      long now = learnA20msStepUntil(policy, seed * 100 + p) + 1_000_000_000L;
      stepEnded(policy, A, now - 1_000_000);
      stepEnded(policy, B, now - 100_000_000);
      assertEquals(1, policy.select(tiedAt(now, prompt, 30, 0, 1, 30, 0, 2)), "prompt " + p + ": A just stepped");
      policy = RouterPolicy.predictedTtft();
      now = learnA20msStepUntil(policy, seed * 100 + p) + 1_000_000_000L;
      stepEnded(policy, A, now - 100_000_000);
      stepEnded(policy, B, now - 1_000_000);
      assertEquals(0, policy.select(tiedAt(now, prompt, 30, 0, 2, 30, 0, 1)), "prompt " + p + ": B just stepped");
    }
  }

  /**
   * Two holders of the whole prefix, nothing waiting at either, both of unknown phase: the router saw A end a step
   * 30 ms ago and B 100 ms ago, both more than the 20 ms step learned, so the step ends since are ones it did not
   * see, and either is on average half a step from its next step boundary. What differs is this request's own step:
   * A has 1 active request, B 2, each adding its decode to every step. A wins (ranked by the time since the last step
   * end, B, "further into its step", would); with the counts swapped, B. Then a holder whose phase is known and late
   * (A ended a step 15 ms ago, 5 ms left) wins over one of unknown phase (10 ms left on average) with fewer active.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void betweenHoldersOfUnknownPhaseFewerActiveRequestsWin(long seed) {
    for (int p = 0; p < 8; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      RouterPolicy policy = RouterPolicy.predictedTtft();
      long now = learnA20msStepUntil(policy, seed * 100 + p) + 1_000_000_000L;
      stepEnded(policy, A, now - 30_000_000);
      stepEnded(policy, B, now - 100_000_000);
      assertEquals(0, policy.select(tiedAt(now, prompt, 30, 0, 1, 30, 0, 2)), "prompt " + p + ": A fewer active");
      assertEquals(1, policy.select(tiedAt(now, prompt, 30, 0, 2, 30, 0, 1)), "prompt " + p + ": B fewer active");
      policy = RouterPolicy.predictedTtft();
      now = learnA20msStepUntil(policy, seed * 100 + p) + 1_000_000_000L;
      stepEnded(policy, A, now - 15_000_000);
      stepEnded(policy, B, now - 100_000_000);
      assertEquals(0, policy.select(tiedAt(now, prompt, 30, 0, 2, 30, 0, 1)), "prompt " + p + ": A late in its step");
    }
  }

  /**
   * The step left to wait out, by hand: an idle worker none; a step of 20 ms that the router saw begin 5 ms ago,
   * 15 ms; one seen 25 ms ago (a step end missed since) or never, half a step, 10 ms; a step of 0 (a fit whose
   * intercept clamps at 0), none.
   */
  @Test
  void theStepLeftIsKnownWithinOneStepOfTheLastStepEndSeenAndHalfAStepBeyond() {
    long now = 1_000_000_000L;
    assertEquals(0, PredictedTtftPolicy.stepLeftNanos(0, now - 5_000_000, now, 20e6));
    assertEquals(15e6, PredictedTtftPolicy.stepLeftNanos(1, now - 5_000_000, now, 20e6), 1e-6);
    assertEquals(10e6, PredictedTtftPolicy.stepLeftNanos(3, now - 25_000_000, now, 20e6), 1e-6);
    assertEquals(10e6, PredictedTtftPolicy.stepLeftNanos(1, Long.MIN_VALUE, now, 20e6), 1e-6);
    assertEquals(0, PredictedTtftPolicy.stepLeftNanos(2, now - 5_000_000, now, 0), 1e-6);
  }

  /** {@link #learnA20msStep}, returning the virtual time at which the learning ended. */
  private static long learnA20msStepUntil(RouterPolicy policy, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    router.addWorker(A);
    router.addWorker(B);
    for (int i = 0; i < 200; i++) {
      Routing r = router.select(Fixtures.prompt(seed * 1000 + i, 16 + random.nextInt(4000)));
      ticker.advance(Duration.ofNanos(20_000_000 + 10_000 * (r.queuedPrefillTokens() + r.bookedPrefillTokens)));
      r.firstToken();
      r.close();
    }
    return ticker.read();
  }

  /** Tells {@code policy} that {@code worker} ended an engine step at {@code atNanos} (as a peer's first token). */
  private static void stepEnded(RouterPolicy policy, Worker worker, long atNanos) {
    ((PeerLearning) policy).peerStepEnded(worker.id(), atNanos);
  }

  /** {@link #tied} at virtual time {@code nowNanos}. */
  private static Candidates tiedAt(long nowNanos, int[] prompt, int heldA, long queuedA, int activeA, int heldB,
      long queuedB, int activeB) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(prompt), prompt.length, 16, BlockHasher.of(16).sequenceHashes(prompt));
    c.add(A, heldA, heldA, 600, null);
    c.add(B, heldB, heldB, 600, null);
    c.admit(new SplittableRandom(1), nowNanos);
    c.setLoad(0, 0, queuedA, 32, activeA);
    c.setLoad(1, 0, queuedB, 32, activeB);
    return c;
  }

  /**
   * With a 20 ms step learned (10 us per token), A holds 30 of the 32 blocks with {@code queuedA} tokens queued and
   * one active request, B holds nothing and is idle. At 1,000 queued tokens A's TTFT is 20 + 0.01 x (1,000 + 32) =
   * 30.32 ms, B's 20 + 0.01 x 512 = 25.12 ms: within one step, a tie, and the holder serves it (no copy), whatever
   * the prefix (the placement counts and the rendezvous hash would pick either about half the time); the same with
   * the roles swapped. At 3,000 queued tokens A's 50.32 ms is more than a step dearer (and beyond the tail guard,
   * 25.12 + A's own 20.32): B takes the copy.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aTieBetweenAHolderAndAWorkerWithoutThePrefixGoesToTheHolder(long seed) {
    for (int p = 0; p < 8; p++) {
      int[] prompt = Fixtures.prompt(seed * 100 + p, 32 * 16);
      RouterPolicy policy = RouterPolicy.predictedTtft();
      learnA20msStep(policy, seed * 100 + p);
      assertEquals(0, policy.select(tied(prompt, 30, 1000, 1, 0, 0, 0)), "prompt " + p + ": A holds it");
      policy = RouterPolicy.predictedTtft();
      learnA20msStep(policy, seed * 100 + p);
      assertEquals(1, policy.select(tied(prompt, 0, 0, 0, 30, 1000, 1)), "prompt " + p + ": B holds it");
      policy = RouterPolicy.predictedTtft();
      learnA20msStep(policy, seed * 100 + p);
      assertEquals(1, policy.select(tied(prompt, 30, 3000, 1, 0, 0, 0)), "prompt " + p + ": A a step dearer");
    }
  }

  /**
   * Teaches {@code policy} that first tokens take 2 ms plus 10 us per prompt token (a 2 ms step), then that a
   * request takes 1 s from routing to its last token (closed without a first token, so the TTFT fit is unchanged; the service time converges to 1 s).
   * Both workers' event streams are live and empty, so the policy has seen no cached tree yet.
   */
  private static void learnA2msStepAndAOneSecondService(RouterPolicy policy, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    for (Worker w : List.of(A, B)) {
      router.addWorker(w);
      router.reportEventStream(w.id(), EventStreamState.LIVE);
    }
    for (int i = 0; i < 200; i++) {
      Routing r = router.select(Fixtures.prompt(seed * 1000 + i, 16 + random.nextInt(4000)));
      ticker.advance(Duration.ofNanos(2_000_000 + 10_000 * (r.queuedPrefillTokens() + r.bookedPrefillTokens)));
      r.firstToken();
      r.close();
    }
    for (int i = 0; i < 600; i++) {
      Routing r = router.select(Fixtures.prompt(seed * 1000 + 200 + i, 512));
      ticker.advance(Duration.ofSeconds(1));
      r.close();
    }
  }

  /**
   * Neither cache is known to be full (no tree ever shrank, no engine report), and both trees have reached 100
   * blocks; a 2 ms step and a 1 s service time are learned. A holds 30 of the prompt's 32 blocks, has one active
   * request and {@code bookedA} blocks booked with this request's; B holds nothing, 32 booked. With 140 booked at
   * A, 40 more than A's cache has ever held: the memory wait takes its largest tree as its size until it knows
   * better, so this request waits for A's one active request to finish (a service time, 1 s), and B's cold 2 + 0.01
   * x 512 = 7.12 ms wins. With 90 booked nothing waits, and A's 2 + 0.01 x 32 = 2.32 ms wins (by more than a
   * step: no tie).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void beforeACacheIsKnownFullItsLargestTreeIsTheSizeTheMemoryWaitAssumes(long seed) {
    assertEquals(1, bookedBeyondTheTree(seed, 140), "A's bookings exceed its largest tree");
    assertEquals(0, bookedBeyondTheTree(seed, 90), "A's bookings fit in its largest tree");
  }

  /**
   * The setting of {@link #beforeACacheIsKnownFullItsLargestTreeIsTheSizeTheMemoryWaitAssumes} with 120 blocks
   * booked at A with this request's: 20 beyond A's largest tree of 100, but the 88 booked before this request
   * (120 less its 32 new blocks: none of it is active at A) fit in that tree, so A has found room for everything it
   * was sent. Before A's engine reports, that tree is no evidence of a limit: no memory wait, and A's 2.32 ms wins
   * over B's 7.12. Once A has reported (2 running, nothing waiting, so its cache is still not known full), the tree
   * bounds the size again: A waits a service time for memory and B wins. With 140 booked (108 before this request,
   * beyond the tree) A waits even before a report.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void beforeTheFirstReportATreeHoldingItsBookingsShowsRoom(long seed) {
    assertEquals(0, bookedBeyondTheTree(seed, 120), "no report yet; the bookings before this one fit the tree");
    assertEquals(1, bookedBeyondTheTree(seed, 120, new EngineLoad(2, 0, 0.5, 0)), "A has reported");
    assertEquals(1, bookedBeyondTheTree(seed, 140), "the bookings before this one exceed the tree");
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    m.maxCached = 100;
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 0, 0, 100, null);
    assertTrue(PredictedTtftPolicy.treeHoldsItsBookingsBeforeAnyReport(c, 0, m, 100), "100 booked in a tree of 100");
    assertTrue(!PredictedTtftPolicy.treeHoldsItsBookingsBeforeAnyReport(c, 0, m, 101), "101 booked");
    m.footprint = 1.25;
    assertTrue(!PredictedTtftPolicy.treeHoldsItsBookingsBeforeAnyReport(c, 0, m, 81), "81 x 1.25 = 101.25 pinned");
    m.footprint = 1;
    m.filled = true;
    assertTrue(!PredictedTtftPolicy.treeHoldsItsBookingsBeforeAnyReport(c, 0, m, 50), "a cache known full");
  }

  private static int bookedBeyondTheTree(long seed, long bookedA) {
    return bookedBeyondTheTree(seed, bookedA, null);
  }

  private static int bookedBeyondTheTree(long seed, long bookedA, EngineLoad reportOfA) {
    RouterPolicy policy = RouterPolicy.predictedTtft();
    learnA2msStepAndAOneSecondService(policy, seed);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 30, 30, 100, reportOfA);
    c.add(B, 0, 0, 100, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, 0, bookedA, 1);
    c.setLoad(1, 0, 0, 32, 0);
    return policy.select(c);
  }

  /**
   * The booking digest checks blocks 7, 15, 23, ... and the last one. A's one active request is 95 blocks long and
   * shares the prompt's first 30 blocks, a prefix ending between the checked blocks 23 and 31: the digest matches
   * the prompt to depth 24, and this request in fact pins only its last 2 blocks anew at A. A's largest tree is 100
   * blocks and it has reported (so the tree bounds the memory wait's cache size); a 2 ms step and a 1 s service
   * time are learned. With the index showing A's GPU holding the 30 blocks, 95 + 2 = 97 blocks fit in 100: no wait,
   * and A's 2 + 0.01 x 32 = 2.32 ms beats B's cold 7.12. Counting the digest's 8 new blocks, 103 would exceed the
   * cache and A would wait a service time. Where A's GPU holds only the 24 blocks the digest matched, nothing says
   * blocks 24-29 are pinned there: 8 new blocks, a memory wait, and B wins.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void blocksAnActiveRequestSharesBetweenTwoCheckedBlocksAreNotCountedAsNew(long seed) {
    LoadTracker load = new LoadTracker();
    load.activate(0, 1);
    long[] active = BlockHasher.of(16).sequenceHashes(
        Fixtures.concat(java.util.Arrays.copyOf(PROMPT, 30 * 16), Fixtures.prompt(99, 65 * 16)));
    load.book(0, 1, 0, active, active.length);
    int depth = load.activeDepth(0, HASHES, HASHES.length);
    assertEquals(24, depth, "the digest matches through checked block 23, not 31");
    assertEquals(95, load.activeBlocks(0));
    assertEquals(0, joinAtA(seed, depth, 30, load.activeBlocks(0)), "GPU holds 30: 2 new blocks fit");
    assertEquals(1, joinAtA(seed, depth, 24, load.activeBlocks(0)), "GPU holds 24: 8 new blocks do not");
  }

  /** What {@code sharedWithActive} takes from the digest and the index, case by case (SAMPLE = 8). */
  @Test
  void sharedWithActiveReachesAtMostTheNextCheckedBlockAndTheGpuOverlap() {
    assertEquals(30, PredictedTtftPolicy.sharedWithActive(24, 30, 32), "up to the exact overlap");
    assertEquals(31, PredictedTtftPolicy.sharedWithActive(24, 32, 32), "the last block, checked, did not match");
    assertEquals(39, PredictedTtftPolicy.sharedWithActive(32, 60, 100), "block 39 is checked and did not match");
    assertEquals(24, PredictedTtftPolicy.sharedWithActive(24, 20, 32), "the GPU holds less than the digest says");
    assertEquals(0, PredictedTtftPolicy.sharedWithActive(0, 30, 32), "no active request shares a checked block");
    assertEquals(32, PredictedTtftPolicy.sharedWithActive(32, 32, 32), "all of it matched");
  }

  /** A one-active-request holder after a report (see the test above); B holds nothing and has 32 booked. */
  private static int joinAtA(long seed, int depth, int gpuAtA, long bookedBeforeAtA) {
    RouterPolicy policy = RouterPolicy.predictedTtft();
    learnA2msStepAndAOneSecondService(policy, seed);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, gpuAtA, gpuAtA, 100, new EngineLoad(2, 0, 0.5, 0));
    c.add(B, 0, 0, 100, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, depth, 0, bookedBeforeAtA + HASHES.length - depth, 1);
    c.setLoad(1, 0, 0, 32, 0);
    return policy.select(c);
  }

  /**
   * Neither cache is known to be full, nothing is learned yet (costs in tokens). A holds 30 of the prompt's 32 blocks
   * with 500 tokens queued and one active request: 532. B's largest tree is 40 blocks; when {@code warmAtB}, 30
   * blocks of another prefix were routed to B (its warm prefixes). While B has {@code bookedB} = 100 blocks booked,
   * more than its tree, B has not shown room for a copy: copying A's 30 blocks evicts min(30 warm, 30 + 30 - 40) =
   * 20 warm blocks, priced at their prefill (20 x 16 = 320 tokens), so B costs 512 + 320 = 832 and A wins (within
   * its own 32 tokens of B's 512: not passed over by the tail guard). With 32 booked, within its tree, the copy is
   * free and B's 512 wins; with nothing warm at B, it evicts nothing warm, and B wins too.
   */
  @Test
  void aCopyOntoAWorkerBookedBeyondItsLargestTreeIsPricedUpToItsWarmPrefixes() {
    assertEquals(0, copyOntoB(true, 100), "B booked beyond its tree, 30 warm blocks");
    assertEquals(1, copyOntoB(true, 32), "B's tree holds its bookings: room shown");
    assertEquals(1, copyOntoB(false, 100), "nothing warm at B to evict");
  }

  private static int copyOntoB(boolean warmAtB, long bookedB) {
    RouterPolicy policy = RouterPolicy.predictedTtft();
    if (warmAtB) {
      int[] other = Fixtures.prompt(77, 32 * 16);
      Candidates c = new Candidates();
      c.reset(RouteRequest.of(other), other.length, 16, BlockHasher.of(16).sequenceHashes(other));
      c.add(A, 0, 0, 600, null);
      c.add(B, 30, 30, 40, null);
      c.admit(new SplittableRandom(1), 0);
      c.setLoad(0, 0, 0, 32, 0);
      c.setLoad(1, 0, 0, 32, 0);
      assertEquals(1, policy.select(c), "B serves its own prefix: 30 blocks warm there");
    }
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 30, 30, 600, null);
    c.add(B, 0, 0, 40, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, 500, 32, 1);
    c.setLoad(1, 0, 0, bookedB, 0);
    return policy.select(c);
  }

  static Stream<Long> seeds() {
    return LongStream.range(0, 4).boxed();
  }

  /**
   * The fit recovers a worker's speed from first-token times generated by a known linear model (the truth is the
   * generator, not the implementation): {@code ttft = 2 ms + 40 us x tokens + 1.5 ms x active requests}.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void learnsAWorkersSpeedFromItsFirstTokenTimes(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    PredictedTtftPolicy policy = (PredictedTtftPolicy) RouterPolicy.predictedTtft();
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    router.addWorker(A);
    List<Routing> open = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      open.add(router.select(Fixtures.prompt(seed * 1000 + i, 16 + random.nextInt(4000))));
      if (open.size() > 1 + random.nextInt(6)) {
        Routing r = open.remove(random.nextInt(open.size()));
        long x = r.queuedPrefillTokens() + r.bookedPrefillTokens;
        long ttft = 2_000_000 + 40_000 * x + 1_500_000L * r.activeAtAdmission();
        long waited = ticker.read() - r.bookedAtNanos;
        ticker.advance(Duration.ofNanos(Math.max(0, ttft - waited)));
        if (ttft >= waited) {
          r.firstToken(); // the fit sees exactly ttft (earlier handles may have waited longer: skip those)
        }
        r.close();
      }
    }
    double slope = policy.learnedSlope(A.id());
    assertEquals(40_000, slope, 400, "nanoseconds per prompt token");
  }

  /**
   * A request that joins a worker while another computes its prompt prefills only the block holding its last token
   * (every other block is computed by the first, as vLLM v1 registers them, so it hits them), and the fit must
   * regress its first-token time on that, the tokens the cost counts for it, not on the whole prompt the router books
   * (the index holds none of it yet). The generator is the engine's rule, not the policy's:
   * {@code ttft = 2 ms + 40 us x tokens prefilled before the first token}, where a cold request of {@code L} tokens
   * prefills {@code L} and the join then waits for those and prefills {@code L - 16 x floor((L - 1) / 16)} of its
   * own. Fitted against the router's booking ({@code 2L} for the join), the slope came out near 27 us.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aJoinIsFittedWithTheTokensItPrefillsNotTheWholePromptTheRouterBooks(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    PredictedTtftPolicy policy = (PredictedTtftPolicy) RouterPolicy.predictedTtft();
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    router.addWorker(A);
    router.reportEventStream(A.id(), EventStreamState.LIVE); // its index is exact: it holds what events report
    for (int i = 0; i < 200; i++) {
      int length = 128 + random.nextInt(3_900);
      int[] prompt = Fixtures.prompt(seed * 1000 + i, length);
      Routing cold = router.select(prompt);
      Routing join = router.select(prompt);
      assertEquals(length, join.bookedPrefillTokens, "the router books the join cold: the index holds nothing yet");
      long tail = length - 16L * ((length - 1) / 16);
      assertEquals(tail, PredictedTtftPolicy.ownPrefillTokens(join), "the join prefills the block of its last token");
      long coldTtft = 2_000_000 + 40_000L * length;
      long joinTtft = 2_000_000 + 40_000L * (length + tail);
      ticker.advance(Duration.ofNanos(coldTtft));
      cold.firstToken();
      ticker.advance(Duration.ofNanos(joinTtft - coldTtft));
      join.firstToken();
      cold.close();
      join.close();
    }
    assertEquals(40_000, policy.learnedSlope(A.id()), 400, "nanoseconds per prompt token");
  }

  /**
   * The queue ahead of a request is the prompt tokens routed to its worker without a first token, less what the
   * prompt at the head of that queue has computed since it began: an engine prefills its queue in arrival order, so
   * the head began when the request was sent to a worker with nothing queued (here an idle one, which starts at
   * once) or at the previous prompt's first token (the step that ended it starts the next), and every nanosecond
   * since is prefill done at the worker's speed. The truth is the generator: a worker that prefills 40 us per token
   * and nothing else, so 100 ms compute 2,500 tokens. The router books a prompt whole until its first token; the
   * policy notes on the handle what it counted (the fit's regressor is the same quantity).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theQueueAheadIsWhatItsHeadHasNotComputedSinceItBegan(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    PredictedTtftPolicy policy = (PredictedTtftPolicy) RouterPolicy.predictedTtft();
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    router.addWorker(A);
    router.reportEventStream(A.id(), EventStreamState.LIVE);
    for (int i = 0; i < 100; i++) {
      Routing alone = router.select(Fixtures.prompt(seed * 1000 + i, 16 + random.nextInt(4_000)));
      ticker.advance(Duration.ofNanos(40_000L * alone.bookedPrefillTokens));
      alone.firstToken();
      alone.close();
    }
    assertEquals(40_000, policy.learnedSlope(A.id()), 40, "nanoseconds per prompt token");
    // A cache that has shown room for far more than is queued below: nothing waits for memory.
    router.eventSink().apply(A.id(), Fixtures.storedFor(Fixtures.prompt(seed * 1000 + 999, 16 * 4_000), 16, 0));
    Routing head = router.select(Fixtures.prompt(seed * 1000 + 500, 10_000));
    assertEquals(0, head.queuedPrefillTokens(), "an idle worker: nothing ahead, its prefill begins at once");
    ticker.advance(Duration.ofMillis(100));
    Routing second = router.select(Fixtures.prompt(seed * 1000 + 501, 4_000));
    assertEquals(7_500, second.queuedPrefillTokens(), 5, "10,000 less the 2,500 computed in 100 ms");
    ticker.advance(Duration.ofMillis(300));
    head.firstToken(); // at 400 ms, on time: the second begins now
    ticker.advance(Duration.ofMillis(40));
    Routing third = router.select(Fixtures.prompt(seed * 1000 + 502, 1_000));
    assertEquals(3_000, third.queuedPrefillTokens(), 5, "the second's 4,000 less the 1,000 computed in 40 ms");
    ticker.advance(Duration.ofMillis(500));
    Routing fourth = router.select(Fixtures.prompt(seed * 1000 + 503, 1_000));
    assertEquals(0, fourth.queuedPrefillTokens(), "540 ms after the second began, its 160 ms and the third's 40"
        + " are past: only the step that ends them is left (under a token here: the fit has no fixed cost), although"
        + " the router still books 5,000");
  }

  /**
   * What a queue's head has computed leaves at least one engine step of the queue (the router has not seen the head's
   * first token, so the step that ends it is still to come, and a request sent there waits for it: a holder with a
   * prompt queued is never taken for one without a wait), never more than the queue itself; nothing is credited to
   * a queue whose start is unknown or in the future; and a queue that appears between two looks of the policy (a
   * peer replica's booking on a worker it saw empty) begins at the look that finds it, so nothing is credited for
   * the interval in which it began unseen.
   */
  @Test
  void aQueueIsCreditedOnlyTheTimeSinceItsHeadIsKnownToHaveBegunAndKeepsAStep() {
    double step = 5e6;
    assertEquals(300e6, PredictedTtftPolicy.queueLeftNanos(400e6, 1_000_000_000L, 1_100_000_000L, step), 1e-3);
    assertEquals(step, PredictedTtftPolicy.queueLeftNanos(400e6, 0, 1_000_000_000L, step), "due: a step is left");
    assertEquals(3e6, PredictedTtftPolicy.queueLeftNanos(3e6, 0, 1_000_000_000L, step), "never more than queued");
    assertEquals(1, PredictedTtftPolicy.queueLeftNanos(400e6, 0, 1_000_000_000L, 0), "no step known: still a wait");
    assertEquals(400e6, PredictedTtftPolicy.queueLeftNanos(400e6, 2_000_000_000L, 1_000_000_000L, step), "not begun");
    assertEquals(400e6, PredictedTtftPolicy.queueLeftNanos(400e6, Long.MIN_VALUE, 1_000_000_000L, step), "unknown");
    assertEquals(0, PredictedTtftPolicy.queueLeftNanos(0, 0, 1_000_000_000L, step), "nothing queued");
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    m.prefillStartedAt = 5;
    PredictedTtftPolicy.learnQueueStart(m, 0, 10);
    assertEquals(5, m.prefillStartedAt, "an empty queue changes nothing");
    PredictedTtftPolicy.learnQueueStart(m, 4_000, 20);
    assertEquals(20, m.prefillStartedAt, "seen empty, now queued: it began unseen, taken to begin now");
    PredictedTtftPolicy.learnQueueStart(m, 6_000, 30);
    assertEquals(20, m.prefillStartedAt, "a queue seen before keeps its start");
  }

  /**
   * The handle keeps the worker's load at admission and the policy's predicted prefill in one long: each round trips
   * within its bits (queued tokens up to 2^27 - 1, active requests up to 2^16 - 1, the prefill up to 2^21 - 2, none
   * noted as -1) and larger values are clamped, never spilling into a neighbour.
   */
  @Test
  void theAdmittedLoadPacksQueueActiveAndPredictedPrefillWithoutSpilling() {
    Routing r = new Routing(null, null, 0, 0, 1, 1, 0, new long[0], 0, "p", List.of());
    r.admittedLoad = Routing.admittedLoad(123_456, 789, 2_371);
    assertEquals(123_456, r.queuedPrefillTokens());
    assertEquals(789, r.activeAtAdmission());
    assertEquals(2_371, r.policyPrefillTokens());
    r.admittedLoad = Routing.admittedLoad(Long.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE);
    assertEquals((1L << 27) - 1, r.queuedPrefillTokens());
    assertEquals((1 << 16) - 1, r.activeAtAdmission());
    assertEquals((1 << 21) - 2, r.policyPrefillTokens());
    r.admittedLoad = Routing.admittedLoad(0, 0, -1);
    assertEquals(0, r.queuedPrefillTokens());
    assertEquals(0, r.activeAtAdmission());
    assertEquals(-1, r.policyPrefillTokens(), "none noted");
  }

  @Test
  void forgetsDepartedWorkers() {
    PredictedTtftPolicy policy = (PredictedTtftPolicy) RouterPolicy.predictedTtft();
    Router router = Router.newBuilder().policy(policy).ticker(new FakeTicker()).randomSeed(3).build();
    int live = 3;
    for (int w = 0; w < live; w++) {
      router.addWorker(Worker.of(WorkerId.of("w" + w)));
    }
    for (int i = 0; i < 3_000; i++) {
      router.removeWorker(WorkerId.of("w" + i));
      router.addWorker(Worker.of(WorkerId.of("w" + (i + live))));
      router.select(Fixtures.prompt(1_000 + i, 256)).close();
      assertTrue(policy.trackedWorkers() <= 2 * live + 9, "after " + (i + 1) + " churns the policy tracks "
          + policy.trackedWorkers() + " workers");
    }
  }
  /**
   * Two active requests share a 16-block prefix, each with a 3-block tail of its own (histogram: 6 blocks with one
   * holder, 16 with two). One finishing frees its 3 tail blocks only; both finishing free all 22. By drawing
   * without replacement, k of the 2 finished free 6 x k/2 + 16 x k/2 x (k-1)/1 blocks in expectation.
   */
  @Test
  void aSharedPrefixIsFreedOnlyWithItsLastHolder() {
    Candidates c = candidates(0, 600);
    long[] histogram = new long[LoadTracker.MAX_HOLDERS + 1];
    histogram[1] = 6;
    histogram[2] = 16;
    c.setHolderBlocks(0, histogram);
    assertEquals(1.0, PredictedTtftPolicy.finishing(c, 0, 2, 0, 3), 1e-5, "3 blocks: one request's tail");
    // 10 blocks: 3k + 8k(k-1) = 10, k = (5 + sqrt(345)) / 16.
    assertEquals((5 + Math.sqrt(345)) / 16, PredictedTtftPolicy.finishing(c, 0, 2, 0, 10), 1e-5);
    assertEquals(2.0, PredictedTtftPolicy.finishing(c, 0, 2, 0, 22), 1e-5, "all 22 only when both finish");
    assertEquals(2.0, PredictedTtftPolicy.finishing(c, 0, 2, 0, 40), 1e-5, "never more than all active");
    // 4 unbooked blocks (outputs, one holder each) freed in proportion: 5k + 8k(k-1) = 5 at k = 1.
    assertEquals(1.0, PredictedTtftPolicy.finishing(c, 0, 2, 4, 5), 1e-5);
  }
  /**
   * A worker whose tree (585 blocks) has never been seen to shrink; the prompts routed lately are 32 blocks on
   * average. The pinned blocks are cached, so the capacity is at most 585 / usage, and the free blocks at most
   * (1 - usage) x 585 / usage. An engine report of 1 waiting request at 96% KV usage bounds them by 24.4, fewer
   * than the 32 a prompt needs: the engine is waiting for memory and the cache is full. At 90% (up to 65 free) it
   * might take a prompt; with no request waiting nothing says the cache is full; and a 100-block tree at 30% usage
   * (up to 233 free) is a cache still filling.
   */
  @Test
  void anEngineWaitingWithLessFreeMemoryThanAPromptMeansItsCacheIsFull() {
    assertEquals(true, fullAfterReport(585, new EngineLoad(4, 1, 0.96, 0)));
    assertEquals(false, fullAfterReport(585, new EngineLoad(4, 1, 0.90, 0)), "up to 65 blocks free");
    assertEquals(false, fullAfterReport(585, new EngineLoad(4, 0, 1.0, 0)), "nothing waits");
    assertEquals(false, fullAfterReport(100, new EngineLoad(1, 1, 0.3, 0)), "a small tree, a cache filling");
  }

  private static boolean fullAfterReport(long tree, EngineLoad load) {
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    m.maxCached = tree;
    PredictedTtftPolicy.learnFullFromReport(load, m, 32);
    return m.filled;
  }

  /**
   * The cap on requests served is {@code (1 + loadSlack)} times the mean share, {@code 1.25 / n} by default: with 6
   * candidates 0.2083, so with ample evidence (10^9 selections weighed) a share of 0.21 is past it and 0.20 is not;
   * shares are taken over their sum (a window not yet filled sums to less than 1), so 0.105 of 0.5 is past it too.
   * One candidate is never past its share (1 of 1). The excess over the mean must also be two standard errors of the
   * share, 2 x sqrt((1/6)(5/6) / weighed): a share of 0.25 is past the cap, and 0.083 over the mean, which is
   * evidence over 1,000 selections (2 x 0.0118) but not over 66 (2 x 0.0459 = 0.092).
   */
  @Test
  void aWorkerIsPastItsShareAboveTheSlackTimesTheMeanShareWhenTheExcessIsEvidence() {
    double ample = 1e9;
    assertTrue(PredictedTtftPolicy.pastItsShare(0.21, 1, 6, 0.25, ample));
    assertTrue(!PredictedTtftPolicy.pastItsShare(0.20, 1, 6, 0.25, ample));
    assertTrue(PredictedTtftPolicy.pastItsShare(0.105, 0.5, 6, 0.25, ample));
    assertTrue(!PredictedTtftPolicy.pastItsShare(0.3, 0.5, 2, 0.25, ample), "0.6 of 2: under 0.625");
    assertTrue(!PredictedTtftPolicy.pastItsShare(1, 1, 1, 0.25, ample));
    assertTrue(!PredictedTtftPolicy.pastItsShare(0, 0, 3, 0.25, ample), "nothing served yet");
    assertTrue(PredictedTtftPolicy.pastItsShare(0.25, 1, 6, 0.25, 1000));
    assertTrue(!PredictedTtftPolicy.pastItsShare(0.25, 1, 6, 0.25, 66));
    assertTrue(!PredictedTtftPolicy.pastItsShare(0.25, 1, 6, 0.25, 0), "no selection weighed");
  }

  /**
   * An exponential window weighs its weights' {@code (sum w)^2 / sum w^2} selections: one selection weighs 1, two
   * with weights 1 and k weigh (1 + k)^2 / (1 + k^2), and a filled window (1 + k) / (1 - k), 1,023 for k = 1 -
   * 1/512; with k = 1 every selection weighs fully (the limit, t).
   */
  @Test
  void anExponentialWindowWeighsTheSumOfItsWeightsSquaredOverTheirSquares() {
    double k = 1 - 1.0 / 512;
    assertEquals(1, PredictedTtftPolicy.weighedSelections(k, 1), 1e-9);
    assertEquals((1 + k) * (1 + k) / (1 + k * k), PredictedTtftPolicy.weighedSelections(k, 2), 1e-9);
    assertEquals((1 + k) / (1 - k), PredictedTtftPolicy.weighedSelections(k, 100_000), 1e-6);
    assertEquals(66, PredictedTtftPolicy.weighedSelections(1 - 1e-9, 66), 1e-3);
    assertEquals(0, PredictedTtftPolicy.weighedSelections(k, 0));
  }

  /**
   * {@code n} idle workers (2 to 6, by seed); the first holds 30 of the prompt's 32 blocks, the others nothing,
   * with room (a copy evicts nothing). The holder costs 32 tokens, a copy 512, and no instantaneous bound fires
   * (nothing is active), so without a bound on requests served every request goes to the holder. With it: the first
   * learning window of 64 selections all do (the least history the policy learns from), and once the window is
   * filled the holder is passed over whenever its share of the recent selections
   * exceeds 1.25 / n (the cap's allowance is more than two standard errors of a filled window's share, so the cap
   * decides), so over the last 1,000 of 5,000 selections it gets that cap's share of them (the exponential share
   * oscillates about the cap). Each worker has completed one request of 2,000 (token-unit) nanoseconds, so a move
   * for balance may cost up to 0.25 x 2,000 = 500, and the copy costs 480 more than the holder.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aWorkerPastItsShareOfTheRequestsServedIsPassedOver(long seed) {
    int n = 2 + (int) (seed % 5);
    assertEquals(1.25 / n, servedByTheHolder(n, seed, 2_000), 0.01,
        n + " workers: the holder's share of the last 1,000");
  }

  /**
   * The setting of {@link #aWorkerPastItsShareOfTheRequestsServedIsPassedOver}, but requests take 1,800 (token-unit)
   * nanoseconds: a move for balance may cost at most 0.25 x 1,800 = 450, less than the 512 - 32 = 480 a copy costs
   * more than the holder, so the bound on requests served never passes the holder over.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theBoundOnRequestsServedMovesNoRequestForMoreThanTheSlackOfAServiceTime(long seed) {
    int n = 2 + (int) (seed % 5);
    assertEquals(1.0, servedByTheHolder(n, seed, 1_800), 0.0, n + " workers: the holder's share of the last 1,000");
  }

  /**
   * Two workers, nothing learned but a service time of 2,000 (token-unit) nanoseconds, so a move for balance may cost
   * up to 0.25 x 2,000 = 500. A holds 30 of the prompt's 32 blocks and has 3 active requests, B holds nothing, is
   * idle and has room. The bound in active requests is ceil(1.25 x 1/2 x (3 + 0 + 1)) = 3, and A would have 4. With
   * nothing queued at A and its 96 booked blocks within its tree of 600 (no memory wait), this request would not
   * wait at A: A is not passed over, and its 32 tokens beat B's cold 512. With 100 tokens queued at A it would wait
   * 100 there: A (132) is passed over for B (512), a move that costs 380, within the 500 allowed.
   */
  @Test
  void theBoundInActiveRequestsPassesAHolderOverOnlyWhereTheRequestWouldWaitThere() {
    assertEquals(0, overTheBoundAtTheHolder(0), "nothing waits at the holder");
    assertEquals(1, overTheBoundAtTheHolder(100), "100 tokens queued at the holder");
    assertTrue(PredictedTtftPolicy.holdsItWithoutAWait(30, 30, 0), "a holder, no wait");
    assertTrue(!PredictedTtftPolicy.holdsItWithoutAWait(30, 30, 1), "a holder with a wait");
    assertTrue(!PredictedTtftPolicy.holdsItWithoutAWait(20, 30, 0), "holds less than the longest match");
    assertTrue(!PredictedTtftPolicy.holdsItWithoutAWait(0, 0, 0), "a prefix cached nowhere");
  }

  private static int overTheBoundAtTheHolder(long queuedAtA) {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    policy.select(candidates(0, 600)); // the workers' models exist from here on
    policy.closed(A.id(), -2_000, 2_000);
    policy.closed(B.id(), -2_000, 2_000);
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
    c.add(A, 30, 30, 600, null);
    c.add(B, 0, 0, 600, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, queuedAtA, 96, 3);
    c.setLoad(1, 0, 0, 32, 0);
    return policy.select(c);
  }

  @Test
  void aMoveForBalanceMayCostUpToTheSlackOfAServiceTime() {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    assertTrue(policy.movesCheaplyForBalance(1_250, 1_000, 1_000), "250 more against 0.25 x 1,000");
    assertTrue(!policy.movesCheaplyForBalance(1_251, 1_000, 1_000), "251 more");
    assertTrue(policy.movesCheaplyForBalance(900, 1_000, 0), "cheaper: always");
    assertTrue(!policy.movesCheaplyForBalance(1_001, 1_000, 0), "no service time yet: no dearer move");
    assertTrue(!policy.movesCheaplyForBalance(Double.POSITIVE_INFINITY, 1_000, 1e12), "nowhere to move");
  }

  /**
   * The holder's share of the last 1,000 of 5,000 selections of the setting above, every worker having served one
   * request of {@code service} nanoseconds.
   */
  private static double servedByTheHolder(int n, long seed, long service) {
    Worker[] workers = new Worker[n];
    for (int w = 0; w < n; w++) {
      workers[w] = Worker.of(WorkerId.of("w" + w));
    }
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    int toHolder = 0;
    for (int i = 0; i < 5_000; i++) {
      Candidates c = new Candidates();
      c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
      for (int w = 0; w < n; w++) {
        c.add(workers[w], w == 0 ? 30 : 0, w == 0 ? 30 : 0, 600, null);
      }
      c.admit(new SplittableRandom(seed), 0);
      for (int w = 0; w < n; w++) {
        c.setLoad(w, 0, 0, 32, 0);
      }
      int choice = policy.select(c);
      if (i == 0) {
        for (int w = 0; w < n; w++) {
          policy.closed(workers[w].id(), -service, service);
        }
      }
      if (i < 64) {
        assertEquals(0, choice, "selection " + i + ": before a learning window, the holder");
      }
      if (i >= 4_000 && choice == 0) {
        toHolder++;
      }
    }
    return toHolder / 1000.0;
  }

  /**
   * Nothing is freed before a whole request finishes. With the histogram of {@link #aSharedPrefixIsFreedOnlyWithItsLastHolder}
   * (two active requests, 6 single-holder blocks and 16 shared by both), 1 block over the cache is freed in
   * expectation after k = 1/3 of a finish (the tails in proportion, 6 x k / 2 = 1; the shared blocks need both), but
   * it is waited for until one request has finished: the wait counts 1; beyond one, k is kept (10 blocks:
   * 3k + 8k(k - 1) = 10, k = (5 + sqrt(345)) / 16 = 1.47).
   */
  @Test
  void aMemoryWaitCountsAtLeastOneWholeFinish() {
    Candidates c = candidates(0, 600);
    long[] histogram = new long[LoadTracker.MAX_HOLDERS + 1];
    histogram[1] = 6;
    histogram[2] = 16;
    c.setHolderBlocks(0, histogram);
    double k = PredictedTtftPolicy.finishing(c, 0, 2, 0, 1);
    assertEquals(1.0 / 3, k, 1e-5);
    assertEquals(1.0, PredictedTtftPolicy.atLeastOneFinish(k), 1e-12);
    double deeper = PredictedTtftPolicy.finishing(c, 0, 2, 0, 10);
    assertEquals((5 + Math.sqrt(345)) / 16, PredictedTtftPolicy.atLeastOneFinish(deeper), 1e-5);
    assertEquals(0.0, PredictedTtftPolicy.atLeastOneFinish(0), 0.0, "nothing to wait for");
  }

  /**
   * The footprint compares an engine report with the blocks booked when it arrives. A full 585-block cache at 90%
   * usage pins 526.5 blocks; against 500 booked that is 1.053 blocks pinned per block booked, and the footprint
   * moves from 1 towards it by 8 / learningWindow of the difference. A report with a request waiting (booked, but
   * holding no blocks yet), one with no more booked than a mean prompt (32 blocks) and one before the cache is
   * known full teach nothing; a ratio under 1 is taken as 1. A replica that has not yet seen a request close there
   * learns the same (every replica learns the same from one report).
   */
  @Test
  void theFootprintComparesAReportWithTheBookingsAtItsArrival() {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    int window = PredictedTtftConfig.DEFAULT.learningWindow();
    PredictedTtftPolicy.Model m = fullModel();
    policy.learnFootprint(new EngineLoad(4, 0, 0.9, 20), m, 500, 32);
    assertEquals(1 + (0.9 * 585 / 500 - 1) * 8 / window, m.footprint, 1e-12);
    PredictedTtftPolicy.Model waiting = fullModel();
    policy.learnFootprint(new EngineLoad(3, 1, 0.9, 20), waiting, 500, 32);
    assertEquals(1.0, waiting.footprint, 0.0, "a request waiting");
    PredictedTtftPolicy.Model small = fullModel();
    policy.learnFootprint(new EngineLoad(1, 0, 0.1, 20), small, 32, 32);
    assertEquals(1.0, small.footprint, 0.0, "no more booked than a mean prompt");
    PredictedTtftPolicy.Model notFull = fullModel();
    notFull.filled = false;
    policy.learnFootprint(new EngineLoad(4, 0, 0.9, 20), notFull, 500, 32);
    assertEquals(1.0, notFull.footprint, 0.0, "cache not known full");
    PredictedTtftPolicy.Model noService = fullModel();
    noService.serviceNanos = Double.NaN;
    policy.learnFootprint(new EngineLoad(4, 0, 0.9, 20), noService, 500, 32);
    assertEquals(m.footprint, noService.footprint, 0.0, "learned whether or not this replica saw a close there");
    PredictedTtftPolicy.Model under = fullModel();
    policy.learnFootprint(new EngineLoad(4, 0, 0.5, 20), under, 500, 32);
    assertEquals(1.0, under.footprint, 0.0, "585 x 0.5 / 500 < 1 counts as 1");
  }

  /**
   * The lockstep term is the mean over the sampled decode gaps {@code e} of {@code max(0, P - |g + e|)}: with
   * {@code P} = 30 ms of successor prefill and a first token {@code g} = 10 ms after the one ahead, gaps of -8, 0, +2
   * and +500 ms leave the pair 2, 10, 12 and 510 ms apart, so the second successor waits 28, 20, 18 and 0 ms: 16.5 ms
   * on average. A pair that finishes a prefill or more apart costs nothing (gaps of a second either way, as spread
   * outputs make), and neither does a worker with no sample or no prefill learned.
   */
  @Test
  void theLockstepTermIsTheSecondSuccessorsMeanWait() {
    double ms = 1e6;
    double[] gaps = {-8 * ms, 0, 2 * ms, 500 * ms};
    assertEquals(16.5 * ms, PredictedTtftPolicy.lockstepCollision(gaps, 4, 10 * ms, 30 * ms), 1e-6);
    assertEquals(28 * ms, PredictedTtftPolicy.lockstepCollision(gaps, 1, 10 * ms, 30 * ms), 1e-6, "first sample only");
    double[] spread = {-1_000 * ms, 1_200 * ms, -40 * ms, 45 * ms};
    assertEquals(0.0, PredictedTtftPolicy.lockstepCollision(spread, 4, 10 * ms, 30 * ms), 0.0);
    assertEquals(0.0, PredictedTtftPolicy.lockstepCollision(gaps, 0, 10 * ms, 30 * ms), 0.0, "no sample");
    assertEquals(0.0, PredictedTtftPolicy.lockstepCollision(gaps, 4, 10 * ms, Double.NaN), 0.0, "no prefill known");
  }

  /**
   * A decode gap is sampled from two requests whose first tokens come on one worker together (within its mean
   * prefill work): first tokens both at 10 ms, closes at 110 and 130 ms, so the second decoded 120 ms against the
   * first's 100, a gap of +20 ms. A request closed before any partner's first token gives no sample, nor does one
   * whose next first token there comes a second later (that one starts a new pair instead), and a handle's second
   * close counts once.
   */
  @Test
  void aDecodeGapIsSampledFromTwoRequestsThatBeganDecodingTogether() {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(1).build();
    router.addWorker(A);
    Routing first = router.select(PROMPT);
    Routing second = router.select(PROMPT);
    ticker.advance(Duration.ofMillis(10));
    first.firstToken();
    second.firstToken();
    ticker.advance(Duration.ofMillis(100));
    first.close();
    first.close();
    assertEquals(0, policy.sampledDecodeGaps().length, "the pair is open until both close");
    ticker.advance(Duration.ofMillis(20));
    second.close();
    assertEquals(1, policy.sampledDecodeGaps().length);
    assertEquals(20e6, policy.sampledDecodeGaps()[0], 1e-6);

    Routing alone = router.select(PROMPT);
    alone.firstToken();
    ticker.advance(Duration.ofMillis(50));
    alone.close();
    Routing early = router.select(PROMPT);
    Routing late = router.select(PROMPT);
    early.firstToken();
    ticker.advance(Duration.ofSeconds(1));
    late.firstToken();
    ticker.advance(Duration.ofMillis(100));
    early.close();
    late.close();
    assertEquals(1, policy.sampledDecodeGaps().length, "no partner within a prefill: no sample");
  }

  /**
   * A worker's decode age is the time since each of this router's requests there had its first token, summed over
   * those not yet closed: requests booked at 0 and 20 ms with first tokens at 10 and 50 ms make 1.0 + 0.96 s at
   * 1.01 s. The handle keeps no first-token time, so a close takes off the mean first-token wait of those decoding
   * (20 ms, where the first's was 10): the second's age at 2.01 s is counted 2.01 - 0.02 - 0.02 = 1.97 s (1.96 in
   * fact). A request closed before its first token never decoded and changes nothing, a handle closed twice is
   * counted once, and with none decoding the age is 0.
   */
  @Test
  void theDecodeAgeSumsTheTimeSinceEachOpenRequestsFirstToken() {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(1).build();
    router.addWorker(A);
    Routing first = router.select(PROMPT);
    ticker.advance(Duration.ofMillis(10));
    first.firstToken();
    ticker.advance(Duration.ofMillis(10));
    Routing second = router.select(PROMPT);
    ticker.advance(Duration.ofMillis(30));
    second.firstToken();
    Routing neverDecoded = router.select(PROMPT);
    assertEquals(0.0, policy.decodeAgeSeconds(A.id(), 10_000_000), 1e-12, "none decoding before 10 ms");
    assertEquals(1.96, policy.decodeAgeSeconds(A.id(), 1_010_000_000), 1e-9);
    ticker.advance(Duration.ofMillis(960));
    first.close();
    first.close();
    neverDecoded.close();
    assertEquals(1.97, policy.decodeAgeSeconds(A.id(), 2_010_000_000), 1e-9);
    second.close();
    assertEquals(0.0, policy.decodeAgeSeconds(A.id(), 3_000_000_000L), 0.0);
  }

  /**
   * The growth fit recovers an engine that pins 1.05 blocks per booked block plus 7 blocks per second of decode age
   * from reports whose bookings and ages vary independently (noise-free, so least squares is exact); a worker is
   * priced the larger of that and the average footprint's estimate. An engine whose pins are all in its bookings
   * (no growth) gives a rate of 0 and its footprint, and is then priced by the average footprint; a footprint under
   * 1 is taken as 1 with the rate refitted; while bookings and age move together (one report) the fit stays
   * undetermined and the average footprint prices memory.
   */
  @Test
  void theGrowthFitSeparatesTheFootprintPerBookedBlockFromTheOutputRate() {
    int window = PredictedTtftConfig.DEFAULT.learningWindow();
    PredictedTtftPolicy.Model m = fullModel();
    PredictedTtftPolicy.Model flat = fullModel();
    PredictedTtftPolicy.Model under = fullModel();
    long[][] reports = {{300, 4}, {420, 1}, {360, 9}, {480, 6}, {330, 2}};
    for (long[] r : reports) {
      report(m, r[0], r[1], 1.05 * r[0] + 7 * r[1], window);
      report(flat, r[0], r[1], 1.2 * r[0], window);
      report(under, r[0], r[1], 0.9 * r[0] + 7 * r[1], window);
    }
    assertEquals(1.05, m.growthFootprint, 1e-9);
    assertEquals(7.0, m.outputRate, 1e-9);
    assertEquals(1.05 * 400 + 7 * 3, PredictedTtftPolicy.pinnedBlocks(m, 400, 3_000_000_000L), 1e-6);
    m.footprint = 1.2;
    assertEquals(1.2 * 400, PredictedTtftPolicy.pinnedBlocks(m, 400, 3_000_000_000L), 1e-9,
        "decodes younger than the average footprint holds: the average");
    assertEquals(0.0, flat.outputRate, 1e-9);
    assertEquals(1.2, flat.growthFootprint, 1e-9);
    flat.footprint = 1.15;
    assertEquals(1.15 * 400, PredictedTtftPolicy.pinnedBlocks(flat, 400, 3_000_000_000L), 1e-9,
        "no growth found: the average footprint, as before the fit");
    assertEquals(1.0, under.growthFootprint, 0.0);
    assertTrue(under.outputRate > 0);
    PredictedTtftPolicy.Model once = fullModel();
    once.footprint = 1.1;
    report(once, 300, 4, 400, window);
    assertTrue(Double.isNaN(once.outputRate), "one report cannot tell booked blocks from decode age");
    assertEquals(1.1 * 400, PredictedTtftPolicy.pinnedBlocks(once, 400, 0), 1e-9);
    PredictedTtftPolicy.Model notFull = fullModel();
    notFull.filled = false;
    for (long[] r : reports) {
      report(notFull, r[0], r[1], 1.05 * r[0] + 7 * r[1], window);
    }
    assertTrue(Double.isNaN(notFull.outputRate), "cache not known full");
  }

  /**
   * Reports {@code pinned} blocks pinned (as a usage of the 585-block cache) with {@code booked} booked while one
   * request has decoded for {@code ageSeconds} (its first token at 0, the report at that age).
   */
  private static void report(PredictedTtftPolicy.Model m, long booked, long ageSeconds, double pinned, int window) {
    m.decoding = 1;
    m.decodeEpoch = 0;
    m.decodeBookedSum = 0;
    m.decodeFirstTokenSum = 0;
    PredictedTtftPolicy.learnGrowth(new EngineLoad(4, 0, pinned / 585, ageSeconds * 1_000_000_000L), m, booked, 32,
        window);
  }

  /**
   * The normal distribution function against values any table gives (Phi(0) = 1/2, Phi(1) = 0.8413447, Phi(1.96) =
   * 0.9750021, Phi(-2.326348) = 0.01), within the approximation's 1.5e-7; and for seeded random arguments its
   * symmetry (Phi(z) + Phi(-z) = 1) and monotonicity.
   */
  @Test
  void theNormalDistributionFunctionMatchesItsTableAndIsSymmetric() {
    assertEquals(0.5, PredictedTtftPolicy.normalCdf(0), 1e-7);
    assertEquals(0.8413447, PredictedTtftPolicy.normalCdf(1), 2e-7);
    assertEquals(0.1586553, PredictedTtftPolicy.normalCdf(-1), 2e-7);
    assertEquals(0.9750021, PredictedTtftPolicy.normalCdf(1.96), 2e-7);
    assertEquals(0.01, PredictedTtftPolicy.normalCdf(-2.326348), 2e-7);
    SplittableRandom random = new SplittableRandom(15);
    for (int i = 0; i < 1_000; i++) {
      double z = random.nextDouble(-8, 8);
      double dz = random.nextDouble(1e-3, 1);
      assertEquals(1, PredictedTtftPolicy.normalCdf(z) + PredictedTtftPolicy.normalCdf(-z), 1e-7, "z = " + z);
      assertTrue(PredictedTtftPolicy.normalCdf(z + dz) >= PredictedTtftPolicy.normalCdf(z), "z = " + z);
    }
  }

  /**
   * With the estimate's error unknown, the memory wait counts whole only where the estimate exceeds the cache; with a
   * mean squared error of 25 blocks² (a standard deviation of 5), a worker 5 blocks short of full waits with the
   * probability that a normal error exceeds one standard deviation (0.1587), one exactly full with 1/2, one 10 over
   * with Phi(2) = 0.9772.
   */
  @Test
  void theMemoryWaitIsWeighedByTheChanceTheEstimateIsShort() {
    assertEquals(1.0, PredictedTtftPolicy.memoryWaitProbability(0.5, Double.NaN), 0.0);
    assertEquals(0.0, PredictedTtftPolicy.memoryWaitProbability(-0.5, Double.NaN), 0.0);
    assertEquals(0.0, PredictedTtftPolicy.memoryWaitProbability(0, Double.NaN), 0.0);
    assertEquals(0.0, PredictedTtftPolicy.memoryWaitProbability(-3, 0), 0.0, "an error of 0 is the estimate alone");
    assertEquals(0.1586553, PredictedTtftPolicy.memoryWaitProbability(-5, 25), 2e-7);
    assertEquals(0.5, PredictedTtftPolicy.memoryWaitProbability(0, 25), 2e-7);
    assertEquals(0.9772499, PredictedTtftPolicy.memoryWaitProbability(10, 25), 2e-7);
  }

  /**
   * The estimate's error against a report, before the report teaches the footprint: a full 585-block cache at 90%
   * usage pins 526.5 blocks where 500 booked at a footprint of 1 estimate 500, an error of 26.5 blocks, whose square
   * the first report sets. A second report at 500 / 585 usage (no error) moves it by 8 / learningWindow towards 0.
   * Reports the footprint does not use (a request waiting, no more booked than a mean prompt, the cache not known
   * full) teach nothing.
   */
  @Test
  void thePinnedErrorIsTheEstimatesMissAtEachReport() {
    int window = PredictedTtftConfig.DEFAULT.learningWindow();
    PredictedTtftPolicy.Model m = fullModel();
    PredictedTtftPolicy.learnPinnedError(new EngineLoad(4, 0, 0.9, 20), m, 500, 32, window);
    assertEquals(26.5 * 26.5, m.pinnedSquaredError, 1e-9);
    PredictedTtftPolicy.learnPinnedError(new EngineLoad(4, 0, 500.0 / 585, 30), m, 500, 32, window);
    assertEquals(26.5 * 26.5 * (1 - 8.0 / window), m.pinnedSquaredError, 1e-9);
    PredictedTtftPolicy.Model waiting = fullModel();
    PredictedTtftPolicy.learnPinnedError(new EngineLoad(3, 1, 0.9, 20), waiting, 500, 32, window);
    assertTrue(Double.isNaN(waiting.pinnedSquaredError), "a request waiting");
    PredictedTtftPolicy.Model small = fullModel();
    PredictedTtftPolicy.learnPinnedError(new EngineLoad(1, 0, 0.1, 20), small, 32, 32, window);
    assertTrue(Double.isNaN(small.pinnedSquaredError), "no more booked than a mean prompt");
    PredictedTtftPolicy.Model notFull = fullModel();
    notFull.filled = false;
    PredictedTtftPolicy.learnPinnedError(new EngineLoad(4, 0, 0.9, 20), notFull, 500, 32, window);
    assertTrue(Double.isNaN(notFull.pinnedSquaredError), "cache not known full");
  }

  /**
   * A clock that stops (every selection reads one instant: a coarse or frozen ticker) never leaves the policy without
   * a choice. The mean gap between selections decays towards 0 at each zero gap (by 1 / 64 per selection), and after
   * about 43,000 of them (1 ms x (63 / 64)^43,000 is under 1e-290 ns) the arrival rate it divides by overflowed: every
   * candidate cost infinity and the selection threw an IndexOutOfBoundsException (found by the
   * PredictedTtftSelectBenchmark). Here 200 requests are learned 1 ms apart, each with its first token and close, and
   * then 60,000 are routed at one instant: every one must go to one of the 4 workers, and the counts must add up.
   */
  @Test
  void aStoppedClockNeverLeavesTheSelectionWithoutAChoice() {
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(RouterPolicy.predictedTtft()).ticker(ticker).randomSeed(7).build();
    List<WorkerId> ids = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"), WorkerId.of("w3"));
    ids.forEach(id -> router.addWorker(Worker.of(id)));
    List<Routing> inFlight = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      inFlight.add(router.select(Fixtures.prompt(i % 8, 64 * 16)));
      ticker.advance(Duration.ofMillis(1));
      if (inFlight.size() > 8) {
        Routing done = inFlight.remove(0);
        done.firstToken();
        done.close();
      }
    }
    inFlight.forEach(r -> {
      r.firstToken();
      r.close();
    });
    int[] chosen = new int[ids.size()];
    for (int i = 0; i < 60_000; i++) {
      try (Routing r = router.select(Fixtures.prompt(i % 8, 64 * 16))) {
        chosen[ids.indexOf(r.workerId())]++;
      }
    }
    assertEquals(60_000, java.util.Arrays.stream(chosen).sum());
  }

  private static PredictedTtftPolicy.Model fullModel() {
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    m.filled = true;
    m.maxCached = 585;
    m.serviceNanos = 1e9;
    return m;
  }

  /**
   * Requests arrive at a full worker at 4 per second for 1.5 s each; its cache holds 600 blocks, turned over once
   * per service time. A request holding 150 blocks beyond the cache delays each of the 4 x 1.5 = 6 requests that
   * arrive while it runs by 150 / 600 of a service time, 0.375 s: 2.25 s in all. A request that adds only a 20-block
   * tail delays them by 6 x 20 / 600 x 1.5 s = 0.3 s; nothing is charged without a known cache.
   */
  @Test
  void blocksHeldBeyondAFullCacheDelayTheRequestsArrivingWhileTheyAreHeld() {
    double rate = 4 / 1e9;
    double service = 1.5e9;
    assertEquals(2.25e9, PredictedTtftPolicy.memoryDelayToOthers(rate, service, 150, 600), 1);
    assertEquals(0.3e9, PredictedTtftPolicy.memoryDelayToOthers(rate, service, 20, 600), 1);
    assertEquals(0, PredictedTtftPolicy.memoryDelayToOthers(rate, service, 20, 0));
  }

  /**
   * A request that would copy a 127-block prefix onto a worker with room for it now holds nothing beyond the cache
   * there, but where the worker's memory binds at 3 of 4 selections, 3/4 of the copied blocks are held against the
   * requests waiting there: 95.25 blocks. With 30 of them beyond the cache now, those 30 count whole and 3/4 of the
   * other 97: 102.75. A join copies nothing and holds only its excess (20 blocks of its tail); a worker whose memory
   * never binds charges a copy only its excess.
   */
  @Test
  void aCopyHoldsItsCopiedPrefixAgainstTheOthersForTheShareOfTheTimeMemoryBinds() {
    assertEquals(95.25, PredictedTtftPolicy.heldAgainstOthers(0, 127, 0.75), 1e-9);
    assertEquals(30 + 0.75 * 97, PredictedTtftPolicy.heldAgainstOthers(30, 127, 0.75), 1e-9);
    assertEquals(20, PredictedTtftPolicy.heldAgainstOthers(20, 0, 0.75), 1e-9, "a join");
    assertEquals(30, PredictedTtftPolicy.heldAgainstOthers(30, 127, 0), 1e-9, "memory that never binds");
    assertEquals(148, PredictedTtftPolicy.heldAgainstOthers(148, 127, 0.75), 1e-9, "all of it beyond the cache");
  }

  /**
   * The share of the time memory binds is learned per worker over selections, for a request joining a prefix held
   * there. With a 1 s service time learned, A holds 30 of the prompt's 32 blocks with one active request and 140
   * blocks booked with this request's (its largest tree 100): a join there exceeds the cache at every selection, so
   * after 64 selections A's share is 1 - (63/64)^64 (an exponential window of 64 selections, from 0). B holds nothing
   * of the prompt, one active request and {@code bookedB} with this request's 32, and its engine has reported: with
   * 120 booked, this request placed there would exceed B's cache by 20 blocks, but 30 of its 32 would be the copied
   * prefix, which a joining request would not bring, so B's share stays 0; with 140, 40 over and 10 beyond the copy,
   * it rises as A's.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theShareOfTheTimeMemoryBindsIsLearnedForAJoin(long seed) {
    double expected = 1 - Math.pow(63.0 / 64, 64);
    assertEquals(0.0, memoryBoundAfter64(seed, 120)[1], 1e-12, "B: only a copy would exceed the cache");
    double[] shares = memoryBoundAfter64(seed, 140);
    assertEquals(expected, shares[0], 1e-9, "A: a join waits");
    assertEquals(expected, shares[1], 1e-9, "B: a join would wait too");
  }

  private static double[] memoryBoundAfter64(long seed, long bookedB) {
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    learnA2msStepAndAOneSecondService(policy, seed);
    assertEquals(0.0, policy.memoryBoundShare(A.id()), 1e-12, "nothing bound while learning");
    assertEquals(0.0, policy.memoryBoundShare(B.id()), 1e-12, "nothing bound while learning");
    for (int i = 0; i < 64; i++) {
      Candidates c = new Candidates();
      c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
      c.add(A, 30, 30, 100, null);
      c.add(B, 0, 0, 100, new EngineLoad(1, 0, 0.9, 0));
      c.admit(new SplittableRandom(1), 0);
      c.setLoad(0, 0, 0, 140, 1);
      c.setLoad(1, 0, 0, bookedB, 1);
      policy.select(c);
    }
    return new double[] {policy.memoryBoundShare(A.id()), policy.memoryBoundShare(B.id())};
  }

  /**
   * Two idle workers; {@code a} holds 30 of the prompt's 32 blocks, {@code b} nothing of it, but {@code b} holds a
   * warm prefix of another prompt (30 blocks, routed there first) and its tree shrank from 50 to 40 blocks (an
   * eviction: its cache is full at 50). A copy of 30 blocks onto {@code b} evicts 30 + 30 - 50 = 10 warm blocks
   * there (and afterwards the same: the copy's own prefix is then the warm one), priced 10 x 16 = 160 tokens, so
   * the copy costs 512 + 160 = 672 against the holder's 32: a move for balance of 640. Before any request has
   * completed, no move is cheap enough (the limit is a share of a service time), and every request goes to the
   * holder, also after the window fills, where with a copy into room it gets only 1.25 / 2 of them
   * ({@code aWorkerPastItsShareOfTheRequestsServedIsPassedOver}).
   */
  @Test
  void theBoundOnRequestsServedMovesNoRequestOverAWarmPrefixBeforeAServiceTimeIsKnown() {
    assertEquals(1.0, servedByTheHolderOverAWarmPrefix(-1), 0.0, "the holder's share of the last 1,000");
  }

  /**
   * The setting of {@link #theBoundOnRequestsServedMovesNoRequestOverAWarmPrefixBeforeAServiceTimeIsKnown} once each
   * worker has completed a request: the holder past its share is passed over for the copy that evicts a warm prefix
   * when the move (640, the eviction price included) is within 0.25 of the service time, so with 2,800 (a limit of
   * 700) it gets 1.25 / 2 of the last 1,000 requests, and with 2,400 (a limit of 600) all of them. Before, a copy
   * that evicted anything warm never counted as a move for balance, so when every cache was full and warm no bound
   * could keep the promise of balance (a worker leaving and coming back, seed 1, with the fit's regressor corrected:
   * max/mean 1.42).
   */
  @Test
  void theBoundOnRequestsServedMovesARequestOverAWarmPrefixWhenTheMoveIsWithinTheSlack() {
    assertEquals(1.25 / 2, servedByTheHolderOverAWarmPrefix(2_800), 0.01, "the holder's share of the last 1,000");
    assertEquals(1.0, servedByTheHolderOverAWarmPrefix(2_400), 0.0, "the holder's share of the last 1,000");
  }

  /** The holder's share of the last 1,000 of 5,000 selections; {@code service} < 0: no request completes. */
  private static double servedByTheHolderOverAWarmPrefix(long service) {
    int[] other = Fixtures.prompt(2, 32 * 16);
    long[] otherHashes = BlockHasher.of(16).sequenceHashes(other);
    PredictedTtftPolicy policy = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    Candidates first = new Candidates();
    first.reset(RouteRequest.of(other), other.length, 16, otherHashes);
    first.add(A, 0, 0, 600, null);
    first.add(B, 30, 30, 50, null);
    first.admit(new SplittableRandom(1), 0);
    first.setLoad(0, 0, 0, 32, 0);
    first.setLoad(1, 0, 0, 32, 0);
    assertEquals(1, policy.select(first), "the other prompt goes to its holder b, warm there");
    if (service >= 0) {
      policy.closed(A.id(), -service, service);
      policy.closed(B.id(), -service, service);
    }
    int toHolder = 0;
    for (int i = 0; i < 5_000; i++) {
      Candidates c = new Candidates();
      c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, HASHES);
      c.add(A, 30, 30, 600, null);
      c.add(B, 0, 0, 40, null);
      c.admit(new SplittableRandom(1), 0);
      c.setLoad(0, 0, 0, 32, 0);
      c.setLoad(1, 0, 0, 32, 0);
      int choice = policy.select(c);
      if (i < 63) { // with the other prompt's, a learning window of 64 selections
        assertEquals(0, choice, "selection " + i + ": before a learning window, the holder");
      }
      if (i >= 4_000 && choice == 0) {
        toHolder++;
      }
    }
    return toHolder / 1000.0;
  }

  /**
   * The engine's step rule, not the policy's: a prefill of {@code x} tokens alone runs in chunks of at most 8,192
   * tokens, each step taking {@code 4.5 ms + 25 us x P + 1 ns x P^2} for its {@code P} tokens (the simulator's
   * default timing), in nanoseconds.
   */
  private static long chunkedPrefillNanos(long x) {
    long t = 0;
    for (long left = x; left > 0; left -= 8192) {
      long p = Math.min(left, 8192);
      t += 4_500_000 + 25_000 * p + p * p;
    }
    return t;
  }

  /**
   * Over prompts of 16-40,000 tokens the chunked, superlinear prefill makes the least-squares line steeper than
   * the short prompts' (about 33.7 us per token against 25) and its intercept negative (about -7.9 ms on a uniform
   * sample), so the fitted intercept clamps at 0 and cannot be the engine's step; the prefill spread is then the
   * root-mean-square of the errors of the predictions made before each first token of a request admitted idle,
   * weighted by the fit's exponential window, counted once the fit carries 8 observations. First tokens of requests
   * that found others active (here 125 ms late per active request, 125-500 ms, as memory waits would make them)
   * change the fit but not the spread.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aSuperlinearPrefillClampsTheInterceptAndThePrefillSpreadMeasuresTheFitOnIdleFirstTokens(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    double keep = 1 - 1.0 / 64;
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    double sq = 0;
    double weight = 0;
    for (int i = 0; i < 2000; i++) {
      long x = 16 + random.nextInt(40_000 - 16 + 1);
      int active = random.nextInt(4) == 0 ? 1 + random.nextInt(4) : 0;
      boolean idle = active == 0;
      long y = chunkedPrefillNanos(x) + 125_000_000L * active;
      sq *= keep;
      weight *= keep;
      if (idle && m.n >= 8 && !Double.isNaN(m.b)) {
        double error = y - (m.a + m.b * x);
        sq += error * error;
        weight += 1;
      }
      m.observe(x, active, y, keep);
    }
    assertEquals(0, m.a, "the intercept clamps at 0");
    double spread = m.prefillSpread();
    assertEquals(Math.sqrt(sq / weight), spread, 1e-6 * spread, "weighted RMS of the idle prediction errors");
    assertTrue(spread > 1_000_000 && spread < 30_000_000, "a few ms, not the 125-500 ms waits: " + spread);
    assertEquals(spread, PredictedTtftPolicy.tieTolerance(m.a, spread), "the spread is the tolerance where a is 0");
  }

  @Test
  void theTieToleranceIsTheLargerOfTheInterceptAndThePrefillSpreadWhenBothAreKnown() {
    assertEquals(4.5e6, PredictedTtftPolicy.tieTolerance(4.5e6, 0.7e6), "the grid: the intercept decides");
    assertEquals(9e6, PredictedTtftPolicy.tieTolerance(0, 9e6), "a clamped intercept: the spread decides");
    assertEquals(3e6, PredictedTtftPolicy.tieTolerance(3e6, Double.NaN), "a spread not known: the intercept");
    assertEquals(0, PredictedTtftPolicy.tieTolerance(Double.POSITIVE_INFINITY, Double.NaN), "nothing known");
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    for (int i = 0; i < 11; i++) {
      m.observe(1000 + 100 * i, 0, 2_000_000 + 10_000 * (1000 + 100 * i) + (i % 2 == 0 ? 1_000 : -1_000), 1);
    }
    assertTrue(Double.isNaN(m.prefillSpread()), "3 idle errors counted (after 8 observations) are not enough");
    m.observe(1000, 0, 12_000_000, 1);
    assertTrue(m.prefillSpread() > 0, "a fourth makes it known");
  }

  /**
   * What is left of a warm prefix of 30 blocks in a full cache once new blocks are allocated: allocation takes the
   * least recently freed blocks first, so the warm prefixes used less recently than it ({@code before}) go first,
   * then its own blocks, tail first.
   */
  @Test
  void aQueuedPrefillEvictsTheLeastRecentlyUsedPrefixesFirstAndAPrefixTailFirst() {
    // It is the least recently used: 7 new blocks take its last 7, 23 are left.
    assertEquals(23, PredictedTtftPolicy.survivingBlocks(30, 0, 7));
    // 10 blocks of older prefixes go first, then 15 of its 30.
    assertEquals(15, PredictedTtftPolicy.survivingBlocks(30, 10, 25));
    // 5 older blocks and 40 new: 35 of its blocks would go, it has 30.
    assertEquals(0, PredictedTtftPolicy.survivingBlocks(30, 5, 40));
    // 570 older blocks absorb all 7 new ones: nothing of it goes.
    assertEquals(30, PredictedTtftPolicy.survivingBlocks(30, 570, 7));
    // Exactly the older blocks: it is the next to go, but nothing of it has gone.
    assertEquals(30, PredictedTtftPolicy.survivingBlocks(30, 7, 7));
  }

  /** A is empty and idle; B holds {@code blocksAtB} of {@code prompt} in a tree of {@code cachedOfB}, {@code queuedAtB} queued. */
  private static Candidates heldAtB(int[] prompt, int blocksAtB, long cachedOfB, long queuedAtB) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(prompt), prompt.length, 16, BlockHasher.of(16).sequenceHashes(prompt));
    c.add(A, 0, 0, 0, null);
    c.add(B, blocksAtB, blocksAtB, cachedOfB, null);
    c.admit(new SplittableRandom(1), 0);
    c.setLoad(0, 0, 0, 32, 0);
    c.setLoad(1, 0, queuedAtB, 32, 0);
    return c;
  }

  /**
   * A prompt queued at a full holder before this request allocates its new blocks first, and they take the free
   * queue's head: the hit this request expects at the holder counts only what survives. B's cache is known full at
   * 600 blocks (its tree shrank) and holds the prompt's first 30 blocks, the only prefix routed there; no service
   * time is known, so no other prefix is known freed ahead of it. With 400 tokens (25 blocks) queued at B and no
   * room, B keeps 5 of the 30: B costs 400 + 512 - 5 x 16 = 832 tokens against A's 512 (recomputing into a cache not
   * known full: no price), and A wins; with nothing queued B costs 32 and wins.
   */
  @Test
  void aHitAQueuedPrefillWillEvictAtAFullHolderIsNotCounted() {
    RouterPolicy p = RouterPolicy.predictedTtft();
    assertEquals(1, p.select(heldAtB(PROMPT, 30, 600, 0)));
    assertEquals(1, p.select(heldAtB(PROMPT, 30, 590, 0)), "B's tree shrank: 600 blocks is its capacity");
    assertEquals(1, p.select(heldAtB(PROMPT, 30, 600, 0)), "nothing queued: nothing evicted");
    assertEquals(0, p.select(heldAtB(PROMPT, 30, 600, 400)), "25 of its 30 blocks go before its turn");
  }

  private static final long SECOND = 1_000_000_000L;

  /** One candidate holding {@code PROMPT}'s first 30 blocks in a full tree of 600, at 10 s. */
  private static Candidates holder(int activeOverlap, long queuedTokens, long decodeBlocks) {
    Candidates c = new Candidates();
    c.reset(RouteRequest.of(PROMPT), PROMPT.length, 16, BlockHasher.of(16).sequenceHashes(PROMPT));
    c.add(B, 30, 30, 600, null);
    c.admit(new SplittableRandom(1), 10 * SECOND);
    c.setLoad(0, activeOverlap, queuedTokens, decodeBlocks, 0);
    return c;
  }

  /** A worker's model: cache known full at 600 blocks, one second of service, warm prefixes touched as given. */
  private static PredictedTtftPolicy.Model warmAt(double serviceNanos, long... prefixTouches) {
    PredictedTtftPolicy.Model m = new PredictedTtftPolicy.Model();
    m.filled = true;
    m.maxCached = 600;
    m.serviceNanos = serviceNanos;
    // prefixTouches: pairs of (prompt seed, or 0 for PROMPT; touch instant), least recent first, 30 blocks each.
    for (int k = 0; k < prefixTouches.length; k += 2) {
      int[] prompt = prefixTouches[k] == 0 ? PROMPT : Fixtures.prompt((int) prefixTouches[k], 512);
      m.touchWarm(BlockHasher.of(16).sequenceHashes(prompt)[29], 30, 600, prefixTouches[k + 1]);
    }
    return m;
  }

  /**
   * What a 30-block prefix keeps when 400 queued tokens (25 blocks) are allocated in a full cache of 600 blocks, by
   * hand: the free blocks ahead of it go first, then its own, tail first. Ahead of it are the warm prefixes touched
   * before it that are freed, those touched more than a service time ago (1 s; now is 10 s), and never more than the
   * free blocks less the prefix: 600 less the blocks booked there (the request's own 32 not counted), less 30.
   */
  @Test
  void aQueuedPrefillTakesTheFreedPrefixesAheadFirstAndNeverMoreThanTheFreeBlocks() {
    // A prefix touched at 0 s, freed since: its 30 blocks absorb the 25, the prompt's prefix keeps its 30.
    assertEquals(30, PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 400, 32), 0, warmAt(SECOND, 7, 0, 0, SECOND)));
    // Touched at 9.2 s, within a service time: still held by its request, nothing freed is ahead; 30 - 25 = 5.
    assertEquals(5, PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 400, 32), 0,
        warmAt(SECOND, 7, 9_200_000_000L, 0, 9_500_000_000L)));
    // No service time known: no prefix is known freed; 5.
    assertEquals(5, PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 400, 32), 0,
        warmAt(Double.NaN, 7, 0, 0, SECOND)));
    // Two freed prefixes ahead (60 blocks), but 560 booked blocks leave 600 - 560 - 30 = 10 free blocks ahead of
    // it: 25 - 10 = 15 of its blocks go, 15 are left.
    assertEquals(15, PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 400, 560 + 32), 0,
        warmAt(SECOND, 7, 0, 8, SECOND / 2, 0, SECOND)));
    // Active requests hold the prompt through block 16; the GPU holds 30, so the stride's blocks up to 16 + 7 = 23
    // are pinned (sharedWithActive): of the 5 left, the pinned 23 stay.
    assertEquals(23, PredictedTtftPolicy.survivesQueuedPrefills(holder(16, 400, 16), 0,
        warmAt(SECOND, 7, 9_200_000_000L, 0, 9_500_000_000L)));
    // Nothing queued, or a prefix the model does not hold: nothing predicted evicted.
    assertEquals(Double.POSITIVE_INFINITY,
        PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 0, 32), 0, warmAt(SECOND, 0, SECOND)));
    assertEquals(Double.POSITIVE_INFINITY,
        PredictedTtftPolicy.survivesQueuedPrefills(holder(0, 400, 32), 0, warmAt(SECOND, 7, 0, 8, SECOND)));
  }
}
