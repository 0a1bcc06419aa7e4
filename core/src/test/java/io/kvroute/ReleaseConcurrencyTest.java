package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Handles released by other threads than the one that selected them, while selections drain the release queue:
 * {@code firstToken} and {@code close} of one handle race each other (from two threads) and the drain, and every
 * booking must be released exactly once.
 */
class ReleaseConcurrencyTest {
  static Stream<Arguments> seeds() {
    return IntStream.range(0, 3).mapToObj(i -> Arguments.of("seed " + (40 + i), 40L + i));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void everyBookingIsReleasedOnceWhateverThreadReleasesIt(String name, long seed) throws InterruptedException {
    Router router = Router.newBuilder().randomSeed(seed).build();
    List<WorkerId> ids = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      WorkerId id = WorkerId.of("w" + w);
      ids.add(id);
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    int perSelector = 20_000;
    BlockingQueue<Routing> toFirstToken = new ArrayBlockingQueue<>(1024);
    BlockingQueue<Routing> toClose = new ArrayBlockingQueue<>(1024);
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      long threadSeed = seed * 10 + t;
      threads.add(new Thread(() -> guarded(failures, start, () -> {
        SplittableRandom random = new SplittableRandom(threadSeed);
        for (int i = 0; i < perSelector; i++) {
          Routing routing = router.select(Fixtures.prompt(random.nextInt(64), 32 + random.nextInt(64)));
          // Both threads get the handle: one marks the first token, the other closes, in either order.
          toFirstToken.put(routing);
          toClose.put(routing);
        }
      })));
    }
    threads.add(new Thread(() -> guarded(failures, start, () -> {
      for (int i = 0; i < 2 * perSelector; i++) {
        toFirstToken.take().firstToken();
      }
    })));
    threads.add(new Thread(() -> guarded(failures, start, () -> {
      for (int i = 0; i < 2 * perSelector; i++) {
        toClose.take().close();
      }
    })));
    threads.forEach(Thread::start);
    start.countDown();
    for (Thread thread : threads) {
      thread.join(TimeUnit.MINUTES.toMillis(2));
    }
    assertTrue(failures.isEmpty(), () -> name + ": failures: " + failures);
    router.select(Fixtures.prompt(1, 32)).close(); // a last selection drains whatever was queued behind a held lock
    for (WorkerId id : ids) {
      assertEquals(0, router.activeRequests(id), name + ": requests left on " + id);
      assertEquals(0, router.pendingPrefillTokens(id), name + ": prefill left on " + id);
    }
    assertEquals(0, router.overReleases(), name + ": a booking was released twice");
  }

  private static void guarded(ConcurrentLinkedQueue<Throwable> failures, CountDownLatch start,
      ThrowingRunnable r) {
    try {
      start.await();
      r.run();
    } catch (Throwable t) {
      failures.add(t);
    }
  }

  interface ThrowingRunnable {
    void run() throws Exception;
  }
}
