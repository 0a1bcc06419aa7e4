package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Approximate mode's prediction index against an independent model: a block is predicted on a worker while the
 * last selection that routed a prompt containing it there is younger than the TTL. The router stores predictions as
 * a tree of renewed and extended prefixes to save index writes; what it predicts must be exactly the model's, over
 * seeded workloads of repeated prompts, shared prefixes with other tails, and conversations extending each other.
 */
class PredictionsModelTest {
  private static final int BLOCK = 16;
  private static final long TTL_MS = 10_000;

  static Stream<Long> seeds() {
    return LongStream.rangeClosed(1, 6).boxed();
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void predictionsAreTheLastRoutingOfEachBlockWithinTheTtl(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(seed)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofMillis(TTL_MS), 1 << 20)).build();
    List<WorkerId> workers = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"));
    workers.forEach(w -> router.addWorker(Worker.of(w)));
    List<int[]> pool = pool(random);
    BlockHasher hasher = BlockHasher.of(BLOCK);
    // The model: (worker, block hash) -> time it was last routed there, in ms of the fake clock.
    Map<WorkerId, Map<Long, Long>> lastRouted = new HashMap<>();
    long nowMs = 0;
    List<Routing> open = new ArrayList<>();
    for (int step = 0; step < 600; step++) {
      int[] prompt = pool.get(random.nextInt(pool.size()));
      Routing routing = router.select(prompt);
      long[] hashes = hasher.sequenceHashes(prompt);
      Map<Long, Long> routed = lastRouted.computeIfAbsent(routing.workerId(), w -> new HashMap<>());
      for (long h : hashes) {
        routed.put(h, nowMs);
      }
      open.add(routing);
      if (open.size() > 4 || random.nextInt(3) == 0) {
        open.remove(random.nextInt(open.size())).close();
      }
      assertSameAsModel(router, workers, pool, hasher, lastRouted, nowMs, "step " + step);
      long advance = random.nextInt(4) == 0 ? random.nextLong(TTL_MS / 2) : random.nextLong(200);
      ticker.advance(Duration.ofMillis(advance));
      nowMs += advance;
    }
    Predictions predictions = router.predictions();
    assertTrue(predictions.renewed > 0 && predictions.extended > 0 && predictions.storedWhole > 0,
        "renewed " + predictions.renewed + ", extended " + predictions.extended + ", whole " + predictions.storedWhole);
    IndexInvariants.check(predictions.index());
  }

  /**
   * A peer's predictions, delivered through the router's {@link RemoteLoad} view, against the same model: the
   * delivering thread expires them at the TTL, and one predicted again on the same worker is renewed in place.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void peersPredictionsAreTheirLastDeliveryWithinTheTtl(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(seed)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofMillis(TTL_MS), 1 << 20)).build();
    List<WorkerId> workers = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"));
    workers.forEach(w -> router.addWorker(Worker.of(w)));
    List<int[]> pool = pool(random);
    BlockHasher hasher = BlockHasher.of(BLOCK);
    Map<WorkerId, Map<Long, Long>> lastPredicted = new HashMap<>();
    long nowMs = 0;
    for (int step = 0; step < 600; step++) {
      long[] hashes = hasher.sequenceHashes(pool.get(random.nextInt(pool.size())));
      WorkerId worker = workers.get(random.nextInt(workers.size()));
      router.remoteLoad().predicted(worker, hashes, hashes.length);
      Map<Long, Long> predicted = lastPredicted.computeIfAbsent(worker, w -> new HashMap<>());
      for (long h : hashes) {
        predicted.put(h, nowMs);
      }
      assertSameAsModel(router, workers, pool, hasher, lastPredicted, nowMs, "delivery " + step);
      long advance = random.nextInt(4) == 0 ? random.nextLong(TTL_MS / 2) : random.nextLong(200);
      ticker.advance(Duration.ofMillis(advance));
      nowMs += advance;
    }
    assertTrue(router.predictions().remoteRenewed > 0, "renewed " + router.predictions().remoteRenewed);
    IndexInvariants.check(router.predictions().index());
  }

  /**
   * The router's own selections and a peer's deliveries together, against one model: a block is predicted on a
   * worker while the last routing there of a prompt containing it, by either, is younger than the TTL. An own
   * routing of a prompt a peer's node holds whole renews that node (no index write), and a peer's delivery of a
   * prompt the router's own node holds whole renews that one. The router's own predictions
   * expire at its selections and the peers' at their deliveries, so each check follows a selection and a delivery.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void ownAndPeersPredictionsTogetherAreTheLastRoutingOfEachBlock(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(seed)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofMillis(TTL_MS), 1 << 20)).build();
    List<WorkerId> workers = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"));
    workers.forEach(w -> router.addWorker(Worker.of(w)));
    List<int[]> pool = pool(random);
    BlockHasher hasher = BlockHasher.of(BLOCK);
    Map<WorkerId, Map<Long, Long>> last = new HashMap<>();
    long nowMs = 0;
    for (int step = 0; step < 600; step++) {
      boolean select = random.nextBoolean();
      if (select) {
        int[] prompt = pool.get(random.nextInt(pool.size()));
        try (Routing routing = router.select(prompt)) {
          Map<Long, Long> routed = last.computeIfAbsent(routing.workerId(), w -> new HashMap<>());
          for (long h : hasher.sequenceHashes(prompt)) {
            routed.put(h, nowMs);
          }
        }
      }
      long[] hashes = hasher.sequenceHashes(pool.get(random.nextInt(pool.size())));
      WorkerId worker = workers.get(random.nextInt(workers.size()));
      router.remoteLoad().predicted(worker, hashes, hashes.length);
      Map<Long, Long> predicted = last.computeIfAbsent(worker, w -> new HashMap<>());
      for (long h : hashes) {
        predicted.put(h, nowMs);
      }
      if (select) { // the router's own predictions expire at its selections, the peers' at their deliveries
        assertSameAsModel(router, workers, pool, hasher, last, nowMs, "step " + step);
      }
      long advance = random.nextInt(4) == 0 ? random.nextLong(TTL_MS / 2) : random.nextLong(200);
      ticker.advance(Duration.ofMillis(advance));
      nowMs += advance;
    }
    assertTrue(router.predictions().renewedRemote > 0, "own routings renewed peers' nodes: "
        + router.predictions().renewedRemote);
    assertTrue(router.predictions().remoteRenewedOwn > 0, "peers' deliveries renewed own nodes: "
        + router.predictions().remoteRenewedOwn);
    IndexInvariants.check(router.predictions().index());
  }

  /** With a budget far below the workload, the index never holds more and stays consistent. */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theBudgetBoundsTheIndexAndTheLastPromptStaysPredicted(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    int budget = 200;
    Router router = Router.newBuilder().ticker(ticker).randomSeed(seed)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofMillis(TTL_MS), budget)).build();
    List<WorkerId> workers = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"));
    workers.forEach(w -> router.addWorker(Worker.of(w)));
    List<int[]> pool = pool(random);
    BlockHasher hasher = BlockHasher.of(BLOCK);
    for (int step = 0; step < 400; step++) {
      int[] prompt = pool.get(random.nextInt(pool.size()));
      WorkerId chosen;
      try (Routing routing = router.select(prompt)) {
        chosen = routing.workerId();
      }
      KvIndexer index = router.predictions().index();
      assertTrue(index.stats().entries() <= budget, "step " + step + ": " + index.stats().entries());
      assertEquals(0, index.stats().evictedEntries(), "the index never evicts by itself");
      long[] hashes = hasher.sequenceHashes(prompt);
      PrefixMatch m = index.findMatches(hashes).get(chosen);
      assertEquals(hashes.length, m == null ? 0 : m.blocks(), "step " + step + ": the prompt just routed");
      ticker.advance(Duration.ofMillis(random.nextLong(100)));
    }
    IndexInvariants.check(router.predictions().index());
  }

  /**
   * Extending a prefix that making room for the extension drops (it is the least recently renewed prediction) stores
   * the prompt whole instead: the prompt just routed is predicted entire.
   */
  @org.junit.jupiter.api.Test
  void anExtensionWhosePrefixIsDroppedToMakeRoomIsStoredWhole() {
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(1)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofMillis(TTL_MS), 12)).build();
    WorkerId w = WorkerId.of("w0");
    router.addWorker(Worker.of(w));
    int[] other = Fixtures.prompt(1, 4 * BLOCK);
    int[] prefix = Fixtures.prompt(2, 6 * BLOCK);
    int[] extended = Fixtures.concat(prefix, Fixtures.prompt(3, 3 * BLOCK));
    for (int[] prompt : List.of(other, prefix, other, extended)) { // the second `other` leaves `prefix` oldest
      router.select(prompt).close();
      ticker.advance(Duration.ofMillis(1));
    }
    KvIndexer index = router.predictions().index();
    PrefixMatch m = index.findMatches(BlockHasher.of(BLOCK).sequenceHashes(extended)).get(w);
    assertEquals(9, m == null ? 0 : m.blocks());
    assertEquals(9, index.stats().entries(), "the budget of 12 held the 9 blocks alone");
    assertEquals(1, router.predictions().nodes());
    router.select(Fixtures.prompt(4, BLOCK)).close(); // the list still works: the new prediction evicts nothing
    assertEquals(10, index.stats().entries());
    IndexInvariants.check(index);
  }

  /**
   * Prompts of 1 to about 40 blocks: a few exact repeats, prefixes shared by several tails, and conversations whose every
   * turn extends the previous one (sometimes by less than a block, which hashes the same).
   */
  private static List<int[]> pool(SplittableRandom random) {
    List<int[]> pool = new ArrayList<>();
    for (int kind = 0; kind < 3; kind++) {
      int[] prefix = Fixtures.prompt(random.nextLong(), BLOCK * (1 + random.nextInt(4)));
      for (int tail = 0; tail < 3; tail++) {
        pool.add(Fixtures.concat(prefix, Fixtures.prompt(random.nextLong(), BLOCK * (1 + random.nextInt(3)))));
      }
    }
    for (int conversation = 0; conversation < 3; conversation++) {
      int[] turn = Fixtures.prompt(random.nextLong(), BLOCK + random.nextInt(BLOCK));
      for (int t = 0; t < 8 && turn.length < 40 * BLOCK; t++) {
        pool.add(turn);
        turn = Fixtures.concat(turn, Fixtures.prompt(random.nextLong(), 1 + random.nextInt(8 * BLOCK)));
      }
    }
    return pool;
  }

  private static void assertSameAsModel(Router router, List<WorkerId> workers, List<int[]> pool, BlockHasher hasher,
      Map<WorkerId, Map<Long, Long>> lastRouted, long nowMs, String when) {
    KvIndexer index = router.predictions().index();
    for (WorkerId w : workers) {
      Map<Long, Long> routed = lastRouted.getOrDefault(w, Map.of());
      long alive = routed.values().stream().filter(t -> t + TTL_MS > nowMs).count();
      assertEquals(alive, index.entriesOfSlot(router.workers().state(w).predictedSlot), when + ", " + w);
    }
    PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
    Predictions.Sampling sampling = new Predictions.Sampling();
    for (int[] prompt : pool) {
      long[] hashes = hasher.sequenceHashes(prompt);
      Map<WorkerId, PrefixMatch> matches = index.findMatches(hashes);
      // The selection's sampled match, over every prefix of the prompt (so every gap between samples is met).
      for (int count = 1; count <= hashes.length; count++) {
        int touched = router.predictions().match(hashes, count, scratch, sampling);
        for (WorkerId w : workers) {
          Map<Long, Long> routed = lastRouted.getOrDefault(w, Map.of());
          int depth = 0;
          while (depth < count && routed.getOrDefault(hashes[depth], Long.MIN_VALUE / 2) + TTL_MS > nowMs) {
            depth++;
          }
          int slot = router.workers().state(w).predictedSlot;
          assertEquals(depth, slot < scratch.depth.length ? scratch.depth[slot] : 0,
              when + ", " + w + ", sampled match of " + count + " blocks");
          assertEquals(depth, slot < scratch.gpuDepth.length ? scratch.gpuDepth[slot] : 0,
              when + ", " + w + ", sampled match of " + count + " blocks (GPU)");
          if (count == hashes.length) {
            PrefixMatch m = matches.get(w);
            assertEquals(depth, m == null ? 0 : m.blocks(), when + ", " + w);
          }
        }
        scratch.reset(touched);
      }
    }
  }
}
