package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The {@link SharedLoad} port as the router drives it, and the router's {@link RemoteLoad} view of peers' load. */
class SharedLoadTest {
  private static final WorkerId W0 = WorkerId.of("w0");
  private static final WorkerId W1 = WorkerId.of("w1");

  /** A port that records what the router tells it, as a transport would enqueue it. */
  static final class RecordingPort implements SharedLoad {
    final List<String> deltas = new ArrayList<>();
    final List<long[]> hashes = new ArrayList<>();
    RemoteLoad view;
    boolean fail;

    @Override
    public void start(RemoteLoad view) {
      if (this.view != null) {
        throw new IllegalStateException("already started");
      }
      this.view = view;
    }

    @Override
    public void booked(long id, WorkerId worker, long prefill, long[] h, int blocks, boolean predicted) {
      if (fail) {
        throw new IllegalStateException("broken port");
      }
      deltas.add("book " + id + " " + worker + " " + prefill + " " + blocks + (predicted ? " predicted" : ""));
      hashes.add(Arrays.copyOf(h, blocks));
    }

    @Override
    public void firstToken(long id) {
      deltas.add("first " + id);
    }

    @Override
    public void closed(long id) {
      deltas.add("close " + id);
    }
  }

  private static Router router(RouterPolicy policy, SharedLoad port, WorkerId... workers) {
    Router r = Router.newBuilder().policy(policy).randomSeed(1).sharedLoad(port).build();
    for (WorkerId w : workers) {
      r.addWorker(Worker.of(w));
    }
    return r;
  }

  /** The load keys by their definition: hashes at positions 7, 15, 23, … and the last, each once. */
  private static long[] keysByDefinition(long[] hashes, int blocks) {
    return IntStream.range(0, blocks).filter(p -> (p + 1) % RemoteLoad.LOAD_KEY_STRIDE == 0 || p == blocks - 1)
        .mapToLong(p -> hashes[p]).toArray();
  }

  @Test
  void theRouterTellsItsPortOfEveryDeltaWithIncreasingIds() {
    RecordingPort port = new RecordingPort();
    Router router = router(RouterPolicy.kvAware(), port, W0);
    assertEquals(router.remoteLoad(), port.view, "started with the router's view");
    assertEquals(16, port.view.blockSize());
    int[] prompt = Fixtures.prompt(1, 16 * 5 + 3);
    Routing a = router.select(prompt);
    Routing b = router.select(Fixtures.prompt(2, 40));
    a.firstToken();
    a.close();
    b.close();
    b.close(); // idempotent: no second delta
    // w0 has no KV event yet, so the router predicts (scores it by its own routing) and says so.
    assertEquals(List.of("book 1 w0 83 5 predicted", "book 2 w0 40 2 predicted", "first 1", "close 1", "first 2",
        "close 2"), port.deltas);
    assertArrayEquals(BlockHasher.of(16).sequenceHashes(prompt), port.hashes.get(0), "the prompt's block hashes");
    assertThrows(IllegalStateException.class, () -> router(RouterPolicy.kvAware(), port, W0),
        "a port serves one router");
  }

  @Test
  void aThrowingPortNeverBreaksRouting() {
    RecordingPort port = new RecordingPort();
    port.fail = true;
    Router router = router(RouterPolicy.leastLoaded(), port, W0);
    try (Routing r = router.select(Fixtures.prompt(3, 64))) {
      assertEquals(W0, r.workerId());
      assertEquals(1, router.activeRequests(W0));
    }
    assertEquals(0, router.activeRequests(W0));
  }

  @Test
  void peersBookingsCountOnceAndSteerSelections() {
    RecordingPort port = new RecordingPort();
    Router router = router(RouterPolicy.leastLoaded(), port, W0, W1);
    RemoteLoad view = router.remoteLoad();
    long[] keys = {11, 12};
    view.booked("peer", 7, W0, 500, 9, keys, 2);
    view.booked("peer", 7, W0, 500, 9, keys, 2); // replayed
    view.booked("peer", 8, W0, 300, 9, keys, 2);
    assertEquals(2, view.activeRequests(W0));
    assertEquals(2, router.activeRequests(W0));
    assertEquals(800, router.pendingPrefillTokens(W0));
    // leastLoaded: w0 has two (remote) active requests, w1 none.
    try (Routing r = router.select(Fixtures.prompt(4, 64))) {
      assertEquals(W1, r.workerId());
    }
    view.firstToken("peer", 7);
    view.firstToken("peer", 7);
    assertEquals(300, router.pendingPrefillTokens(W0));
    view.closed("peer", 99); // unknown: nothing
    view.closed("other", 8); // another replica's id space
    assertEquals(2, router.activeRequests(W0));
    view.closed("peer", 8);
    assertEquals(1, router.activeRequests(W0));
    assertEquals(0, router.pendingPrefillTokens(W0));
    view.dropReplica("peer");
    assertEquals(0, router.activeRequests(W0));
    assertEquals(0, view.openBookings());
    assertEquals(0, router.overReleases());
    assertThrows(IllegalArgumentException.class, () -> view.booked("peer", 9, W0, 0, 9, keys, 1));
  }

