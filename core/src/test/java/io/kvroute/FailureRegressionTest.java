package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * One regression test per fault of issue 8 that core owns, named after the behaviour; each failed before its fix.
 */
class FailureRegressionTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final WorkerId B = WorkerId.of("b");
  private static final WorkerId C = WorkerId.of("c");
  private static final WorkerId X = WorkerId.of("x");
  private static final WorkerId Z = WorkerId.of("z");
  private final FakeTicker clock = new FakeTicker();

  // --- Item 1: a worker whose KV events never arrive -------------------------------------------------------------

  /**
   * Three workers, kvAware, 30 prefixes requested three times each in a seeded order; A and B publish the blocks of
   * every prompt routed to them, C publishes nothing (its event port is wrong). Treated as an empty cache, C won
   * every smallest-tree tie: every new prefix and every repeat of one it took (84 of the 90 requests before the fix,
   * the count, and only 4 of the 60 repeats found their prefix). Scored by the router's predictions, C is
   * one worker among three: about a third of the new prefixes (at most half here), and every repeat finds its
   * prefix, on A and B by their events, on C by prediction.
   */
  @Test
  void aWorkerWhoseEventsNeverArriveDoesNotAttractEveryNewPrefix() {
    Router router = Router.newBuilder().ticker(clock).randomSeed(3).build();
    for (WorkerId id : List.of(A, B, C)) {
      router.addWorker(Worker.of(id));
    }
    int prefixes = 30;
    List<Integer> order = new ArrayList<>();
    for (int p = 0; p < prefixes; p++) {
      order.add(p);
      order.add(p);
      order.add(p);
    }
    SplittableRandom random = new SplittableRandom(11);
    for (int i = order.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      order.set(i, order.set(j, order.get(i)));
    }
    Map<Integer, WorkerId> home = new HashMap<>();
    int newToSilent = 0;
    int repeatsOfSilentPrefixes = 0;
    int repeatsFoundOnSilent = 0;
    int repeatsHit = 0;
    for (int i = 0; i < order.size(); i++) {
      int p = order.get(i);
      int[] prompt = Fixtures.concat(Fixtures.prompt(1000 + p, 512), Fixtures.prompt(5000 + i, 64));
      try (Routing r = router.select(prompt)) {
        WorkerId first = home.putIfAbsent(p, r.workerId());
        if (first == null) {
          newToSilent += r.workerId().equals(C) ? 1 : 0;
        } else {
          repeatsHit += r.matchedBlocks() >= 32 ? 1 : 0;
          if (first.equals(C)) {
            repeatsOfSilentPrefixes++;
            repeatsFoundOnSilent += r.workerId().equals(C) && r.matchedBlocks() >= 32 ? 1 : 0;
          }
        }
        if (!r.workerId().equals(C)) {
          router.eventSink().apply(r.workerId(), Fixtures.storedFor(prompt, 16, r.workerId().hashCode()));
        }
      }
    }
    assertTrue(newToSilent <= prefixes / 2, "the silent worker took " + newToSilent + " of " + prefixes
        + " new prefixes");
    assertTrue(newToSilent >= 1, "the silent worker still takes its share");
    assertEquals(repeatsOfSilentPrefixes, repeatsFoundOnSilent,
        "repeats of the silent worker's prefixes go back to it, matched by its predictions");
    assertEquals(order.size() - prefixes, repeatsHit, "every repeat finds its 512-token prefix");
  }

  /**
   * After its stream breaks, a worker is scored by what the router sends it: a prompt routed there after the break
   * is found there again, although no event reports it.
   */
  @Test
  void aBrokenEventStreamIsScoredByPredictionsNotAsAnEmptyCache() {
    Router router = Router.newBuilder().ticker(clock).randomSeed(5).build();
    for (WorkerId id : List.of(A, B)) {
      router.addWorker(Worker.of(id));
      router.eventSink().apply(id, Fixtures.storedFor(Fixtures.prompt(id.hashCode(), 256), 16, 1));
    }
    router.reportEventStream(A, EventStreamState.BROKEN);
    int[] prompt = Fixtures.prompt(77, 512);
    RouteRequest toA = RouteRequest.newBuilder(prompt).allowedWorkers(Set.of(A)).build();
    router.select(toA).close();
    try (Routing again = router.select(prompt)) {
      assertEquals(A, again.workerId());
      assertEquals(32, again.matchedBlocks(), "predicted, not reported");
    }
    router.reportEventStream(A, EventStreamState.LIVE);
    try (Routing live = router.select(RouteRequest.newBuilder(prompt).explain(true).build())) {
      assertEquals(0, live.matchedBlocks(), "with a live stream the index speaks for A again");
      assertFalse(live.explanation().get(0).approximate());
    }
  }

  // --- Item 2: a dead worker keeps its prefixes -------------------------------------------------------------------

  /**
   * A holds the prefix; after three connection failures it is ejected and the prefix's requests go elsewhere, while
   * an explanation still shows A with its overlap, ejected.
   */
  @Test
  void aDeadWorkersPrefixesStopAttractingRequests() {
    Router router = Router.newBuilder().ticker(clock).randomSeed(1).build();
    for (WorkerId id : List.of(A, B, C)) {
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    int[] prefix = Fixtures.prompt(9, 512);
    router.eventSink().apply(A, Fixtures.storedFor(prefix, 16, 1));
    try (Routing r = router.select(Fixtures.concat(prefix, Fixtures.prompt(10, 64)))) {
      assertEquals(A, r.workerId());
    }
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    for (int i = 0; i < 30; i++) {
      try (Routing r = router.select(RouteRequest.newBuilder(Fixtures.concat(prefix, Fixtures.prompt(20 + i, 64)))
          .explain(true).build())) {
        assertNotEquals(A, r.workerId(), "request " + i);
        CandidateScore a = r.explanation().stream().filter(s -> s.worker().equals(A)).findFirst().orElseThrow();
        assertEquals(HealthState.EJECTED, a.health());
        assertEquals(32, a.overlapBlocks());
        assertTrue(Double.isNaN(a.cost()) && !a.chosen());
      }
    }
  }

  // --- Item 4: stale bookings after worker churn ------------------------------------------------------------------

  /**
   * A ticker that runs an action the first time it is read once armed. The router reads it once per selection,
   * under the admission lock and after gathering its candidates, so the action runs exactly in the window where a
   * worker could be removed and re-added behind the selection's back (the lock is reentrant).
   */
  private static final class ArmedTicker implements Ticker {
    final FakeTicker time = new FakeTicker();
    final AtomicReference<Runnable> armed = new AtomicReference<>();

    @Override
    public long read() {
      Runnable action = armed.getAndSet(null);
      if (action != null) {
        action.run();
      }
      return time.read();
    }
  }

  /** Prefers worker X whenever it is a candidate. */
  private static final RouterPolicy PREFER_X = c -> {
    for (int i = 0; i < c.size(); i++) {
      if (c.worker(i).id().equals(X)) {
        return i;
      }
    }
    return 0;
  };

  @Test
  void aWorkerRemovedAndReAddedDuringASelectionKeepsNoPhantomLoad() {
    ArmedTicker ticker = new ArmedTicker();
    Router router = Router.newBuilder().ticker(ticker).policy(PREFER_X).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(X));
    ticker.armed.set(() -> {
      router.removeWorker(X);
      router.addWorker(Worker.of(X)); // the same id, on the slot it just freed
    });
    router.select(Fixtures.prompt(1, 256)).close();
    assertEquals(0, router.activeRequests(X), "the re-added worker inherits no booking");
    assertEquals(0, router.pendingPrefillTokens(X));
    assertEquals(0, router.activeRequests(A));
    assertEquals(0, router.pendingPrefillTokens(A));
  }

  @Test
  void anotherWorkerOnAReusedSlotInheritsNoPhantomLoad() {
    ArmedTicker ticker = new ArmedTicker();
    Router router = Router.newBuilder().ticker(ticker).policy(PREFER_X).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(X));
    ticker.armed.set(() -> {
      router.removeWorker(X);
      router.addWorker(Worker.of(Z)); // takes X's freed slot
    });
    router.select(Fixtures.prompt(2, 256)).close();
    assertEquals(0, router.activeRequests(Z));
    assertEquals(0, router.pendingPrefillTokens(Z));
    assertEquals(0, router.activeRequests(A));
  }

  /**
   * Under the approximate policy a prediction booked for the removed registration landed on the re-added one and,
   * being of an unregistered worker, was never expired: the prompt kept matching there forever.
   */
  @Test
  void predictionsOfARegistrationRemovedDuringASelectionDoNotOutliveTheirTtl() {
    ArmedTicker ticker = new ArmedTicker();
    Router router = Router.newBuilder().ticker(ticker).policy(RouterPolicy.approximate()).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(X));
    router.eventSink().apply(A, Fixtures.storedFor(Fixtures.prompt(3, 1024), 16, 1)); // X has the smaller tree
    int[] prompt = Fixtures.prompt(4, 256);
    ticker.armed.set(() -> {
      router.removeWorker(X);
      router.addWorker(Worker.of(X));
    });
    router.select(prompt).close();
    ticker.time.advance(Duration.ofSeconds(121)); // past the 120 s prediction TTL
    router.select(Fixtures.prompt(5, 16)).close(); // expires what is due
    try (Routing r = router.select(prompt)) {
      assertEquals(0, r.matchedBlocks(), "nothing predicts this prompt anywhere any more");
    }
  }

  // --- Item 5: a live request force-expired by closed handles -----------------------------------------------------

  /**
   * One long stream stays open while 2^20 + 16 short requests come and go: only open bookings count toward the
   * 2^20 bound, so the stream keeps its booking; and the closed handles are not retained behind it.
   */
  @Test
  void aLiveRequestIsNotForceExpiredByClosedBookingsBehindIt() {
    Router router = Router.newBuilder().ticker(clock).build();
    router.addWorker(Worker.of(A));
    Routing live = router.select(Fixtures.prompt(1, 64));
    int[] shortPrompt = Fixtures.prompt(2, 16);
    for (int i = 0; i < (1 << 20) + 16; i++) {
      router.select(shortPrompt).close();
    }
    assertFalse(live.isClosed(), "the live stream's booking was force-expired");
    assertEquals(1, router.activeRequests(A));
    assertEquals(1, router.openBookings(), "closed handles are not retained");
    live.close();
    assertEquals(0, router.activeRequests(A));
    assertEquals(0, router.overReleases());
  }

  // --- Item 6: unbounded prompts ----------------------------------------------------------------------------------

  @Test
  void aPromptOverTheDefaultLimitIsRejectedBeforeTheAdmissionLock() {
    Router router = Router.newBuilder().ticker(clock).build();
    router.addWorker(Worker.of(A));
    InvalidRouteRequestException e = assertThrows(InvalidRouteRequestException.class,
        () -> router.select(new int[Router.DEFAULT_MAX_PROMPT_TOKENS + 1]));
    assertEquals(InvalidRouteRequestException.Reason.PROMPT_TOO_LONG, e.reason());
    assertEquals(0, router.activeRequests(A));
  }

  /**
   * 32 handles of 2^20-token prompts (65,536 hashes, 512 KiB each) and 300 of 2,048-token prompts (128 hashes,
   * 1 KiB) are closed: the pool keeps none of the large arrays (one would exceed its 256 KiB per size class) and
   * 256 of the small ones. It used to keep all 32 large ones, 16 MiB, for the router's lifetime.
   */
  @Test
  void theHashArrayPoolIsBoundedInBytesPerSizeClass() {
    Router router = Router.newBuilder().ticker(clock).build();
    router.addWorker(Worker.of(A));
    List<Routing> open = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      open.add(router.select(new int[Router.DEFAULT_MAX_PROMPT_TOKENS]));
    }
    for (int i = 0; i < 300; i++) {
      open.add(router.select(Fixtures.prompt(i, 2048)));
    }
    open.forEach(Routing::close);
    assertEquals(256L * 128 * Long.BYTES, router.pooledHashBytes());
  }

  // --- Item 7: one worker's events slowing every match ------------------------------------------------------------

  /**
   * One worker stores the same block content under 10,000 distinct engine hashes. The sequence chain every request
   * for that content walks used to hold 10,000 entries (at a million, select took 3.8 ms instead of 6 µs); it holds
   * one per worker and tier. Every engine hash still resolves: removing all but one keeps the match, removing the
   * last ends it.
   */
  @Test
  void theSameContentUnderManyEngineHashesKeepsOneEntryInTheSequenceChain() {
    Router router = Router.newBuilder().ticker(clock).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(B));
    int[] block = Fixtures.prompt(8, 16);
    long seq = BlockHasher.of(16).sequenceHashes(block)[0];
    int copies = 10_000;
    for (int i = 0; i < copies; i++) {
      router.eventSink().apply(A, KvEvent.BlockStored.of(new long[] {1_000_000L + i}, null, block, 16));
    }
    router.eventSink().apply(B, Fixtures.storedFor(block, 16, 3));
    assertEquals(2, IndexInvariants.sequenceChainLength(router.index(), seq), "one entry for A, one for B");
    assertEquals(copies, router.indexer().entriesOf(A), "every engine block is still held");
    IndexInvariants.check(router.index());
    for (int i = 0; i < copies - 1; i++) {
      router.eventSink().apply(A, KvEvent.BlockRemoved.of(new long[] {1_000_000L + i}));
    }
    IndexInvariants.check(router.index());
    RouteRequest onlyA = RouteRequest.newBuilder(block).allowedWorkers(Set.of(A)).build();
    try (Routing r = router.select(onlyA)) {
      assertEquals(1, r.matchedBlocks(), "the last engine hash still holds the content");
    }
    router.eventSink().apply(A, KvEvent.BlockRemoved.of(new long[] {1_000_000L + copies - 1}));
    try (Routing r = router.select(onlyA)) {
      assertEquals(0, r.matchedBlocks());
    }
    assertEquals(1, IndexInvariants.sequenceChainLength(router.index(), seq));
  }

  // --- Item 9 (core): listener under the lock, mutable index handed out -------------------------------------------

  @Test
  void bookingsExpiredIsReportedOutsideTheAdmissionLock() {
    AtomicBoolean heldDuringCallback = new AtomicBoolean(true);
    AtomicReference<Router> self = new AtomicReference<>();
    Router router = Router.newBuilder().ticker(clock).bookingTimeout(Duration.ofSeconds(10))
        .listener(new RouterListener() {
          @Override
          public void onBookingsExpired(int count) {
            heldDuringCallback.set(self.get().admissionHeldByCurrentThread());
          }
        }).build();
    self.set(router);
    router.addWorker(Worker.of(A));
    Routing forgotten = router.select(Fixtures.prompt(1, 64));
    clock.advance(Duration.ofSeconds(11));
    router.select(Fixtures.prompt(2, 64)).close();
    assertTrue(forgotten.isClosed());
    assertFalse(heldDuringCallback.get(), "onBookingsExpired ran under the admission lock");
  }

  @Test
  void theRoutersIndexViewHasNoMutators() {
    Router router = Router.newBuilder().build();
    router.addWorker(Worker.of(A));
    KvIndex view = router.indexer();
    assertFalse(view instanceof KvEventSink, "events must go through the router's sink");
    assertFalse(view instanceof KvIndexer, "no removeWorker or apply behind the registry");
    router.eventSink().apply(A, Fixtures.storedFor(Fixtures.prompt(1, 64), 16, 1));
    assertEquals(4, view.entriesOf(A));
    assertEquals(Set.of(A), new HashSet<>(view.workers()));
  }
}
