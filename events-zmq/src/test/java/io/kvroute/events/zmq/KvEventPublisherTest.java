package io.kvroute.events.zmq;

import static io.kvroute.events.zmq.Hex.H1;
import static io.kvroute.events.zmq.Hex.H2;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import io.kvroute.KvEvent.AllBlocksCleared;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.StorageTier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** The publisher's bytes on real loopback sockets, read with plain JeroMQ sockets. */
class KvEventPublisherTest {
  private static final List<KvEvent> VECTOR_EVENTS = List.of(
      new BlockStored(new long[] {H1, H2}, null, Hex.vectorTokens(), 16, null, StorageTier.GPU, "full_attention",
          null),
      BlockRemoved.of(H1), AllBlocksCleared.INSTANCE);

  @Test
  void liveFrames_areTopicSeqPayload_andPayloadsEqualTheVectors() {
    try (ZContext ctx = new ZContext(1);
        KvEventPublisher mapPublisher = KvEventPublisher.newBuilder().topic("kv-events").wallClock(() -> 1.7e9)
            .build();
        KvEventPublisher arrayPublisher = KvEventPublisher.newBuilder().format(WireFormat.LEGACY_ARRAY)
            .wallClock(() -> 1.7e9).build()) {
      ZMQ.Socket mapSub = subscriber(ctx, mapPublisher);
      ZMQ.Socket arraySub = subscriber(ctx, arrayPublisher);
      for (int i = 0; i < 6; i++) {
        mapPublisher.publish(VECTOR_EVENTS);
      }
      arrayPublisher.publish(List.of(BlockStored.of(new long[] {H1, H2}, null, Hex.vectorTokens(), 16),
          BlockRemoved.of(H1), AllBlocksCleared.INSTANCE));
      for (int seq = 0; seq < 6; seq++) {
        List<byte[]> frames = receive(mapSub);
        assertEquals(3, frames.size());
        assertEquals("6B762D6576656E7473", Hex.of(frames.get(0)));
        assertEquals(String.format("%016X", seq), Hex.of(frames.get(1)));
        assertEquals(Hex.VECTOR_A, Hex.of(frames.get(2)));
      }
      List<byte[]> legacy = receive(arraySub);
      assertEquals(0, legacy.get(0).length, "the default topic is an empty frame");
      assertEquals(Hex.VECTOR_B, Hex.of(legacy.get(2)));
    }
  }

