package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.KvIndexer;
import io.kvroute.PrefixMatch;
import io.kvroute.RouterPolicy;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.StorageTier;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.testkit.Await;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** The subscriber against real publishers on loopback sockets. */
class KvEventSubscriberTest {
  private static final int BLOCK = 16;
  private static final Duration WAIT = Duration.ofSeconds(20);

  private static KvEventPublisher.Builder publisher() {
    return KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0");
  }

  private static KvEventSubscriber subscriber(io.kvroute.KvEventSink sink) {
    return KvEventSubscriber.newBuilder().sink(sink).replayTimeout(Duration.ofSeconds(5)).build();
  }

  private static long batches(KvEventSubscriber subscriber, String worker) {
    return subscriber.stats(WorkerId.of(worker)).orElseThrow().batches();
  }

  private static int[] tokens(SplittableRandom random, int blocks) {
    int[] t = new int[blocks * BLOCK];
    for (int i = 0; i < t.length; i++) {
      t[i] = random.nextInt(100_000);
    }
    return t;
  }

  private static long[] engineHashes(long base, int blocks) {
    long[] h = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      h[i] = (base + i) * 0x9E3779B97F4A7C15L;
    }
    return h;
  }

  @Test
  void publisherToSubscriberToRouter_routesToTheWorkerHoldingThePrefix() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).policy(RouterPolicy.kvAware()).randomSeed(1).build();
    List<KvEventPublisher> publishers = new ArrayList<>();
    try (KvEventSubscriber subscriber = subscriber(router.eventSink())) {
      for (int i = 0; i < 3; i++) {
        KvEventPublisher p = publisher().build();
        publishers.add(p);
        router.addWorker(Worker.of(WorkerId.of("w" + i), URI.create("http://127.0.0.1:" + (9000 + i))));
        subscriber.addWorker(WorkerId.of("w" + i), p.endpoint(), p.replayEndpoint(), "", 1);
      }
      subscriber.start();
      SplittableRandom random = new SplittableRandom(7);
      int[][] prompts = {tokens(random, 6), tokens(random, 6), tokens(random, 6)};
      for (int i = 0; i < 3; i++) {
        assertTrue(publishers.get(i).awaitSubscribers(1, WAIT));
        // Worker i holds 2 + 2i blocks of prompt i.
        int blocks = 2 + 2 * i;
        int[] held = java.util.Arrays.copyOf(prompts[i], blocks * BLOCK);
        publishers.get(i).publish(List.of(BlockStored.of(engineHashes(100 * i, blocks), null, held, BLOCK)));
      }
      for (int i = 0; i < 3; i++) {
        String name = "w" + i;
        Await.until(() -> batches(subscriber, name) == 1, () -> name + " batch");
      }
      for (int i = 0; i < 3; i++) {
        try (Routing r = router.select(prompts[i])) {
          assertEquals(WorkerId.of("w" + i), r.workerId(), "prompt " + i);
          assertEquals(2 + 2 * i, r.matchedBlocks());
        }
      }
      EventSourceStats stats = subscriber.stats(WorkerId.of("w2")).orElseThrow();
      assertEquals(List.of(1L, 1L, 6L, 0L, 0L, 0L), List.of(stats.batches(), stats.events(), stats.storedBlocks(),
          stats.gaps(), stats.purges(), stats.decodeErrors()));
    } finally {
      publishers.forEach(KvEventPublisher::close);
    }
  }

  /** Drops batches on purpose at several points; replay must restore exactly the stream a lossless run sees. */
  @Test
  void droppedBatches_areReplayed_andTheIndexEqualsALosslessRun() throws InterruptedException {
    KvIndexer lossless = KvIndexer.newBuilder().blockSize(BLOCK).build();
    KvIndexer replayed = KvIndexer.newBuilder().blockSize(BLOCK).build();
    RecordingSink recording = new RecordingSink(replayed);
    WorkerId worker = WorkerId.of("engine");
    EngineModel engine = new EngineModel(42, BLOCK, 60);
    List<KvEvent> all = new ArrayList<>();
    try (KvEventPublisher p = publisher().build(); KvEventSubscriber subscriber = subscriber(recording)) {
      subscriber.addWorker(WorkerId.of("engine"), p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      int total = 300;
      for (int i = 0; i < total; i++) {
        if (i == 20 || i == 150) {
          p.dropNext(1);
        } else if (i == 60 || i == 200) {
          p.dropNext(7);
        }
        List<KvEvent> batch = engine.nextBatch();
        all.addAll(batch);
        lossless.applyAll(worker, batch);
        p.publish(batch);
      }
      Await.until(() -> batches(subscriber, "engine") == total, () -> "all batches, now " + subscriber.stats());
      EventSourceStats stats = subscriber.stats(WorkerId.of("engine")).orElseThrow();
      // A replay answers with everything from the first lost batch on, so it may also fill later drops.
      assertTrue(stats.gaps() >= 1 && stats.gaps() <= 4, stats.toString());
      assertEquals(stats.gaps(), stats.replays());
      assertTrue(stats.replayedBatches() >= 16, stats.toString());
      assertEquals(0, stats.purges());
      assertEquals(0, recording.resets(worker));
    }
    assertEquals(all, recording.events(worker));
    assertEquals(lossless.stats().entriesPerWorker(), replayed.stats().entriesPerWorker());
    for (int[] prompt : engine.prompts()) {
      long[] hashes = lossless.hasher().sequenceHashes(prompt);
      assertEquals(lossless.findMatches(hashes), replayed.findMatches(hashes));
    }
  }

  @Test
  void initialConnect_afterTheEnginePublished_replaysFromZero() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    WorkerId worker = WorkerId.of("late");
    try (KvEventPublisher p = publisher().build(); KvEventSubscriber subscriber = subscriber(recording)) {
      List<KvEvent> all = new ArrayList<>();
      for (int i = 0; i < 5; i++) { // nobody listens: these are only in the ring
        List<KvEvent> batch = List.of(BlockRemoved.of(i));
        all.addAll(batch);
        p.publish(batch);
      }
      subscriber.addWorker(WorkerId.of("late"), p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      all.add(BlockRemoved.of(5));
      p.publish(List.of(BlockRemoved.of(5)));
      Await.until(() -> batches(subscriber, "late") == 6, () -> "6 batches, now " + subscriber.stats());
      assertEquals(all, recording.events(worker));
      assertEquals(0, subscriber.stats(WorkerId.of("late")).orElseThrow().gaps());
      assertEquals(1, subscriber.stats(WorkerId.of("late")).orElseThrow().replays());
    }
  }

  @Test
  void replayTooOld_purgesAndRebuildsFromWhatTheRingHolds() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    WorkerId worker = WorkerId.of("old");
    try (KvEventPublisher p = publisher().bufferSteps(2).replayWithTopic(false).build();
        KvEventSubscriber subscriber = subscriber(recording)) {
      subscriber.addWorker(WorkerId.of("old"), p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockRemoved.of(0)));
      Await.until(() -> batches(subscriber, "old") == 1, () -> "first batch");
      p.dropNext(5); // batches 1..5 lost; the ring keeps only the last 2
      for (int i = 1; i <= 6; i++) {
        p.publish(List.of(BlockRemoved.of(i)));
      }
      Await.until(() -> batches(subscriber, "old") == 3, () -> "rebuild, now " + subscriber.stats());
      assertEquals(List.of(BlockRemoved.of(5), BlockRemoved.of(6)), recording.events(worker));
      EventSourceStats stats = subscriber.stats(WorkerId.of("old")).orElseThrow();
      assertEquals(1, stats.gaps());
      assertEquals(1, stats.purges());
      assertEquals(1, recording.resets(worker));
    }
  }

  @Test
  void gapWithoutReplayEndpoint_purgesTheWorker_andItRebuildsFromNewEvents() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    RecordingSink recording = new RecordingSink(index);
    WorkerId worker = WorkerId.of("noreplay");
    SplittableRandom random = new SplittableRandom(3);
    int[] first = tokens(random, 3);
    int[] lost = tokens(random, 2);
    int[] after = tokens(random, 2);
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build(); KvEventSubscriber subscriber =
        subscriber(recording)) {
      subscriber.addWorker(WorkerId.of("noreplay"), p.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(engineHashes(1, 3), null, first, BLOCK)));
      Await.until(() -> index.entriesOf(worker) == 3, () -> "first store");
      p.dropNext(1);
      p.publish(List.of(BlockStored.of(engineHashes(10, 2), null, lost, BLOCK)));
      p.publish(List.of(BlockStored.of(engineHashes(20, 2), null, after, BLOCK)));
      Await.until(() -> batches(subscriber, "noreplay") == 2, () -> "second batch");
      assertEquals(2, index.entriesOf(worker));
      assertTrue(index.findMatches(index.hasher().sequenceHashes(first)).isEmpty());
      assertEquals(new PrefixMatch(2, 2), index.findMatches(index.hasher().sequenceHashes(after)).get(worker));
      EventSourceStats stats = subscriber.stats(WorkerId.of("noreplay")).orElseThrow();
      assertEquals(1, stats.gaps());
      assertEquals(0, stats.replays());
      assertEquals(1, stats.purges());
    }
  }

  @Test
  void replayWithoutAnswer_failsAfterARetry_purges_andCoolsDown() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    WorkerId worker = WorkerId.of("silent");
    List<String> failures = new CopyOnWriteArrayList<>();
    EventSourceListener listener = new EventSourceListener() {
      @Override
      public void onReplayFailed(WorkerId w, String reason) {
        failures.add(reason);
      }
    };
    String nobody = "tcp://127.0.0.1:" + freePort(); // a replay endpoint where nothing listens
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(recording).listener(listener)
            .replayTimeout(Duration.ofMillis(300)).replayCooldown(Duration.ofHours(1)).build()) {
      subscriber.addWorker(WorkerId.of("silent"), p.endpoint(), nobody, "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockRemoved.of(0)));
      Await.until(() -> batches(subscriber, "silent") == 1, () -> "first batch");
      p.dropNext(1);
      p.publish(List.of(BlockRemoved.of(1)));
      p.publish(List.of(BlockRemoved.of(2)));
      p.publish(List.of(BlockRemoved.of(3)));
      Await.until(() -> batches(subscriber, "silent") == 3, () -> "after the failed replay " + subscriber.stats());
      assertEquals(List.of(BlockRemoved.of(2), BlockRemoved.of(3)), recording.events(worker));
      assertEquals(1, failures.size(), failures.toString());
      // During the cooldown a gap purges at once, without asking for a replay.
      p.dropNext(1);
      p.publish(List.of(BlockRemoved.of(4)));
      p.publish(List.of(BlockRemoved.of(5)));
      Await.until(() -> batches(subscriber, "silent") == 4, () -> "after the second gap " + subscriber.stats());
      assertEquals(List.of(BlockRemoved.of(5)), recording.events(worker));
      EventSourceStats stats = subscriber.stats(WorkerId.of("silent")).orElseThrow();
      assertEquals(List.of(2L, 1L, 1L, 2L), List.of(stats.gaps(), stats.replays(), stats.replayFailures(),
          stats.purges()));
      assertEquals(2, recording.resets(worker));
    }
  }

  /** An engine restarts (sequence back to 0) with a smaller cache: its old blocks must leave the index. */
  @Test
  void publisherRestart_withASmallerCache_removesStaleBlocks() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("restarting");
    List<EventSourceListener.PurgeReason> purges = new CopyOnWriteArrayList<>();
    EventSourceListener listener = new EventSourceListener() {
      @Override
      public void onPurged(WorkerId w, PurgeReason reason) {
        purges.add(reason);
      }
    };
    SplittableRandom random = new SplittableRandom(11);
    List<int[]> before = new ArrayList<>();
    try (KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index).listener(listener).build()) {
      String endpoint;
      String replay;
      try (KvEventPublisher first = publisher().build()) {
        endpoint = first.endpoint();
        replay = first.replayEndpoint();
        subscriber.addWorker(WorkerId.of("restarting"), endpoint, replay, "", 1);
        subscriber.start();
        assertTrue(first.awaitSubscribers(1, WAIT));
        for (int i = 0; i < 30; i++) {
          int[] prompt = tokens(random, 4);
          before.add(prompt);
          first.publish(List.of(BlockStored.of(engineHashes(1000 + 10 * i, 4), null, prompt, BLOCK)));
        }
        Await.until(() -> index.entriesOf(worker) == 120, () -> "120 entries, now " + index.entriesOf(worker));
      }
      int[] fresh = tokens(random, 2);
      try (KvEventPublisher second = publisher().endpoint(endpoint).replayEndpoint(replay).build()) {
        assertTrue(second.awaitSubscribers(1, WAIT));
        second.publish(List.of(BlockStored.of(engineHashes(5, 2), null, fresh, BLOCK)));
        second.publish(List.of(BlockRemoved.of(engineHashes(5, 2)[1])));
        Await.until(() -> subscriber.stats(WorkerId.of("restarting")).orElseThrow().restarts() == 1
            && index.entriesOf(worker) == 1, () -> "restart, now " + subscriber.stats());
      }
      assertEquals(List.of(EventSourceListener.PurgeReason.RESTART), purges);
      assertTrue(subscriber.stats(WorkerId.of("restarting")).orElseThrow().reconnects() >= 1, "the lost connection was renewed");
      for (int[] prompt : before) {
        assertFalse(index.findMatches(index.hasher().sequenceHashes(prompt)).containsKey(worker));
      }
      assertEquals(new PrefixMatch(1, 1), index.findMatches(index.hasher().sequenceHashes(fresh)).get(worker));
    }
  }

  @Test
  void dataParallelRanks_areReadFromOffsetPorts_andReportedUnderTheBatchRank() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    for (int attempt = 0; ; attempt++) {
      int base = freePort();
      String endpoint = "tcp://127.0.0.1:" + base;
      KvEventPublisher rank0 = null;
      KvEventPublisher rank1 = null;
      try {
        rank0 = KvEventPublisher.newBuilder().endpoint(endpoint).build();
        rank1 = KvEventPublisher.newBuilder().endpoint(endpoint).dataParallelRank(1).build();
      } catch (RuntimeException e) { // the port next to a free one was taken: try another
        if (rank0 != null) {
          rank0.close();
        }
        if (attempt < 5) {
          continue;
        }
        throw e;
      }
      try (KvEventPublisher p0 = rank0; KvEventPublisher p1 = rank1;
          KvEventSubscriber subscriber = subscriber(recording)) {
        assertEquals("tcp://127.0.0.1:" + (base + 1), p1.endpoint());
        subscriber.addWorker(WorkerId.of("dp"), endpoint, null, "", 2);
        subscriber.start();
        assertTrue(p0.awaitSubscribers(1, WAIT));
        assertTrue(p1.awaitSubscribers(1, WAIT));
        p0.publish(List.of(BlockRemoved.of(100)));
        p1.publish(List.of(BlockRemoved.of(101)));
        Await.until(() -> batches(subscriber, "dp") == 2, () -> "both ranks");
        assertEquals(List.of(BlockRemoved.of(100)), recording.events(new WorkerId("dp", 0)));
        assertEquals(List.of(BlockRemoved.of(101)), recording.events(new WorkerId("dp", 1)));
      }
      return;
    }
  }

  private static int freePort() {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void malformedMessages_areCountedAndDropped_andTheSubscriberCarriesOn() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    List<String> errors = new CopyOnWriteArrayList<>();
    EventSourceListener listener = new EventSourceListener() {
      @Override
      public void onDecodeError(WorkerId workerName, String reason) {
        errors.add(reason);
      }
    };
    try (ZContext ctx = new ZContext(1);
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(recording).listener(listener).build()) {
      ZMQ.Socket pub = ctx.createSocket(SocketType.XPUB);
      pub.bind("tcp://127.0.0.1:*");
      subscriber.addWorker(WorkerId.of("raw"), pub.getLastEndpoint(), null, "", 1);
      subscriber.start();
      pub.setReceiveTimeOut(20_000);
      assertEquals(1, pub.recv(0)[0], "subscription");
      byte[] empty = new byte[0];
      send(pub, empty, KvEventPublisher.seqBytes(0)); // 2 frames
      send(pub, empty, KvEventPublisher.seqBytes(0), Hex.bytes(Hex.VECTOR_C2), empty); // 4 frames
      send(pub, empty, new byte[3], Hex.bytes(Hex.VECTOR_C2)); // short sequence frame
      send(pub, empty, KvEventPublisher.seqBytes(0), Hex.bytes("C1")); // not msgpack
      send(pub, empty, KvEventPublisher.seqBytes(1), Hex.bytes("93" + Hex.TS + "DDFFFFFFF0")); // huge array
      send(pub, empty, KvEventPublisher.seqBytes(2), Hex.bytes("93" + Hex.TS + "91DB7FFFFFFF41")); // huge string
      send(pub, empty, KvEventPublisher.seqBytes(3), Hex.bytes(Hex.VECTOR_C2));
      Await.until(() -> batches(subscriber, "raw") == 1, () -> "the valid batch");
      EventSourceStats stats = subscriber.stats(WorkerId.of("raw")).orElseThrow();
      assertEquals(6, stats.decodeErrors(), errors.toString());
      assertEquals(0, stats.gaps());
      assertEquals(List.of(BlockStored.of(new long[] {Hex.H2}, 5L, new int[] {1, 2}, 2)),
          recording.events(WorkerId.of("raw")));
    }
  }

  private static void send(ZMQ.Socket socket, byte[]... frames) {
    for (int i = 0; i < frames.length; i++) {
      socket.send(frames[i], i < frames.length - 1 ? ZMQ.SNDMORE : 0);
    }
  }

  @Test
  void messagesAboveTheSizeLimit_neverReachTheSink_andTheStreamResumes() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    WorkerId worker = WorkerId.of("capped");
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build(); KvEventSubscriber subscriber =
        KvEventSubscriber.newBuilder().sink(recording).maxMessageSize(1_024).build()) {
      subscriber.addWorker(WorkerId.of("capped"), p.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      long[] many = new long[400]; // about 3.6 KB on the wire
      for (int i = 0; i < many.length; i++) {
        many[i] = -1L - i;
      }
      p.publish(List.of(BlockRemoved.of(many)));
      // ZeroMQ drops the connection; the subscriber renews it. Publish small batches until they flow again.
      Await.until(() -> {
        if (!recording.events(worker).isEmpty()) {
          return true;
        }
        p.publish(List.of(BlockRemoved.of(1)));
        return false;
      }, () -> "a small batch after the oversized one, now " + subscriber.stats());
      assertTrue(recording.events(worker).stream().allMatch(e -> e.equals(BlockRemoved.of(1))));
      assertTrue(subscriber.stats(WorkerId.of("capped")).orElseThrow().reconnects() >= 1);
    }
  }

  @Test
  void nonPrefixCacheGroups_areDropped_includingTheirRemovals() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build(); KvEventSubscriber subscriber =
        subscriber(recording)) {
      subscriber.addWorker(WorkerId.of("hybrid"), p.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      // Group 0 full attention, group 1 sliding window, same engine hash in both (as with hybrid allocators).
      BlockStored full = new BlockStored(new long[] {9}, null, new int[] {1, 2}, 2, null, StorageTier.GPU,
          "full_attention", null);
      BlockStored window = new BlockStored(new long[] {9}, null, new int[] {1, 2}, 2, null, StorageTier.GPU,
          "sliding_window", null);
      MsgpackWriter w = new MsgpackWriter(128);
      w.writeArrayHeader(3);
      w.writeDouble(1);
      w.writeArrayHeader(3);
      writeStoredArray(w, full, 0);
      writeStoredArray(w, window, 1);
      w.writeArrayHeader(4); // removal from the sliding-window group only
      w.writeString("BlockRemoved");
      w.writeArrayHeader(1);
      w.writeInt(9);
      w.writeString("GPU");
      w.writeInt(1);
      w.writeInt(0);
      p.publishPayload(w.toByteArray());
      Await.until(() -> batches(subscriber, "hybrid") == 1, () -> "batch");
      assertEquals(List.of(full), recording.events(WorkerId.of("hybrid")));
      assertEquals(2, subscriber.stats(WorkerId.of("hybrid")).orElseThrow().droppedEvents());
    }
  }

  private static void writeStoredArray(MsgpackWriter w, BlockStored s, int group) {
    w.writeArrayHeader(11);
    w.writeString("BlockStored");
    w.writeArrayHeader(1);
    w.writeUnsigned(s.blockHashes()[0]);
    w.writeNil();
    w.writeArrayHeader(s.tokenIds().length);
    for (int t : s.tokenIds()) {
      w.writeInt(t);
    }
    w.writeInt(s.blockSize());
    w.writeNil();
    w.writeString("GPU");
    w.writeNil();
    w.writeNil();
    w.writeInt(group);
    w.writeString(s.cacheSpecKind());
  }

  @Test
  void manyWorkers_shareOneIoThread() throws InterruptedException {
    int workers = 256;
    RecordingSink recording = new RecordingSink();
    List<KvEventPublisher> publishers = new ArrayList<>();
    try (ZContext shared = new ZContext(1)) {
      for (int i = 0; i < workers; i++) {
        publishers.add(KvEventPublisher.newBuilder().context(shared).highWaterMark(1000).build());
      }
      int threadsBefore = Thread.activeCount();
      try (KvEventSubscriber subscriber = subscriber(recording)) {
        for (int i = 0; i < workers; i++) {
          subscriber.addWorker(WorkerId.of("w" + i), publishers.get(i).endpoint(), null, "", 1);
        }
        subscriber.start();
        for (int i = 0; i < workers; i++) {
          assertTrue(publishers.get(i).awaitSubscribers(1, WAIT), "worker " + i);
          publishers.get(i).publish(List.of(BlockRemoved.of(i)));
        }
        Await.until(() -> recording.workers() == workers, () -> recording.workers() + " workers");
        long subscriberThreads = Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().startsWith("kvroute-zmq-subscriber")).count();
        assertEquals(1, subscriberThreads);
        assertTrue(Thread.activeCount() - threadsBefore <= 4, "threads " + threadsBefore + " -> "
            + Thread.activeCount());
        for (int i = 0; i < workers; i++) {
          assertEquals(List.of(BlockRemoved.of(i)), recording.events(WorkerId.of("w" + i)));
        }
      } finally {
        publishers.forEach(KvEventPublisher::close);
      }
    }
  }

  @Test
  void curve_encryptsAndAuthenticatesTheEngine() throws InterruptedException {
    CurveKeyPair server = CurveKeyPair.generate();
    CurveKeyPair impostor = CurveKeyPair.generate();
    RecordingSink recording = new RecordingSink();
    try (KvEventPublisher good = publisher().curveServerKeys(server).build();
        KvEventPublisher wrongKey = KvEventPublisher.newBuilder().curveServerKeys(impostor).build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(recording)
            .curveClientKeys(CurveKeyPair.generate()).build()) {
      subscriber.addWorker(EventSourceConfig.of(WorkerId.of("secure"), good.endpoint())
          .withReplayEndpoint(good.replayEndpoint()).withServerPublicKey(server.publicKey()));
      // Expects the engine's key `server`, but the endpoint holds the impostor's key pair.
      subscriber.addWorker(EventSourceConfig.of(WorkerId.of("spoofed"), wrongKey.endpoint())
          .withServerPublicKey(server.publicKey()));
      subscriber.start();
      assertTrue(good.awaitSubscribers(1, WAIT));
      good.publish(List.of(BlockRemoved.of(1)));
      good.dropNext(1);
      good.publish(List.of(BlockRemoved.of(2)));
      good.publish(List.of(BlockRemoved.of(3)));
      wrongKey.publish(List.of(BlockRemoved.of(4)));
      Await.until(() -> batches(subscriber, "secure") == 3, () -> "secure batches, now " + subscriber.stats());
      assertEquals(List.of(BlockRemoved.of(1), BlockRemoved.of(2), BlockRemoved.of(3)),
          recording.events(WorkerId.of("secure")));
      assertTrue(subscriber.stats(WorkerId.of("secure")).orElseThrow().replayedBatches() >= 1, "replay also runs over CURVE");
      assertEquals(0, wrongKey.subscriptions());
      assertEquals(0, batches(subscriber, "spoofed"));
    }
  }

  @Test
  void lifecycle_validation_andRemoval() throws InterruptedException {
    RecordingSink recording = new RecordingSink();
    assertThrows(IllegalStateException.class, () -> KvEventSubscriber.newBuilder().build());
    KvEventSubscriber never = subscriber(recording);
    never.close(); // never started
    assertThrows(IllegalStateException.class, never::start);
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build()) {
      KvEventSubscriber subscriber = subscriber(recording);
      subscriber.addWorker(WorkerId.of("a"), p.endpoint(), null, "", 1);
      assertThrows(IllegalArgumentException.class, () -> subscriber.addWorker(WorkerId.of("a"), p.endpoint(), null, "", 1));
      assertThrows(IllegalArgumentException.class, () -> subscriber.addWorker(WorkerId.of("b"), "http://x", null, "", 1));
      assertThrows(IllegalArgumentException.class, () -> subscriber.addWorker(WorkerId.of("b"), p.endpoint(), null, "", 0));
      assertTrue(assertThrows(IllegalArgumentException.class,
          () -> subscriber.addWorker(WorkerId.of("b"), "tcp://*:5557", null, "", 1)).getMessage().contains("wildcard"));
      assertThrows(IllegalArgumentException.class, () -> subscriber.addWorker(WorkerId.of(" "), p.endpoint(), null, "", 1));
      assertThrows(IllegalArgumentException.class,
          () -> subscriber.addWorker(EventSourceConfig.of(WorkerId.of("b"), "ipc:///tmp/x").withDataParallelRanks(2)));
      subscriber.start();
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockRemoved.of(1)));
      Await.until(() -> batches(subscriber, "a") == 1, () -> "batch");
      assertTrue(subscriber.removeWorker(WorkerId.of("a")));
      assertFalse(subscriber.removeWorker(WorkerId.of("a")));
      Await.until(() -> recording.resets(WorkerId.of("a")) == 1, () -> "purge on removal");
      assertEquals(List.of(), subscriber.workers());
      Await.until(() -> p.subscriptions() == 0, () -> "unsubscribed");
      subscriber.close();
      subscriber.close();
      assertThrows(IllegalStateException.class, () -> subscriber.addWorker(WorkerId.of("c"), p.endpoint(), null, "", 1));
      assertFalse(Thread.getAllStackTraces().keySet().stream()
          .anyMatch(t -> t.getName().equals("kvroute-zmq-subscriber") && t.isAlive()));
    }
  }
}
