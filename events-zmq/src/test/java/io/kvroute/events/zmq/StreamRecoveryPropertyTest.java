package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import io.kvroute.WorkerId;
import io.kvroute.testkit.Await;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random loss patterns on real sockets. Whatever is lost, the sink must end up holding a contiguous tail of the
 * engine's event stream (never stale events before a hole); when the replay buffer covers every loss it must hold
 * the whole stream.
 */
class StreamRecoveryPropertyTest {
  static Stream<Arguments> cases() {
    return Stream.of(
        Arguments.of(101L, 10_000, true),
        Arguments.of(102L, 10_000, true),
        Arguments.of(103L, 6, true),
        Arguments.of(104L, 3, true),
        Arguments.of(105L, 0, false));
  }

  @ParameterizedTest(name = "seed {0}, ring {1}, replay {2}")
  @MethodSource("cases")
  void sinkHoldsAContiguousTailOfTheStream(long seed, int ring, boolean replay) throws InterruptedException {
    SplittableRandom random = new SplittableRandom(seed);
    RecordingSink recording = new RecordingSink();
    WorkerId worker = WorkerId.of("engine");
    EngineModel engine = new EngineModel(seed, 16, 40);
    List<KvEvent> all = new ArrayList<>();
    int batches = 200;
    int maxDrop = 0;
    KvEventPublisher.Builder builder = KvEventPublisher.newBuilder().bufferSteps(ring);
    if (replay) {
      builder.replayEndpoint("tcp://127.0.0.1:0");
    }
    try (KvEventPublisher p = builder.build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(recording)
            .replayTimeout(Duration.ofSeconds(2)).build()) {
      subscriber.addWorker(WorkerId.of("engine"), p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, Duration.ofSeconds(20)));
      for (int i = 0; i < batches - 1; i++) {
        if (i > 0 && random.nextInt(25) == 0) {
          int drop = 1 + random.nextInt(5);
          maxDrop = Math.max(maxDrop, drop);
          p.dropNext(drop);
        }
        List<KvEvent> batch = engine.nextBatch();
        all.addAll(batch);
        p.publish(batch);
      }
      p.dropNext(0);
      List<KvEvent> last = List.of(KvEvent.BlockRemoved.of(-7)); // the final batch always arrives
      all.addAll(last);
      p.publish(last);
      Await.until(() -> {
        List<KvEvent> events = recording.events(worker);
        return !events.isEmpty() && events.get(events.size() - 1).equals(last.get(0));
      }, () -> "the last batch, now " + subscriber.stats());
      List<KvEvent> held = recording.events(worker);
      assertEquals(all.subList(all.size() - held.size(), all.size()), held, "a contiguous tail");
      EventSourceStats stats = subscriber.stats(WorkerId.of("engine")).orElseThrow();
      if (replay && ring >= batches) {
        assertEquals(all, held);
        assertEquals(0, stats.purges(), stats.toString());
      }
      if (!replay && maxDrop > 0) {
        assertTrue(stats.purges() >= 1, stats.toString());
      }
    }
  }
}
