package io.kvroute.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.FailureKind;
import io.kvroute.HealthState;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.testkit.FakeTicker;
import io.kvroute.testkit.Fixtures;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RouterMetricsTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final WorkerId B = WorkerId.of("b");

  private final FakeTicker ticker = new FakeTicker();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final RouterMetrics metrics = new RouterMetrics(Tags.of("router", "test"));

  private Router router() {
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(ticker).randomSeed(7)
        .listener(metrics).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(B));
    metrics.monitor(router).bindTo(registry);
    return router;
  }

  private double count(String name, WorkerId worker) {
    return registry.get(name).tags("worker", worker.name(), "rank", "0").counter().count();
  }

  @Test
  void decisionsCachedTokensAndTimersFollowWhatWasRouted() {
    Router router = router();
    int[] held = Fixtures.prompt(1, 160);  // 10 blocks, on b
    int[] other = Fixtures.prompt(2, 96);  // 6 blocks, on a
    router.eventSink().apply(B, Fixtures.storedFor(held, 16, 11));
    router.eventSink().apply(A, Fixtures.storedFor(other, 16, 12));
    int[][] prompts = {held, held, other, held, other, Fixtures.prompt(3, 64)};
    Map<WorkerId, Integer> routed = new HashMap<>();
    long ttftNanos = 0;
    long durationNanos = 0;
    for (int i = 0; i < prompts.length; i++) {
      Routing routing = router.select(prompts[i]);
      routed.merge(routing.workerId(), 1, Integer::sum);
      ticker.advance(Duration.ofMillis(i + 1));
      routing.firstToken();
      ticker.advance(Duration.ofMillis(10));
      routing.close();
      ttftNanos += TimeUnit.MILLISECONDS.toNanos(i + 1);
      durationNanos += TimeUnit.MILLISECONDS.toNanos(i + 11);
    }
    // The cached prompts go where their blocks are; the unseen one anywhere.
    assertTrue(routed.getOrDefault(B, 0) >= 3 && routed.getOrDefault(A, 0) >= 2, routed.toString());
    for (WorkerId w : new WorkerId[] {A, B}) {
      assertEquals(routed.getOrDefault(w, 0), count(RouterMetrics.DECISIONS, w), 0.0, w.name());
    }
    double predicted = registry.find(RouterMetrics.PREDICTED_CACHED_TOKENS).summaries().stream()
        .mapToDouble(s -> s.totalAmount()).sum();
    // Fully cached prompts: vLLM recomputes the block of the last token, so each predicts one block (16) less.
    assertEquals(3 * (160 - 16) + 2 * (96 - 16), predicted, 0.0);
    double prompt = registry.find(RouterMetrics.PROMPT_TOKENS).summaries().stream()
        .mapToDouble(s -> s.totalAmount()).sum();
    assertEquals(3 * 160 + 2 * 96 + 64, prompt, 0.0);
    assertEquals(ttftNanos, totalNanos(RouterMetrics.TIME_TO_FIRST_TOKEN), 1.0);
    assertEquals(durationNanos, totalNanos(RouterMetrics.DURATION), 1.0);
    assertEquals(prompts.length, registry.find(RouterMetrics.TIME_TO_FIRST_TOKEN).timers().stream()
        .mapToLong(Timer::count).sum());
    assertEquals("kvAware", registry.get(RouterMetrics.DECISIONS).tags("worker", "b").counter().getId()
        .getTag("policy"));
    assertEquals("test", registry.get(RouterMetrics.DECISIONS).tags("worker", "b").counter().getId()
        .getTag("router"));

    // Index gauges read the index: 10 + 6 blocks stored, one entry each.
    assertEquals(16, registry.get(RouterMetrics.INDEX_ENTRIES).gauge().value(), 0.0);
    assertEquals(10, registry.get(RouterMetrics.INDEX_WORKER_ENTRIES).tags("worker", "b").gauge().value(), 0.0);
    assertEquals(6, registry.get(RouterMetrics.INDEX_WORKER_ENTRIES).tags("worker", "a").gauge().value(), 0.0);
    assertEquals(2, registry.get(RouterMetrics.WORKERS).gauge().value(), 0.0);
    assertTrue(registry.get(RouterMetrics.INDEX_MEMORY).gauge().value() > 0);
  }

  private double totalNanos(String timer) {
    return registry.find(timer).timers().stream().mapToDouble(t -> t.totalTime(TimeUnit.NANOSECONDS)).sum();
  }

  @Test
  void activeRequestsGaugeFollowsOpenHandlesAndLeavesWithTheWorker() {
    Router router = router();
    Routing one = router.select(RouteRequest.newBuilder(Fixtures.prompt(4, 64)).allowedWorkers(Set.of(A)).build());
    Routing two = router.select(RouteRequest.newBuilder(Fixtures.prompt(5, 64)).allowedWorkers(Set.of(A)).build());
    assertEquals(2, registry.get(RouterMetrics.ACTIVE_REQUESTS).tags("worker", "a").gauge().value(), 0.0);
    one.close();
    two.close();
    assertEquals(0, registry.get(RouterMetrics.ACTIVE_REQUESTS).tags("worker", "a").gauge().value(), 0.0);
    router.removeWorker(A);
    assertNull(registry.find(RouterMetrics.ACTIVE_REQUESTS).tags("worker", "a").gauge());
    assertEquals(1, registry.get(RouterMetrics.WORKERS).gauge().value(), 0.0);
    router.addWorker(Worker.of(WorkerId.of("c")));
    assertEquals(0, registry.get(RouterMetrics.ACTIVE_REQUESTS).tags("worker", "c").gauge().value(), 0.0);
  }

  @Test
  void workersThatComeAndGoLeaveNoMetersBehind() {
    Router router = router(); // a and b stay
    Set<String> staying = Set.of("a", "b");
    for (int i = 0; i < 20; i++) {
      WorkerId w = WorkerId.of("pod-" + i);
      router.addWorker(Worker.of(w));
      Routing done = router.select(RouteRequest.newBuilder(Fixtures.prompt(300 + i, 64)).allowedWorkers(Set.of(w))
          .build());
      done.firstToken();
      done.close();
      router.eventSink().apply(w, Fixtures.storedFor(Fixtures.prompt(400 + i, 64), 32, 3)); // mismatched blocks
      router.reportFailure(w, FailureKind.CONNECT_FAILED); // a health change
      Routing open = router.select(RouteRequest.newBuilder(Fixtures.prompt(500 + i, 64)).allowedWorkers(Set.of(w))
          .build());
      assertEquals(1, count(RouterMetrics.DECISIONS, w) - 1, 0.0); // both requests counted while it is here
      router.removeWorker(w);
      open.firstToken(); // still in flight when its worker left
      open.close();
    }
    for (var meter : registry.getMeters()) {
      String worker = meter.getId().getTag("worker");
      assertTrue(worker == null || staying.contains(worker), "a meter of a departed worker: " + meter.getId());
    }
    // Re-added under the same id, a worker starts from zero.
    WorkerId again = WorkerId.of("pod-3");
    router.addWorker(Worker.of(again));
    router.select(RouteRequest.newBuilder(Fixtures.prompt(600, 64)).allowedWorkers(Set.of(again)).build()).close();
    assertEquals(1, count(RouterMetrics.DECISIONS, again), 0.0);
    assertEquals(1, registry.get(RouterMetrics.DURATION).tags("worker", "pod-3").timer().count());
  }

  @Test
  void aCallbackThatArrivesAfterItsWorkerLeftLeavesNoMeters() {
    // The race a listener sees: a selection that chose a worker as it was being removed reports it after
    // onWorkerRemoved. The callbacks are replayed here in that order, on a router that no longer has the worker.
    Router router = router();
    WorkerId w = WorkerId.of("leaving");
    router.addWorker(Worker.of(w));
    Routing late = router.select(RouteRequest.newBuilder(Fixtures.prompt(700, 64)).allowedWorkers(Set.of(w)).build());
    late.close();
    router.removeWorker(w);
    metrics.onRouted(late);
    metrics.onOrphanBlocks(w, 3);
    metrics.onBlockSizeMismatch(w, 16, 32, 2);
    metrics.onUnknownRemoval(w, 1);
    metrics.onHealthChanged(w, HealthState.HEALTHY, HealthState.SUSPECT, "late");
    for (var meter : registry.getMeters()) {
      assertTrue(!"leaving".equals(meter.getId().getTag("worker")), "a meter of a departed worker: " + meter.getId());
    }
    // A worker that is still there gets its meters from the same callbacks.
    Routing kept = router.select(RouteRequest.newBuilder(Fixtures.prompt(701, 64)).allowedWorkers(Set.of(A)).build());
    kept.close();
    metrics.onOrphanBlocks(A, 3);
    assertEquals(3, registry.get(RouterMetrics.INDEX_ORPHAN_BLOCKS).tags("worker", "a").counter().count(), 0.0);
  }

  @Test
  void unroutableRequestsAndExpiredBookingsAreCounted() {
    Router router = Router.newBuilder().ticker(ticker).bookingTimeout(Duration.ofSeconds(1)).listener(metrics)
        .build();
    metrics.bindTo(registry);
    assertThrows(NoWorkerAvailableException.class, () -> router.select(Fixtures.prompt(6, 32)));
    router.addWorker(Worker.of(A));
    router.select(Fixtures.prompt(7, 32)); // never closed
    router.select(Fixtures.prompt(8, 32)); // never closed
    ticker.advance(Duration.ofSeconds(2));
    router.select(Fixtures.prompt(9, 32)).close();
    assertEquals(1, registry.get(RouterMetrics.UNROUTABLE).counter().count(), 0.0);
    assertEquals(2, registry.get(RouterMetrics.BOOKINGS_EXPIRED).counter().count(), 0.0);
    // Expired bookings are not durations: only the request closed is timed.
    assertEquals(1, registry.get(RouterMetrics.DURATION).timer().count());
  }

  @Test
  void evictionsAndDroppedBlocksAreCountedPerWorker() {
    Router router = Router.newBuilder().ticker(ticker).maxIndexEntries(64).listener(metrics).build();
    router.addWorker(Worker.of(A));
    metrics.monitor(router).bindTo(registry);
    for (int i = 0; i < 10; i++) {
      router.eventSink().apply(A, Fixtures.storedFor(Fixtures.prompt(100 + i, 256), 16, 3)); // 16 blocks each
    }
    long entries = (long) registry.get(RouterMetrics.INDEX_ENTRIES).gauge().value();
    assertTrue(entries <= 64, "within budget: " + entries);
    // Every stored block either is held or was evicted.
    assertEquals(160 - entries, registry.get(RouterMetrics.INDEX_EVICTIONS).counter().count(), 0.0);
    router.eventSink().apply(A, Fixtures.storedFor(Fixtures.prompt(200, 64), 32, 3)); // 2 blocks of 32 tokens
    assertEquals(2, count(RouterMetrics.INDEX_MISMATCHED_BLOCKS, A), 0.0);
  }

  @Test
  void workerHealthFollowsFailuresAndDrains() {
    Router router = Router.newBuilder().ticker(ticker).ejectAfterFailures(2).listener(metrics).build();
    router.addWorker(Worker.of(A));
    metrics.monitor(router).bindTo(registry);
    assertEquals(1, health(A, "healthy"), 0.0);
    assertEquals(0, health(A, "ejected"), 0.0);
    router.reportFailure(A, FailureKind.CONNECT_FAILED);
    router.reportFailure(A, FailureKind.CONNECT_FAILED);
    assertEquals(router.health(A), HealthState.EJECTED);
    assertEquals(1, health(A, "ejected"), 0.0);
    assertEquals(0, health(A, "healthy") + health(A, "suspect") + health(A, "draining"), 0.0);
    assertEquals(1, registry.get(RouterMetrics.WORKER_HEALTH_CHANGES).tags("worker", "a", "state", "ejected")
        .counter().count(), 0.0);
    double changes = registry.find(RouterMetrics.WORKER_HEALTH_CHANGES).counters().stream()
        .mapToDouble(c -> c.count()).sum();
    assertTrue(changes >= 1 && changes <= 2, "one change per transition: " + changes); // maybe via SUSPECT
  }

  private double health(WorkerId w, String state) {
    return registry.get(RouterMetrics.WORKER_HEALTH).tags("worker", w.name(), "state", state).gauge().value();
  }

  @Test
  void aRegistryBoundLaterSeesLaterDecisions() {
    Router router = router();
    router.select(RouteRequest.newBuilder(Fixtures.prompt(10, 64)).allowedWorkers(Set.of(B)).build()).close();
    SimpleMeterRegistry later = new SimpleMeterRegistry();
    metrics.bindTo(later);
    router.select(RouteRequest.newBuilder(Fixtures.prompt(11, 64)).allowedWorkers(Set.of(B)).build()).close();
    assertEquals(2, count(RouterMetrics.DECISIONS, B), 0.0);
    assertEquals(1, later.get(RouterMetrics.DECISIONS).tags("worker", "b").counter().count(), 0.0);
    assertThrows(IllegalStateException.class, () -> metrics.monitor(router));
  }
}
