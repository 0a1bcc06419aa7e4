package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * Several threads select and close while others apply events and churn workers; bounded in operations, and the
 * invariants must hold at the end: no thread failed, the index is consistent, and no load is left booked.
 */
class RoutingConcurrencyTest {
  @Test
  void selectingWhileEventsApplyKeepsInvariants() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), this::run);
  }

  private void run() throws InterruptedException {
    Router router = Router.newBuilder().randomSeed(3).maxIndexEntries(5_000).build();
    List<WorkerId> stable = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      WorkerId id = WorkerId.of("w" + i);
      stable.add(id);
      router.addWorker(Worker.of(id));
    }
    int[][] prefixes = new int[16][];
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = Fixtures.prompt(p, 256 + p * 16);
    }
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 3; t++) {
      long seed = t;
      threads.add(new Thread(() -> guarded(failures, start, () -> {
        SplittableRandom random = new SplittableRandom(seed);
        List<Routing> open = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {
          int[] prompt = Fixtures.concat(prefixes[random.nextInt(prefixes.length)], Fixtures.prompt(i, 20));
          Routing routing = router.select(prompt);
          open.add(routing);
          if (open.size() > 4) {
            Routing done = open.remove(0);
            done.firstToken();
            done.close();
          }
        }
        open.forEach(Routing::close);
      })));
    }
    for (int t = 0; t < 2; t++) {
      long seed = 100 + t;
      threads.add(new Thread(() -> guarded(failures, start, () -> {
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < 5_000; i++) {
          WorkerId worker = stable.get(random.nextInt(stable.size()));
          KvEvent.BlockStored stored = Fixtures.storedFor(prefixes[random.nextInt(prefixes.length)], 16, seed);
          if (random.nextInt(3) == 0) {
            router.eventSink().apply(worker, KvEvent.BlockRemoved.of(stored.blockHashes()));
          } else if (random.nextInt(200) == 0) {
            router.eventSink().apply(worker, KvEvent.AllBlocksCleared.INSTANCE);
          } else {
            router.eventSink().apply(worker, stored);
          }
        }
      })));
    }
    threads.add(new Thread(() -> guarded(failures, start, () -> {
      for (int i = 0; i < 500; i++) {
        WorkerId churn = WorkerId.of("churn" + (i % 3));
        router.addWorker(Worker.of(churn));
        router.eventSink().apply(churn, Fixtures.storedFor(prefixes[i % prefixes.length], 16, i));
        router.removeWorker(churn);
      }
    })));
    threads.forEach(Thread::start);
    start.countDown();
    for (Thread thread : threads) {
      thread.join();
    }
    assertTrue(failures.isEmpty(), () -> "failures: " + failures);
    IndexInvariants.check(router.index());
    for (WorkerId id : stable) {
      assertEquals(0, router.activeRequests(id), "requests left on " + id);
      assertEquals(0, router.pendingPrefillTokens(id), "prefill left on " + id);
    }
    assertEquals(0, router.overReleases(), "a booking was released twice");
    assertEquals(stable.size(), router.workers().size());
    assertTrue(router.indexer().stats().entries() <= 5_000);
    assertTrue(router.indexer().stats().entriesPerWorker().keySet().stream().allMatch(stable::contains),
        "no entries of removed workers remain: " + router.indexer().stats().entriesPerWorker().keySet());
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