  @Test
  void replay_answersDealerRequests_inBothLayouts() {
    for (boolean withTopic : new boolean[] {true, false}) {
      try (ZContext ctx = new ZContext(1);
          KvEventPublisher publisher = KvEventPublisher.newBuilder().topic("kv-events")
              .replayEndpoint("tcp://127.0.0.1:0").replayWithTopic(withTopic).bufferSteps(4).build()) {
        List<byte[]> payloads = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
          publisher.publish(List.of(BlockRemoved.of(i)));
        }
        ZMQ.Socket dealer = ctx.createSocket(SocketType.DEALER);
        dealer.setReceiveTimeOut(20_000);
        dealer.setHandshakeIvl(1_000);
        dealer.connect(publisher.replayEndpoint());
        dealer.sendMore(new byte[0]);
        dealer.send(KvEventPublisher.seqBytes(3), 0);
        for (long seq = 3; seq < 6; seq++) {
          List<byte[]> reply = receive(dealer);
          assertEquals(withTopic ? 4 : 3, reply.size());
          assertEquals(0, reply.get(0).length);
          int at = withTopic ? 2 : 1;
          if (withTopic) {
            assertEquals("kv-events", new String(reply.get(1), java.nio.charset.StandardCharsets.UTF_8));
          }
          assertEquals(seq, KvEventPublisher.readSeq(reply.get(at)));
          assertEquals(List.of(BlockRemoved.of(seq)), KvEventCodec.decode(reply.get(at + 1)).events());
          payloads.add(reply.get(at + 1));
        }
        List<byte[]> end = receive(dealer);
        assertEquals(withTopic ? 4 : 3, end.size());
        assertArrayEquals(KvEventPublisher.END_SEQ, end.get(withTopic ? 2 : 1));
        assertEquals(0, end.get(end.size() - 1).length);

        // The ring holds 4 batches (2..5): a request from 0 starts at 2.
        dealer.sendMore(new byte[0]);
        dealer.send(KvEventPublisher.seqBytes(0), 0);
        assertEquals(2, KvEventPublisher.readSeq(receive(dealer).get(withTopic ? 2 : 1)));
        assertEquals(3, payloads.size());
      }
    }
  }

  @Test
  void dropNext_skipsLiveSendsButKeepsSequenceNumbersAndTheRing() {
    try (ZContext ctx = new ZContext(1);
        KvEventPublisher publisher = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build()) {
      ZMQ.Socket sub = subscriber(ctx, publisher);
      publisher.publish(List.of(BlockRemoved.of(0)));
      publisher.dropNext(2);
      publisher.publish(List.of(BlockRemoved.of(1)));
      publisher.publish(List.of(BlockRemoved.of(2)));
      assertEquals(3, publisher.publish(List.of(BlockRemoved.of(3))));
      assertEquals(0, KvEventPublisher.readSeq(receive(sub).get(1)));
      assertEquals(3, KvEventPublisher.readSeq(receive(sub).get(1)));
      assertEquals(4, publisher.nextSequence());
    }
  }

  @Test
  void dataParallelRank_offsetsAnExplicitPort_andIsWrittenIntoBatches() throws Exception {
    assertEquals("tcp://127.0.0.1:5558", Endpoints.offset("tcp://127.0.0.1:5557", 1));
    assertEquals("tcp://*:5657", Endpoints.offset("tcp://*:5557", 100));
    assertEquals("tcp://127.0.0.1:0", Endpoints.offset("tcp://127.0.0.1:0", 3));
    assertEquals("inproc://x_dp2", Endpoints.offset("inproc://x", 2));
    assertThrows(IllegalArgumentException.class, () -> Endpoints.offset("ipc:///tmp/x", 1));
    try (ZContext ctx = new ZContext(1);
        KvEventPublisher publisher = KvEventPublisher.newBuilder().dataParallelRank(3).build()) {
      ZMQ.Socket sub = subscriber(ctx, publisher);
      publisher.publish(List.of());
      assertEquals(3, KvEventCodec.decode(receive(sub).get(2)).dataParallelRank());
      assertEquals(3, publisher.dataParallelRank());
      assertNull(publisher.replayEndpoint());
    }
  }

  @Test
  void builderValidation_namesTheArgument() {
    KvEventPublisher.Builder b = KvEventPublisher.newBuilder();
    assertTrue(assertThrows(IllegalArgumentException.class, () -> b.endpoint("http://x")).getMessage()
        .contains("endpoint"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> b.bufferSteps(-1)).getMessage()
        .contains("bufferSteps"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> b.dataParallelRank(-1)).getMessage()
        .contains("dataParallelRank"));
    assertThrows(NullPointerException.class, () -> b.format(null));
    KvEventPublisher publisher = b.build();
    publisher.close();
    publisher.close();
    assertThrows(IllegalStateException.class, () -> publisher.publish(List.of()));
  }

  /**
   * A plain SUB socket whose subscription {@code publisher} has seen. A fresh socket is tried again when the first
   * does not get through: JeroMQ 0.6.0 occasionally stalls a new connection's handshake and then loses the
   * subscription on reconnect (zeromq/jeromq#1022), which the subscriber under test works around the same way.
   */
  static ZMQ.Socket subscriber(ZContext ctx, KvEventPublisher publisher) {
    for (int attempt = 1; ; attempt++) {
      ZMQ.Socket sub = ctx.createSocket(SocketType.SUB);
      sub.setLinger(0);
      sub.setReceiveTimeOut(20_000);
      sub.setHandshakeIvl(1_000);
      sub.subscribe(new byte[0]);
      sub.connect(publisher.endpoint());
      if (publisher.awaitSubscribers(1, Duration.ofSeconds(4))) {
        return sub;
      }
      sub.close();
      assertTrue(attempt < 5, "no subscription got through in 5 attempts");
    }
  }

  static List<byte[]> receive(ZMQ.Socket socket) {
    List<byte[]> frames = new ArrayList<>();
    byte[] first = socket.recv(0);
    assertNotNull(first, "timed out receiving");
    frames.add(first);
    while (socket.hasReceiveMore()) {
      frames.add(socket.recv(0));
    }
    return frames;
  }
}