  @Test
  void aPrefixBookedByThisRouterAndAPeerOnOneWorkerIsCountedOnce() {
    Router router = router(RouterPolicy.kvAware(), SharedLoad.NONE, W0);
    int[] prompt = Fixtures.prompt(5, 16 * 20);
    long[] hashes = BlockHasher.of(16).sequenceHashes(prompt);
    long[] keys = new long[RemoteLoad.loadKeyCount(20)];
    assertEquals(RemoteLoad.loadKeys(hashes, 20, keys), keys.length);
    assertArrayEquals(keysByDefinition(hashes, 20), keys);
    router.remoteLoad().booked("peer", 1, W0, 0, 20, keys, keys.length);
    RouteRequest request = RouteRequest.newBuilder(prompt).explain(true).build();
    try (Routing r = router.select(request)) {
      CandidateScore score = r.explanation().get(0);
      assertEquals(1, score.activeRequests(), "the peer's booking");
      // The peer's request holds the prompt's 20 blocks; this request adds none beyond them.
      assertEquals(20, score.decodeBlocks());
    }
  }

  @Test
  void peersPredictionsEnterTheApproximateIndex() {
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(3)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofSeconds(10), 1 << 16)).build();
    router.addWorker(Worker.of(W0));
    router.addWorker(Worker.of(W1));
    int[] prompt = Fixtures.prompt(6, 16 * 12);
    long[] hashes = BlockHasher.of(16).sequenceHashes(prompt);
    router.remoteLoad().predicted(W1, hashes, hashes.length);
    try (Routing r = router.select(prompt)) {
      assertEquals(W1, r.workerId(), "the peer routed this prompt to w1");
      assertEquals(12, r.matchedBlocks());
    }
    ticker.advance(Duration.ofSeconds(11)); // past the TTL: both predictions (the peer's and this one) expired
    router.select(Fixtures.prompt(7, 16)).close(); // a selection expires predictions before it books
    try (Routing r = router.select(prompt)) {
      assertEquals(0, r.matchedBlocks(), "expired with the router's own TTL");
    }
  }

  /**
   * A peer's predictions are expired by the thread delivering the next ones, at the router's TTL; a selection
   * leaves them (it would spend as many index writes removing them as recording them took) until they are a second
   * past the TTL with no delivery since, a peer gone quiet. Observed on the prediction index's entries, without
   * selecting the predicted prompt (which would predict it again).
   */
  @Test
  void peersPredictionsExpireOnTheDeliveringThreadOrLateOnASelection() {
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().ticker(ticker).randomSeed(3)
        .policy(RouterPolicy.approximate(KvAwareConfig.DEFAULT, Duration.ofSeconds(10), 1 << 16)).build();
    router.addWorker(Worker.of(W0));
    router.addWorker(Worker.of(W1));
    WorkerRegistry.WorkerState w1 = router.workers().state(W1);
    long[] first = BlockHasher.of(16).sequenceHashes(Fixtures.prompt(6, 16 * 12));
    long[] second = BlockHasher.of(16).sequenceHashes(Fixtures.prompt(8, 16 * 5));
    router.remoteLoad().predicted(W1, first, first.length);
    assertEquals(12, router.predictions().entriesOfSlot(w1.predictedSlot));
    ticker.advance(Duration.ofMillis(10_500)); // past the TTL, within the slack
    int own = ownBlockOn(router, W1); // a selection expires its own predictions, not the peer's yet
    assertEquals(12 + own, router.predictions().entriesOfSlot(w1.predictedSlot), "left to the delivering thread");
    router.remoteLoad().predicted(W1, second, second.length); // the next delivery expires the first
    assertEquals(5 + own, router.predictions().entriesOfSlot(w1.predictedSlot));
    ticker.advance(Duration.ofMillis(11_100)); // the second (10.5 s) is past TTL + slack (21.5 s), no delivery since
    own = ownBlockOn(router, W1);
    assertEquals(own, router.predictions().entriesOfSlot(w1.predictedSlot), "a quiet peer's predictions still go");
  }

  /** Routes a one-block prompt no peer predicted; returns 1 if it went (and was predicted) on {@code worker}. */
  private static int ownBlockOn(Router router, WorkerId worker) {
    try (Routing r = router.select(Fixtures.prompt(7, 16))) {
      return r.workerId().equals(worker) ? 1 : 0;
    }
  }

  @Test
  void bookingsOnUnknownOrRemovedWorkersCountNowhereAndReleaseCleanly() {
    Router router = router(RouterPolicy.leastLoaded(), SharedLoad.NONE, W0);
    RemoteLoad view = router.remoteLoad();
    view.booked("peer", 1, WorkerId.of("elsewhere"), 10, 1, new long[] {5}, 1);
    view.booked("peer", 2, W0, 10, 1, new long[] {5}, 1);
    assertEquals(2, view.openBookings());
    assertEquals(0, view.activeRequests(WorkerId.of("elsewhere")));
    router.removeWorker(W0);
    router.addWorker(Worker.of(W0));
    assertEquals(0, router.activeRequests(W0), "the new registration does not inherit the old one's load");
    view.closed("peer", 2);
    view.closed("peer", 1);
    assertEquals(0, view.openBookings());
    assertEquals(0, router.activeRequests(W0));
    assertEquals(0, router.overReleases());
  }

  static Stream<Arguments> seeds() {
    return IntStream.rangeClosed(1, 4).mapToObj(s -> Arguments.of((long) s));
  }

  /**
   * Selecting threads and a transport thread delivering a peer's bookings and releases at once: when everything is
   * closed, no load is left and nothing was released twice; meanwhile no selection fails.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void concurrentSelectionsAndPeerDeltasLeaveNoLoadBehind(long seed) throws Exception {
    Router router = router(RouterPolicy.kvAware(), SharedLoad.NONE, W0, W1, WorkerId.of("w2"));
    RemoteLoad view = router.remoteLoad();
    int[][] prompts = new int[8][];
    for (int i = 0; i < prompts.length; i++) {
      prompts[i] = Fixtures.prompt(seed * 100 + i, 16 * (1 + i * 5));
    }
    ExecutorService pool = Executors.newFixedThreadPool(3);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        int thread = t;
        futures.add(pool.submit(() -> {
          go.await();
          SplittableRandom random = new SplittableRandom(seed * 10 + thread);
          for (int i = 0; i < 2000; i++) {
            try (Routing r = router.select(prompts[random.nextInt(prompts.length)])) {
              if (random.nextBoolean()) {
                r.firstToken();
              }
            }
          }
          return null;
        }));
      }
      futures.add(pool.submit(() -> {
        go.await();
        SplittableRandom random = new SplittableRandom(seed);
        WorkerId[] workers = {W0, W1, WorkerId.of("w2")};
        for (int i = 0; i < 2000; i++) {
          int[] p = prompts[random.nextInt(prompts.length)];
          long[] hashes = BlockHasher.of(16).sequenceHashes(p);
          long[] keys = new long[RemoteLoad.loadKeyCount(hashes.length)];
          RemoteLoad.loadKeys(hashes, hashes.length, keys);
          view.booked("peer", i, workers[random.nextInt(3)], p.length, hashes.length, keys, keys.length);
          if (random.nextBoolean()) {
            view.firstToken("peer", i);
          }
          if (i >= 5) {
            view.closed("peer", i - 5);
          }
        }
        for (int i = 1995; i < 2000; i++) {
          view.closed("peer", i);
        }
        return null;
      }));
      go.countDown();
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(0, view.openBookings());
    for (WorkerId w : List.of(W0, W1, WorkerId.of("w2"))) {
      assertEquals(0, router.activeRequests(w), w.toString());
      assertEquals(0, router.pendingPrefillTokens(w), w.toString());
    }
    assertEquals(0, router.overReleases());
    assertFalse(router.remoteLoad().toString().isEmpty());
    assertTrue(RemoteLoad.loadKeyCount(0) == 0 && RemoteLoad.loadKeyCount(8) == 1 && RemoteLoad.loadKeyCount(9) == 2);
  }
}
