package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent.BlockStored;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.testkit.Await;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A subscriber built with {@code router(router)} follows the registry's updates, on real loopback sockets: an update
 * that leaves the worker's events endpoint as it was keeps the subscription and the entries; one that moves it to
 * another engine re-subscribes there, and the entries learned from the old engine are purged first (nothing proves
 * they hold on the new one).
 */
class RegistryFollowingTest {
  private static final int BLOCK = 16;
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final WorkerId W = WorkerId.of("moving");

  private static BlockStored stored(long base, int blocks) {
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = (base + i + 1) * 0x9E3779B97F4A7C15L;
    }
    return BlockStored.of(hashes, null, IntStream.range(0, blocks * BLOCK).map(t -> (int) base + t).toArray(), BLOCK);
  }

  private static Worker at(KvEventPublisher engine) {
    return Worker.newBuilder(W).endpoint(Worker.HTTP, URI.create("http://127.0.0.1:1"))
        .endpoint(KvEventSubscriber.EVENTS_ENDPOINT, URI.create(engine.endpoint())).build();
  }

  @Test
  void anUpdateMovingTheEventsEndpointResubscribes_andOneKeepingItChangesNothing() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    try (KvEventPublisher first = KvEventPublisher.newBuilder().build();
        KvEventPublisher second = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().router(router).build()) {
      subscriber.start();
      router.addWorker(at(first));
      assertTrue(first.awaitSubscribers(1, WAIT));
      first.publish(List.of(stored(0, 2)));
      Await.until(() -> router.indexer().entriesOf(W) == 2, () -> "2 entries, now " + router.indexer().entriesOf(W));

      router.workers().update(at(first)); // the same endpoint: nothing to do
      first.publish(List.of(stored(100, 1)));
      Await.until(() -> router.indexer().entriesOf(W) == 3, () -> "3 entries, now " + router.indexer().entriesOf(W));
      assertEquals(0, subscriber.stats(W).orElseThrow().purges(), "an update keeping the endpoint purged");

      router.workers().update(at(second));
      assertTrue(second.awaitSubscribers(1, WAIT), "subscribed to the worker's new events endpoint");
      Await.until(() -> first.subscriptions() == 0, () -> "unsubscribed from the old endpoint");
      Await.until(() -> router.indexer().entriesOf(W) == 0, () -> "the old engine's entries purged, now "
          + router.indexer().entriesOf(W));
      second.publish(List.of(stored(200, 4)));
      Await.until(() -> router.indexer().entriesOf(W) == 4, () -> "the new engine's 4 entries, now "
          + router.indexer().entriesOf(W));
      assertEquals(List.of(W), subscriber.workers());
    }
  }
}
