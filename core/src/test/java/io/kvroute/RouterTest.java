package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RouterTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final WorkerId B = WorkerId.of("b");
  private static final WorkerId C = WorkerId.of("c");
  private final FakeTicker ticker = new FakeTicker();

  private Router router(RouterPolicy policy, WorkerId... workers) {
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(42).build();
    for (WorkerId id : workers) {
      router.addWorker(Worker.of(id, URI.create("http://127.0.0.1:8000/" + id.name())));
    }
    return router;
  }

  @Test
  void routesToTheWorkerHoldingThePrefix() {
    Router router = router(RouterPolicy.kvAware(), A, B, C);
    int[] prompt = Fixtures.prompt(1, 2048);
    router.eventSink().apply(B, Fixtures.storedFor(prompt, 16, 77));
    try (Routing routing = router.select(prompt)) {
      assertEquals(B, routing.workerId());
      assertEquals(128, routing.matchedBlocks());
      assertEquals(2032, routing.predictedCachedTokens(), "the engine recomputes the block of the last token");
      assertEquals(URI.create("http://127.0.0.1:8000/b"), routing.worker().endpoint(Worker.HTTP));
    }
  }

  @Test
  void workersWithDifferentEngineHashesMatchTheSamePrompt() {
    Router router = router(RouterPolicy.kvAware(), A, B);
    int[] prompt = Fixtures.prompt(2, 160);
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 1));
    router.eventSink().apply(B, Fixtures.storedFor(prompt, 16, 2));
    Map<WorkerId, PrefixMatch> matches = router.indexer().findMatches(BlockHasher.of(16).sequenceHashes(prompt));
    assertEquals(Map.of(A, new PrefixMatch(10, 10), B, new PrefixMatch(10, 10)), matches);
  }

  @Test
  void bookingLifecycleReleasesPrefillAtFirstTokenAndBlocksAtClose() {
    Router router = router(RouterPolicy.kvAware(), A);
    Routing routing = router.select(Fixtures.prompt(3, 100));
    assertEquals(1, router.activeRequests(A));
    assertEquals(100, router.pendingPrefillTokens(A));
    routing.firstToken();
    routing.firstToken();
    assertEquals(0, router.pendingPrefillTokens(A));
    assertEquals(1, router.activeRequests(A));
    CompletableFuture.runAsync(routing::close).join();
    routing.close();
    assertTrue(routing.isClosed());
    assertEquals(0, router.activeRequests(A));
  }

  @Test
  void closeWithoutFirstTokenReleasesEverything() {
    Router router = router(RouterPolicy.kvAware(), A);
    router.select(Fixtures.prompt(4, 64)).close();
    assertEquals(0, router.pendingPrefillTokens(A));
    assertEquals(0, router.activeRequests(A));
  }

  @Test
  void cachedTokensAreNotBookedAsPrefill() {
    Router router = router(RouterPolicy.kvAware(), A);
    int[] prompt = Fixtures.prompt(5, 100);
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 3));
    try (Routing routing = router.select(prompt)) {
      assertEquals(96, routing.predictedCachedTokens());
      assertEquals(4, router.pendingPrefillTokens(A));
    }
  }

  @Test
  void staleBookingsExpire() {
    AtomicInteger expired = new AtomicInteger();
    Router router = Router.newBuilder().ticker(ticker).bookingTimeout(Duration.ofSeconds(10))
        .listener(new RouterListener() {
          @Override
          public void onBookingsExpired(int count) {
            expired.addAndGet(count);
          }
        }).build();
    router.addWorker(Worker.of(A));
    Routing forgotten = router.select(Fixtures.prompt(6, 64));
    ticker.advance(Duration.ofSeconds(11));
    router.select(Fixtures.prompt(7, 64)).close();
    assertEquals(1, expired.get());
    assertTrue(forgotten.isClosed());
    assertEquals(0, router.activeRequests(A));
  }

  @Test
  void noWorkerIsADefinedError() {
    Router empty = router(RouterPolicy.kvAware());
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
        () -> empty.select(Fixtures.prompt(8, 32)));
    assertTrue(e.getMessage().contains("no workers"), e.getMessage());
    Router router = router(RouterPolicy.kvAware(), A);
    RouteRequest onlyB = RouteRequest.newBuilder(Fixtures.prompt(8, 32)).allowedWorkers(Set.of(B)).build();
    assertThrows(NoWorkerAvailableException.class, () -> router.select(onlyB));
  }

  @Test
  void emptyPromptIsRejectedAndShortPromptRoutesByLoad() {
    Router router = router(RouterPolicy.kvAware(), A, B);
    InvalidRouteRequestException e = assertThrows(InvalidRouteRequestException.class,
        () -> router.select(new int[0]));
    assertTrue(e.getMessage().contains("tokens"));
    assertEquals(InvalidRouteRequestException.Reason.EMPTY_PROMPT, e.reason());
    assertEquals(400, e.httpStatus());
    Routing first = router.select(new int[] {1, 2, 3});
    Routing second = router.select(new int[] {1, 2, 3});
    assertEquals(0, first.matchedBlocks());
    assertNotEquals(first.workerId(), second.workerId(), "the second short prompt avoids the loaded worker");
    first.close();
    second.close();
  }

  @Test
  void allowListModelAndLoraRestrictCandidates() {
    Router router = Router.newBuilder().ticker(ticker).build();
    router.addWorker(Worker.newBuilder(A).model("m1").build());
    router.addWorker(Worker.newBuilder(B).model("m2").loraAdapter("sql").build());
    router.addWorker(Worker.newBuilder(C).model("m2").build());
    int[] prompt = Fixtures.prompt(9, 64);
    for (int i = 0; i < 10; i++) {
      try (Routing r = router.select(RouteRequest.newBuilder(prompt).model("m1").build())) {
        assertEquals(A, r.workerId());
      }
      try (Routing r = router.select(RouteRequest.newBuilder(prompt).model("m2").loraName("sql").build())) {
        assertEquals(B, r.workerId());
      }
      try (Routing r = router.select(RouteRequest.newBuilder(prompt).allowedWorkers(Set.of(C)).build())) {
        assertEquals(C, r.workerId());
      }
    }
  }

  @Test
  void explanationShowsEveryCandidateAndTheLowestCostWins() {
    Router router = router(RouterPolicy.kvAware(), A, B, C);
    int[] prompt = Fixtures.prompt(10, 512);
    router.eventSink().apply(C, Fixtures.storedFor(prompt, 16, 5));
    try (Routing r = router.select(RouteRequest.newBuilder(prompt).explain(true).build())) {
      List<CandidateScore> scores = r.explanation();
      assertEquals(3, scores.size());
      CandidateScore chosen = scores.stream().filter(CandidateScore::chosen).findFirst().orElseThrow();
      assertEquals(C, chosen.worker());
      assertEquals(32, chosen.overlapBlocks());
      double min = scores.stream().mapToDouble(CandidateScore::cost).min().orElseThrow();
      assertEquals(min, chosen.cost());
      // Uncached workers pay 512/16 = 32 prefill blocks plus 32 decode blocks; the cached one only decode.
      assertEquals(64.0, scores.stream().filter(s -> s.worker().equals(A)).findFirst().orElseThrow().cost());
      assertEquals(32.0, chosen.cost());
    }
    try (Routing r = router.select(prompt)) {
      assertTrue(r.explanation().isEmpty());
    }
  }

  @Test
  void overlapWeightZeroIgnoresTheCache() {
    Router router = router(RouterPolicy.kvAware(), A, B);
    int[] prompt = Fixtures.prompt(11, 256);
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 5));
    Routing held = router.select(Fixtures.prompt(12, 256)); // loads one worker
    WorkerId loaded = held.workerId();
    try (Routing r = router.select(RouteRequest.newBuilder(prompt).overlapWeight(0).build())) {
      assertNotEquals(loaded, r.workerId());
    }
    held.close();
  }

  @Test
  void eventsOfUnknownWorkersAreDroppedAndReported() {
    List<WorkerId> reported = new ArrayList<>();
    Router router = Router.newBuilder().listener(new RouterListener() {
      @Override
      public void onEventForUnknownWorker(WorkerId worker, KvEvent event) {
        reported.add(worker);
      }
    }).build();
    router.addWorker(Worker.of(A));
    router.eventSink().apply(B, Fixtures.storedFor(Fixtures.prompt(13, 64), 16, 1));
    assertEquals(List.of(B), reported);
    assertEquals(0, router.indexer().stats().entries());
  }

  @Test
  void removingAWorkerPurgesItsEntries() {
    Router router = router(RouterPolicy.kvAware(), A, B);
    int[] prompt = Fixtures.prompt(14, 320);
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 1));
    router.eventSink().apply(B, Fixtures.storedFor(prompt, 16, 2));
    assertEquals(40, router.indexer().stats().entries());
    assertTrue(router.removeWorker(A));
    assertFalse(router.removeWorker(A));
    assertEquals(20, router.indexer().stats().entries());
    assertEquals(Map.of(B, 20L), router.indexer().stats().entriesPerWorker());
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 1));
    assertEquals(20, router.indexer().stats().entries(), "late events of a removed worker do not come back");
  }

  @Test
  void approximateModeRemembersRoutedPromptsUntilTheirTtl() {
    Router router = Router.newBuilder().ticker(ticker).randomSeed(1)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofSeconds(120), 1 << 16)).build();
    for (WorkerId id : List.of(A, B, C)) {
      router.addWorker(Worker.of(id));
    }
    int[] prompt = Fixtures.prompt(15, 1024);
    WorkerId first;
    try (Routing r = router.select(prompt)) {
      first = r.workerId();
      assertEquals(0, r.matchedBlocks());
    }
    ticker.advance(Duration.ofSeconds(60));
    try (Routing r = router.select(prompt)) {
      assertEquals(first, r.workerId());
      assertEquals(64, r.matchedBlocks());
    }
    ticker.advance(Duration.ofSeconds(121));
    try (Routing r = router.select(Fixtures.prompt(16, 16))) {
      // any selection sweeps expired predictions
    }
    try (Routing r = router.select(RouteRequest.newBuilder(prompt).explain(true).build())) {
      assertTrue(r.explanation().stream().allMatch(s -> s.overlapBlocks() == 0), r.explanation().toString());
    }
  }

  @Test
  void temperatureSamplingIsReproducibleWithASeed() {
    int[] prompt = Fixtures.prompt(17, 256);
    List<WorkerId> first = new ArrayList<>();
    List<WorkerId> second = new ArrayList<>();
    for (List<WorkerId> out : List.of(first, second)) {
      Router router = Router.newBuilder().ticker(ticker).randomSeed(99)
          .policy(RouterPolicy.kvAware(KvAwareConfig.DEFAULT.withTemperature(1.0))).build();
      for (WorkerId id : List.of(A, B, C)) {
        router.addWorker(Worker.of(id));
      }
      router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 1));
      for (int i = 0; i < 200; i++) {
        try (Routing r = router.select(prompt)) {
          out.add(r.workerId());
        }
      }
    }
    assertEquals(first, second);
    Map<WorkerId, Integer> counts = new HashMap<>();
    first.forEach(w -> counts.merge(w, 1, Integer::sum));
    assertTrue(counts.getOrDefault(A, 0) > counts.getOrDefault(B, 0), counts.toString());
    assertTrue(counts.size() > 1, "softmax sampling explores: " + counts);
  }

  @Test
  void leastLoadedBreaksTiesWithEngineReportedQueues() {
    Router router = router(RouterPolicy.leastLoaded(), A, B, C);
    router.updateLoad(A, new EngineLoad(4, 2, 0.5, 0));
    router.updateLoad(B, new EngineLoad(1, 0, 0.1, 0));
    router.updateLoad(C, new EngineLoad(3, 0, 0.2, 0));
    for (int i = 0; i < 5; i++) {
      try (Routing r = router.select(Fixtures.prompt(20 + i, 64))) {
        assertEquals(B, r.workerId());
      }
    }
    assertEquals(new EngineLoad(1, 0, 0.1, 0), router.workers().engineLoad(B));
    assertFalse(router.updateLoad(WorkerId.of("nobody"), new EngineLoad(0, 0, 0, 0)));
  }

  @Test
  void cacheAffinitySpreadsNewPrefixesAndGathersTheirConcurrentRequests() {
    Router router = router(RouterPolicy.cacheAffinity(), A, B, C);
    for (WorkerId id : List.of(A, B, C)) {
      router.reportEventStream(id, EventStreamState.LIVE); // event mode: overlap only from KV events
    }
    Map<WorkerId, Integer> homes = new HashMap<>();
    List<Routing> open = new ArrayList<>();
    for (int p = 0; p < 6; p++) {
      int[] prefix = Fixtures.prompt(100 + p, 512);
      Routing first = router.select(Fixtures.concat(prefix, Fixtures.prompt(200 + p, 40)));
      homes.merge(first.workerId(), 1, Integer::sum);
      // No KV event has arrived yet, but the first request is computing the prefix: the second joins it.
      Routing second = router.select(Fixtures.concat(prefix, Fixtures.prompt(300 + p, 40)));
      assertEquals(first.workerId(), second.workerId(), "prefix " + p);
      assertEquals(0, second.matchedBlocks(), "nothing is cached yet");
      open.add(first);
      open.add(second);
      open.forEach(Routing::close);
      open.clear();
    }
    assertEquals(Map.of(A, 2, B, 2, C, 2), homes, "six new prefixes spread evenly over three workers");
  }

  @Test
  void cacheAffinityPassesOverAnOverloadedHolder() {
    Router router = router(RouterPolicy.cacheAffinity(), A, B, C);
    int[] prefix = Fixtures.prompt(400, 512);
    router.eventSink().apply(A, Fixtures.storedFor(prefix, 16, 1));
    List<Routing> open = new ArrayList<>();
    Map<WorkerId, Integer> counts = new HashMap<>();
    for (int i = 0; i < 30; i++) {
      Routing r = router.select(Fixtures.concat(prefix, Fixtures.prompt(500 + i, 40)));
      counts.merge(r.workerId(), 1, Integer::sum);
      open.add(r);
    }
    // A is overloaded once it carries 3 x (the others' mean + 1); then the others take their share.
    assertTrue(counts.get(A) > 10 && counts.get(A) < 30, counts.toString());
    assertTrue(counts.size() > 1, counts.toString());
    open.forEach(Routing::close);
  }

  @Test
  void cacheAffinityAvoidsAHolderWhoseEngineQueues() {
    Router router = router(RouterPolicy.cacheAffinity(), A, B);
    int[] prefix = Fixtures.prompt(600, 512);
    router.eventSink().apply(A, Fixtures.storedFor(prefix, 16, 1));
    try (Routing r = router.select(Fixtures.concat(prefix, Fixtures.prompt(601, 40)))) {
      assertEquals(A, r.workerId());
    }
    router.updateLoad(A, new EngineLoad(8, 3, 0.99, ticker.read()));
    try (Routing r = router.select(Fixtures.concat(prefix, Fixtures.prompt(602, 40)))) {
      assertEquals(B, r.workerId(), "A's engine queues requests");
    }
    ticker.advance(Duration.ofSeconds(3));
    try (Routing r = router.select(Fixtures.concat(prefix, Fixtures.prompt(603, 40)))) {
      assertEquals(A, r.workerId(), "a stale report is ignored");
    }
  }

  @Test
  void builderRejectsBadArgumentsByName() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> Router.newBuilder().blockSize(0))
        .getMessage().contains("blockSize"));
    assertTrue(assertThrows(NullPointerException.class, () -> Router.newBuilder().policy(null))
        .getMessage().contains("policy"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> Router.newBuilder().bookingTimeout(Duration.ZERO)).getMessage().contains("bookingTimeout"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> Router.newBuilder().maxIndexEntries(-1))
        .getMessage().contains("maxEntries"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new WorkerId("x", -1))
        .getMessage().contains("dataParallelRank"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new KvAwareConfig(-1, 0, 0))
        .getMessage().contains("overlapWeight"));
    assertTrue(assertThrows(IllegalStateException.class, () -> {
      Router r = Router.newBuilder().build();
      r.addWorker(Worker.of(A));
      r.addWorker(Worker.of(A));
    }).getMessage().contains("already registered"));
  }

  @Test
  void aPolicyChoosingOutOfRangeIsRefusedAndBooksNothing() {
    // Mutation audit: with the bound check off by one, index size() slipped through to a null or stale slot.
    for (int bad : new int[] {-1, 2, 3}) {
      Router router = Router.newBuilder().policy(new RouterPolicy() {
        @Override
        public int select(Candidates candidates) {
          return bad == 2 ? candidates.size() : bad;
        }

        @Override
        public String name() {
          return "out-of-range";
        }
      }).build();
      router.addWorker(Worker.of(A));
      router.addWorker(Worker.of(B));
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> router.select(Fixtures.prompt(bad + 50, 64)), "choice " + bad);
      assertTrue(e.getMessage().contains("out-of-range") && e.getMessage().contains("of 2"), e.getMessage());
      assertEquals(0, router.activeRequests(A) + router.activeRequests(B), "nothing booked for choice " + bad);
      assertEquals(0, router.openBookings());
    }
  }
}
