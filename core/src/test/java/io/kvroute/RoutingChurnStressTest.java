package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The same worker ids are removed and re-added, for as long as other threads select, close each other's handles,
 * report failures and successes and drain; bounded in operations. At the end every worker's booked load is exactly zero,
 * no release found nothing to release, no booking is left open, and, once their TTL has passed, no prediction is
 * left: a booking or prediction made for a registration that ended never lands on the next one.
 */
class RoutingChurnStressTest {
  private static final int WORKERS = 4;
  private static final int FILLERS = 500;
  private static final int SELECTORS = 3;
  private static final int SELECTIONS = 4_000;
  private static final int CHURNS = 200_000;

  static Stream<Arguments> cases() {
    return Stream.of(Arguments.of("kvAware", 1L), Arguments.of("approximate", 2L), Arguments.of("kvAware", 3L),
        Arguments.of("approximate", 4L));
  }

  @ParameterizedTest(name = "{0}, seed {1}")
  @MethodSource("cases")
  void churningTheSameIdsUnderSelectionLeavesNoLoadBehind(String policy, long seed) {
    assertTimeoutPreemptively(Duration.ofSeconds(120), () -> run(policy, seed));
  }

  private void run(String policyName, long seed) throws InterruptedException {
    FakeTicker ticker = new FakeTicker();
    RouterPolicy policy = policyName.equals("approximate") ? RouterPolicy.approximate() : RouterPolicy.kvAware();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(seed).build();
    List<WorkerId> ids = new ArrayList<>();
    for (int i = 0; i < WORKERS; i++) {
      ids.add(WorkerId.of("w" + i));
      router.addWorker(Worker.of(ids.get(i)));
    }
    // Idle workers the requests may not use: every selection walks them while gathering, which widens the window
    // between reading the registry and taking the admission lock, where churn used to slip in.
    for (int i = 0; i < FILLERS; i++) {
      router.addWorker(Worker.of(WorkerId.of("idle" + i)));
    }
    Set<WorkerId> churned = Set.copyOf(ids);
    int[][] prefixes = new int[8][];
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = Fixtures.prompt(seed * 100 + p, 128 + 16 * p);
    }
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    ConcurrentLinkedQueue<Routing> toClose = new ConcurrentLinkedQueue<>();
    AtomicBoolean selecting = new AtomicBoolean(true);
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> selectors = new ArrayList<>();
    for (int t = 0; t < SELECTORS; t++) {
      long threadSeed = seed * 31 + t;
      selectors.add(new Thread(() -> guarded(failures, start, () -> {
        SplittableRandom random = new SplittableRandom(threadSeed);
        List<Routing> open = new ArrayList<>();
        for (int i = 0; i < SELECTIONS; i++) {
          int[] prompt = Fixtures.concat(prefixes[random.nextInt(prefixes.length)], Fixtures.prompt(i, 24));
          try {
            Routing routing = router.select(RouteRequest.newBuilder(prompt).allowedWorkers(churned).build());
            if (random.nextBoolean()) {
              routing.firstToken();
            }
            if (random.nextInt(4) == 0) {
              toClose.add(routing); // closed by another thread
            } else {
              open.add(routing);
            }
          } catch (NoWorkerAvailableException e) {
            // every worker was removed, ejected or draining at that moment: allowed
          }
          if (open.size() > 6) {
            open.remove(random.nextInt(open.size())).close();
          }
          if (i % 8 == 0) {
            healthOp(router, ids.get(random.nextInt(WORKERS)), random);
            ticker.advance(Duration.ofMillis(1)); // backoffs pass, probes happen; no booking reaches its timeout
            Routing other = toClose.poll(); // most likely another thread's
            if (other != null) {
              other.close();
            }
          }
        }
        open.forEach(Routing::close);
      })));
    }
    List<Thread> others = new ArrayList<>();
    others.add(new Thread(() -> guarded(failures, start, () -> {
      SplittableRandom random = new SplittableRandom(seed + 1000);
      for (int i = 0; i < CHURNS && selecting.get(); i++) { // churns for as long as selections run
        WorkerId id = ids.get(random.nextInt(WORKERS));
        router.removeWorker(id);
        router.addWorker(Worker.of(id));
        router.eventSink().apply(id, Fixtures.storedFor(prefixes[random.nextInt(prefixes.length)], 16, i));
      }
    })));
    selectors.forEach(Thread::start);
    others.forEach(Thread::start);
    start.countDown();
    for (Thread thread : selectors) {
      thread.join();
    }
    selecting.set(false);
    for (Thread thread : others) {
      thread.join();
    }
    assertTrue(failures.isEmpty(), () -> "failures: " + failures);
    toClose.forEach(Routing::close);

    assertTrue(router.workers().size() == WORKERS + FILLERS, "every churned id is registered at the end");
    for (WorkerId id : ids) {
      assertEquals(0, router.activeRequests(id), "requests left on " + id);
      assertEquals(0, router.pendingPrefillTokens(id), "prefill left on " + id);
    }
    assertEquals(0, router.overReleases(), "a booking was released twice");
    assertEquals(0, router.openBookings(), "bookings left open");
    IndexInvariants.check(router.index());
    IndexInvariants.check(router.predictions().index());

    // Past every prediction's TTL, one selection expires them all but its own.
    ticker.advance(Duration.ofMinutes(3));
    for (WorkerId id : ids) {
      router.undrain(id);
      router.reportSuccess(id);
    }
    router.select(Fixtures.prompt(seed, 16)).close();
    long predicted = router.predictions().index().stats().entries();
    assertTrue(predicted <= 1, predicted + " predicted entries outlived their TTL");
  }

  private static void healthOp(Router router, WorkerId id, SplittableRandom random) {
    int op = random.nextInt(10);
    if (op < 3) {
      router.reportFailure(id, FailureKind.values()[random.nextInt(FailureKind.values().length)]);
    } else if (op < 8) {
      router.reportSuccess(id);
    } else if (op == 8) {
      router.drain(id);
    } else {
      router.undrain(id);
    }
  }

  private static void guarded(ConcurrentLinkedQueue<Throwable> failures, CountDownLatch start, ThrowingRunnable r) {
    try {
      start.await();
      r.run();
    } catch (Throwable t) {
      failures.add(t);
    }
  }

  @FunctionalInterface
  private interface ThrowingRunnable {
    void run() throws Exception;
  }
}
