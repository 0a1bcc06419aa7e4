package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.IndexInvariants;
import io.kvroute.KvEvent;
import io.kvroute.KvIndexer;
import io.kvroute.WorkerId;
import io.kvroute.testkit.Await;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Mutated and truncated payloads through the decoder and into a real index: the decoder either returns a batch or
 * throws {@link KvEventFormatException}, never anything else, and the index stays consistent.
 */
class DecoderFuzzTest {
  private static final int ITERATIONS = 100_000; // per seed; 2 seeds = 200,000 payloads
  private static final int[] INTERESTING = {0x00, 0x01, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
      0xC4, 0xC6, 0xCA, 0xCB, 0xCC, 0xCF, 0xD3, 0xD9, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF, 0xE0, 0xFF};

  static Stream<Long> seeds() {
    return Stream.of(0x5EED_0001L, 0x5EED_0002L);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void mutatedPayloads_neverEscapeAsAnythingButFormatErrors(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<byte[]> corpus = corpus(random);
    KvIndexer index = KvIndexer.newBuilder().blockSize(16).maxEntries(20_000).build();
    WorkerId[] workers = {WorkerId.of("a"), WorkerId.of("b"), new WorkerId("a", 1)};
    int decoded = 0;
    int rejected = 0;
    for (int i = 0; i < ITERATIONS; i++) {
      byte[] payload = mutate(corpus.get(random.nextInt(corpus.size())), random);
      DecodedBatch batch;
      try {
        batch = KvEventCodec.decode(payload);
      } catch (KvEventFormatException e) {
        rejected++;
        continue;
      }
      decoded++;
      index.applyAll(workers[random.nextInt(workers.length)], batch.events());
      if (i % 5_000 == 0) {
        IndexInvariants.check(index);
      }
    }
    IndexInvariants.check(index);
    assertEquals(ITERATIONS, decoded + rejected);
    assertTrue(decoded > ITERATIONS / 20, "mutations should leave some payloads decodable: " + decoded);
    assertTrue(rejected > ITERATIONS / 20, "mutations should break some payloads: " + rejected);
  }

  /** The same mutations over real sockets, with random frame counts: the subscriber counts, drops and carries on. */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void mutatedMessagesOnTheWire_areCountedAndTheSubscriberCarriesOn(long seed) throws InterruptedException {
    SplittableRandom random = new SplittableRandom(seed);
    List<byte[]> corpus = corpus(random);
    KvIndexer index = KvIndexer.newBuilder().blockSize(16).maxEntries(20_000).build();
    RecordingSink recording = new RecordingSink(index);
    int messages = 3_000;
    try (org.zeromq.ZContext ctx = new org.zeromq.ZContext(1);
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(recording).build()) {
      org.zeromq.ZMQ.Socket pub = ctx.createSocket(org.zeromq.SocketType.XPUB);
      pub.setSndHWM(0);
      pub.bind("tcp://127.0.0.1:*");
      subscriber.addWorker(WorkerId.of("fuzzed"), pub.getLastEndpoint(), null, "", 1);
      subscriber.start();
      pub.setReceiveTimeOut(20_000);
      assertEquals(1, pub.recv(0)[0], "subscription");
      long seq = 0;
      for (int i = 0; i < messages; i++) {
        byte[] payload = mutate(corpus.get(random.nextInt(corpus.size())), random);
        int frames = random.nextInt(10) == 0 ? random.nextInt(6) + 1 : 3;
        if (frames == 3) {
          send(pub, new byte[0], KvEventPublisher.seqBytes(seq++), payload);
        } else {
          byte[][] parts = new byte[frames][];
          for (int f = 0; f < frames; f++) {
            parts[f] = f == frames - 1 ? payload : new byte[random.nextInt(9)];
          }
          send(pub, parts);
        }
      }
      byte[] sentinel = KvEventCodec.encode(DecodedBatch.of(0, List.of(KvEvent.BlockRemoved.of(-42)), 0),
          WireFormat.MAP);
      send(pub, new byte[0], KvEventPublisher.seqBytes(seq), sentinel);
      WorkerId worker = WorkerId.of("fuzzed");
      Await.until(() -> {
        List<KvEvent> events = recording.events(worker);
        return !events.isEmpty() && events.get(events.size() - 1).equals(KvEvent.BlockRemoved.of(-42));
      }, () -> "the sentinel, now " + subscriber.stats());
      // The sink sees the sentinel just before the I/O thread counts its batch: wait for the count too.
      Await.until(() -> {
        EventSourceStats s = subscriber.stats(worker).orElseThrow();
        return s.batches() + s.decodeErrors() + s.unacceptedBatches() >= messages + 1;
      }, () -> "every message counted, now " + subscriber.stats());
      EventSourceStats stats = subscriber.stats(WorkerId.of("fuzzed")).orElseThrow();
      // A mutated rank names a rank the source does not have: dropped and counted, never applied.
      assertEquals(messages + 1, stats.batches() + stats.decodeErrors() + stats.unacceptedBatches(),
          stats.toString());
      assertTrue(recording.workersSeen().stream().allMatch(w -> w.equals(worker)), recording.workersSeen()
          .toString());
      assertEquals(0, stats.gaps() + stats.restarts(), stats.toString());
      assertTrue(stats.decodeErrors() > 0 && stats.batches() > 1, stats.toString());
    }
    IndexInvariants.check(index);
  }

  private static void send(org.zeromq.ZMQ.Socket socket, byte[]... frames) {
    for (int i = 0; i < frames.length; i++) {
      socket.send(frames[i], i < frames.length - 1 ? org.zeromq.ZMQ.SNDMORE : 0);
    }
  }

  static List<byte[]> corpus(SplittableRandom random) {
    List<byte[]> corpus = new ArrayList<>();
    corpus.add(Hex.bytes(Hex.VECTOR_A));
    corpus.add(Hex.bytes(Hex.VECTOR_B));
    corpus.add(Hex.bytes(Hex.VECTOR_C2));
    corpus.add(Hex.bytes("93" + Hex.TS + "93" + Hex.VECTOR_B2_STORED + Hex.VECTOR_B2_REMOVED
        + "91B0416C6C426C6F636B73436C6561726564" + "00"));
    EngineModel engine = new EngineModel(random.nextLong(), 16, 200);
    for (int i = 0; i < 30; i++) {
      List<KvEvent> events = engine.nextBatch();
      for (WireFormat format : WireFormat.values()) {
        corpus.add(KvEventCodec.encode(DecodedBatch.of(i, events, i % 3), format));
      }
    }
    return corpus;
  }

  static byte[] mutate(byte[] original, SplittableRandom random) {
    byte[] b = original.clone();
    int mutations = 1 + random.nextInt(4);
    for (int m = 0; m < mutations && b.length > 0; m++) {
      int at = random.nextInt(b.length);
      switch (random.nextInt(7)) {
        case 0: // flip a bit
          b[at] ^= (byte) (1 << random.nextInt(8));
          break;
        case 1: // an interesting byte
          b[at] = (byte) INTERESTING[random.nextInt(INTERESTING.length)];
          break;
        case 2: // truncate
          b = Arrays.copyOf(b, at);
          break;
        case 3: // a huge length after a header byte
          if (at + 5 <= b.length) {
            b[at] = (byte) (random.nextBoolean() ? 0xDD : 0xDB);
            b[at + 1] = (byte) 0x7F;
            b[at + 2] = (byte) 0xFF;
            b[at + 3] = (byte) 0xFF;
            b[at + 4] = (byte) random.nextInt(256);
          }
          break;
        case 4: // delete a byte
          byte[] shorter = new byte[b.length - 1];
          System.arraycopy(b, 0, shorter, 0, at);
          System.arraycopy(b, at + 1, shorter, at, b.length - at - 1);
          b = shorter;
          break;
        case 5: // insert a random byte
          byte[] longer = new byte[b.length + 1];
          System.arraycopy(b, 0, longer, 0, at);
          longer[at] = (byte) random.nextInt(256);
          System.arraycopy(b, at, longer, at + 1, b.length - at);
          b = longer;
          break;
        default: // random byte
          b[at] = (byte) random.nextInt(256);
      }
    }
    return b;
  }
}
