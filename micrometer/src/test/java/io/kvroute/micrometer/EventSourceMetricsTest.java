package io.kvroute.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventPublisher;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.testkit.Await;
import io.kvroute.testkit.FakeTicker;
import io.kvroute.testkit.Fixtures;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A real publisher and subscriber on loopback ZMQ sockets, measured. */
class EventSourceMetricsTest {
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final FakeTicker ticker = new FakeTicker();
  private final EventSourceMetrics metrics = new EventSourceMetrics(Tags.empty(), ticker);

  private double count(String name, String... tags) {
    return registry.get(name).tags(tags).counter().count();
  }

  @Test
  void batchesGapsPurgesAndTheLastBatchAgeFollowTheStream() throws Exception {
    metrics.bindTo(registry);
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("engine");
    router.addWorker(Worker.of(id));
    // No replay endpoint: a gap cannot be recovered and purges the worker.
    try (KvEventPublisher publisher = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).listener(metrics)
            .build()) {
      subscriber.addWorker(id, publisher.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(publisher.awaitSubscribers(1, Duration.ofSeconds(20)));
      int[] blocks = {3, 5, 2};
      for (int i = 0; i < blocks.length; i++) {
        List<KvEvent> batch = List.of(Fixtures.storedFor(Fixtures.prompt(i, blocks[i] * 16), 16, 9));
        publisher.publish(batch);
      }
      // A batch's callback counts the batch, then its events, then its stored blocks, so wait for the last: once
      // the stored blocks of all three batches are counted, so are their batches and events.
      Await.until(() -> registry.find(EventSourceMetrics.STORED_BLOCKS).counter() != null
          && registry.get(EventSourceMetrics.STORED_BLOCKS).counter().count() == 3 + 5 + 2, () -> "10 stored blocks");
      assertEquals(3, registry.get(EventSourceMetrics.BATCHES).counter().count(), 0.0);
      assertEquals(3, count(EventSourceMetrics.EVENTS, "worker", "engine", "rank", "0"), 0.0);
      assertEquals(10, router.indexer().entriesOf(id));

      ticker.advance(Duration.ofMillis(2500));
      assertEquals(2.5, registry.get(EventSourceMetrics.LAST_BATCH_AGE).timeGauge().value(TimeUnit.SECONDS), 1e-9);

      publisher.dropNext(2);
      publisher.publish(List.of(Fixtures.storedFor(Fixtures.prompt(10, 32), 16, 9)));
      publisher.publish(List.of(Fixtures.storedFor(Fixtures.prompt(11, 32), 16, 9)));
      publisher.publish(List.of(Fixtures.storedFor(Fixtures.prompt(12, 32), 16, 9)));
      Await.until(() -> count(EventSourceMetrics.GAPS, "worker", "engine") == 1
          && count(EventSourceMetrics.PURGES, "reason", "gap_not_recoverable") == 1, () -> "a gap and a purge");
      assertEquals(0, count(EventSourceMetrics.PURGES, "reason", "restart"), 0.0);
      Await.until(() -> count(EventSourceMetrics.BATCHES, "worker", "engine") == 4, () -> "the batch after the gap");
      assertEquals(0, registry.get(EventSourceMetrics.LAST_BATCH_AGE).timeGauge().value(TimeUnit.SECONDS), 1e-9);
    }
  }

  @Test
  void aRemovedWorkerTakesItsMetersAndItsGrowingAgeWithIt() throws Exception {
    metrics.bindTo(registry);
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("leaving");
    router.addWorker(Worker.of(id));
    try (KvEventPublisher publisher = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).listener(metrics)
            .build()) {
      subscriber.addWorker(id, publisher.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(publisher.awaitSubscribers(1, Duration.ofSeconds(20)));
      publisher.publish(List.of(Fixtures.storedFor(Fixtures.prompt(1, 32), 16, 9)));
      Await.until(() -> registry.find(EventSourceMetrics.BATCHES).tags("worker", "leaving").counter() != null,
          () -> "a batch");
      assertTrue(subscriber.removeWorker(id));
      // Before: the departed worker's age kept growing (an event lag alarm for a worker long gone), and each
      // worker that ever came left twenty meters behind.
      Await.until(() -> registry.getMeters().stream().noneMatch(m -> "leaving".equals(m.getId().getTag("worker"))),
          () -> "no meter of the removed worker; left: " + registry.getMeters().stream()
              .filter(m -> "leaving".equals(m.getId().getTag("worker"))).map(m -> m.getId().getName()).toList());
    }
  }
}
