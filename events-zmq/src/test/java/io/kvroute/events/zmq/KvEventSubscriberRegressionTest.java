package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.EventStreamState;
import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.KvIndexer;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.testkit.Await;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** Issue 9's failures, each on real loopback sockets; every test here fails on the subscriber before the fix. */
class KvEventSubscriberRegressionTest {
  private static final int BLOCK = 16;
  private static final Duration WAIT = Duration.ofSeconds(20);

  private static int[] tokens(int from, int blocks) {
    return IntStream.range(from, from + blocks * BLOCK).toArray();
  }

  private static long[] hashes(long base, int blocks) {
    long[] h = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      h[i] = (base + i) * 0x9E3779B97F4A7C15L;
    }
    return h;
  }

  private static EventSourceStats stats(KvEventSubscriber s, String worker) {
    return s.stats(WorkerId.of(worker)).orElseThrow();
  }

  private static void publishOneBlock(KvEventPublisher publisher, int i) {
    publisher.publish(List.of(BlockStored.of(hashes(50_000 + 10 * i, 1), null, tokens(500_000 + 100 * i, 1), BLOCK)));
  }

  /** Item 1: the live copy of a batch that a replay already applied arrives late; it is a duplicate. */
  @Test
  void lateLiveCopyOfAReplayedBatch_isADuplicate_notARestart() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("engine");
    try (KvEventPublisher p = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index).build()) {
      subscriber.addWorker(worker, p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 2), null, tokens(0, 2), BLOCK)));
      Await.until(() -> stats(subscriber, "engine").batches() == 1, () -> "first batch");
      p.dropNext(3);
      for (int i = 1; i <= 4; i++) {
        p.publish(List.of(BlockStored.of(hashes(10 * i, 2), null, tokens(100 * i, 2), BLOCK)));
      }
      Await.until(() -> stats(subscriber, "engine").batches() == 5, () -> "replayed, " + subscriber.stats());
      for (long seq = 1; seq <= 3; seq++) {
        assertTrue(p.resendLive(seq));
      }
      p.publish(List.of(BlockRemoved.of(-1)));
      Await.until(() -> stats(subscriber, "engine").batches() == 6, () -> "last batch, " + subscriber.stats());
      EventSourceStats stats = stats(subscriber, "engine");
      assertEquals(0, stats.restarts(), stats.toString());
      assertEquals(0, stats.purges(), stats.toString());
      assertTrue(stats.duplicates() >= 3, stats.toString());
      assertEquals(10, index.entriesOf(worker), "all five stores of 2 blocks held");
    }
  }

  /**
   * Item 6: blocks published before {@code router.addWorker} are held, then applied once the worker is registered;
   * they are not counted as stored while the router would have dropped them.
   */
  @Test
  void eventsBeforeTheWorkerIsRegistered_areHeld_andAppliedOnRegistration() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("early");
    int[] prompt = tokens(0, 3);
    try (KvEventPublisher p = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink())
            .unacceptedHold(Duration.ofSeconds(30)).build()) {
      subscriber.addWorker(worker, p.endpoint(), null, "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 3), null, prompt, BLOCK)));
      Await.until(() -> subscriber.health().get(0).lastSequence() == 0, () -> "received");
      assertEquals(0, stats(subscriber, "early").storedBlocks(), "not stored while the router does not know it");
      router.addWorker(Worker.of(worker, URI.create("http://127.0.0.1:1")));
      Await.until(() -> stats(subscriber, "early").storedBlocks() == 3, () -> "applied, " + subscriber.stats());
      try (Routing r = router.select(prompt)) {
        assertEquals(3, r.matchedBlocks());
      }
    }
  }

  /** Item 6: held too long, such events are dropped loudly and counted, and the engine's ring is replayed later. */
  @Test
  void eventsOfAnUnregisteredWorker_heldTooLong_areDroppedAndCounted_thenReplayedOnRegistration() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("late");
    List<String> dropped = new CopyOnWriteArrayList<>();
    EventSourceListener listener = new EventSourceListener() {
      @Override
      public void onEventsDropped(WorkerId w, int events, String reason) {
        dropped.add(w + ": " + reason);
      }
    };
    int[] first = tokens(0, 2);
    int[] second = tokens(1000, 2);
    try (KvEventPublisher p = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).listener(listener)
            .unacceptedHold(Duration.ofMillis(200)).build()) {
      subscriber.addWorker(worker, p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 2), null, first, BLOCK)));
      Await.until(() -> stats(subscriber, "late").unacceptedBatches() == 1 && !dropped.isEmpty(),
          () -> "dropped, " + subscriber.stats());
      EventSourceStats stats = stats(subscriber, "late");
      assertEquals(0, stats.storedBlocks(), stats.toString());
      assertEquals(1, stats.droppedEvents(), stats.toString());
      assertEquals(1, dropped.size(), dropped.toString());
      router.addWorker(Worker.of(worker, URI.create("http://127.0.0.1:1")));
      p.publish(List.of(BlockStored.of(hashes(10, 2), null, second, BLOCK)));
      Await.until(() -> stats(subscriber, "late").storedBlocks() == 4, () -> "replayed, " + subscriber.stats());
      for (int[] prompt : List.of(first, second)) {
        try (Routing r = router.select(prompt)) {
          assertEquals(2, r.matchedBlocks());
        }
      }
    }
  }

  /** Item 6: a payload naming a rank its source does not have creates no slot in a bare index. */
  @Test
  void batchNamingAnUnknownRank_isDropped_andCreatesNoSlotInABareIndex() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    try (ZContext ctx = new ZContext(1);
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index).build()) {
      ZMQ.Socket pub = ctx.createSocket(SocketType.XPUB);
      pub.bind("tcp://127.0.0.1:*");
      subscriber.addWorker(WorkerId.of("one-rank"), pub.getLastEndpoint(), null, "", 1);
      subscriber.start();
      pub.setReceiveTimeOut((int) WAIT.toMillis());
      assertEquals(1, pub.recv(0)[0], "subscription");
      for (int rank : new int[] {7, 65_535, 0}) {
        byte[] payload = KvEventCodec.encode(1.0, List.of(BlockStored.of(hashes(rank, 1), null, tokens(rank, 1),
            BLOCK)), rank, WireFormat.MAP);
        pub.sendMore(new byte[0]);
        pub.sendMore(KvEventPublisher.seqBytes(rank == 0 ? 2 : rank == 7 ? 0 : 1));
        pub.send(payload, 0);
      }
      Await.until(() -> stats(subscriber, "one-rank").batches() == 1, () -> "rank 0, " + subscriber.stats());
      assertEquals(List.of(WorkerId.of("one-rank")), index.workers());
      assertEquals(2, stats(subscriber, "one-rank").unacceptedBatches());
    }
  }

  /** Item 7: with an allow-list, a subscriber whose key is not listed reads neither the stream nor the replay. */
  @Test
  void curveAllowList_admitsListedSubscribersOnly_liveAndReplay() throws InterruptedException {
    CurveKeyPair server = CurveKeyPair.generate();
    CurveKeyPair allowed = CurveKeyPair.generate();
    CurveKeyPair stranger = CurveKeyPair.generate();
    KvIndexer good = KvIndexer.newBuilder().blockSize(BLOCK).build();
    KvIndexer bad = KvIndexer.newBuilder().blockSize(BLOCK).build();
    try (KvEventPublisher p = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0")
            .curveServerKeys(server).curveAllowedClients(Set.of(allowed.publicKey())).build();
        KvEventSubscriber in = KvEventSubscriber.newBuilder().sink(good).curveClientKeys(allowed).build();
        KvEventSubscriber out = KvEventSubscriber.newBuilder().sink(bad).curveClientKeys(stranger).build()) {
      EventSourceConfig source = EventSourceConfig.of(WorkerId.of("secure"), p.endpoint())
          .withReplayEndpoint(p.replayEndpoint()).withServerPublicKey(server.publicKey());
      in.addWorker(source);
      out.addWorker(source);
      in.start();
      out.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 1), null, tokens(0, 1), BLOCK)));
      p.dropNext(1);
      p.publish(List.of(BlockStored.of(hashes(5, 1), null, tokens(50, 1), BLOCK)));
      p.publish(List.of(BlockStored.of(hashes(9, 1), null, tokens(90, 1), BLOCK)));
      Await.until(() -> stats(in, "secure").batches() == 3, () -> "listed subscriber, " + in.stats());
      assertTrue(stats(in, "secure").replayedBatches() >= 1, "the replay also admits it");
      assertEquals(1, p.subscriptions(), "the stranger never subscribed");
      assertEquals(0, stats(out, "secure").batches());
      assertEquals(0, bad.entriesOf(WorkerId.of("secure")));
    }
  }

  /** Item 7: in bind mode engines connect out to the subscriber; with an allow-list only listed engines get in. */
  @Test
  void bindMode_receivesFromEnginesThatConnectOut_andItsAllowListRefusesOthers() throws Exception {
    CurveKeyPair subscriberKeys = CurveKeyPair.generate();
    CurveKeyPair engineKeys = CurveKeyPair.generate();
    CurveKeyPair rogueKeys = CurveKeyPair.generate();
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    String endpoint = "tcp://127.0.0.1:" + freePort();
    WorkerId worker = WorkerId.of("outbound");
    try (ZContext ctx = new ZContext(1);
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index).curveServerKeys(subscriberKeys)
            .curveAllowedClients(Set.of(engineKeys.publicKey())).build()) {
      subscriber.addWorker(EventSourceConfig.of(worker, endpoint).withBind(true));
      subscriber.start();
      ZMQ.Socket engine = connectOut(ctx, endpoint, subscriberKeys, engineKeys);
      ZMQ.Socket rogue = connectOut(ctx, endpoint, subscriberKeys, rogueKeys);
      long deadline = System.nanoTime() + WAIT.toNanos();
      long seq = 0;
      while (stats(subscriber, "outbound").batches() == 0 && System.nanoTime() < deadline) {
        // PUB drops messages until the connection is up: keep publishing the same first batch.
        send(rogue, 0, BlockStored.of(hashes(900, 1), null, tokens(900, 1), BLOCK));
        send(engine, seq, BlockStored.of(hashes(0, 1), null, tokens(0, 1), BLOCK));
        Thread.sleep(50);
      }
      assertTrue(stats(subscriber, "outbound").batches() >= 1, subscriber.stats().toString());
      assertEquals(1, index.entriesOf(worker), "the listed engine's block, none of the rogue's");
    }
  }

  private static ZMQ.Socket connectOut(ZContext ctx, String endpoint, CurveKeyPair server, CurveKeyPair client) {
    ZMQ.Socket pub = ctx.createSocket(SocketType.PUB);
    pub.setCurveServerKey(ZMQ.Curve.z85Decode(server.publicKey()));
    pub.setCurvePublicKey(ZMQ.Curve.z85Decode(client.publicKey()));
    pub.setCurveSecretKey(ZMQ.Curve.z85Decode(client.secretKey()));
    pub.connect(endpoint);
    return pub;
  }

  private static void send(ZMQ.Socket pub, long seq, KvEvent event) {
    pub.sendMore(new byte[0]);
    pub.sendMore(KvEventPublisher.seqBytes(seq));
    pub.send(KvEventCodec.encode(1.0, List.of(event), 0, WireFormat.MAP), 0);
  }

  private static int freePort() throws java.io.IOException {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /**
   * Item 8, end to end: a vLLM batch whose block 0 carries {@code cache_salt} in its extra keys matches only requests
   * with the same salt.
   */
  @Test
  void saltedVllmBlocks_matchOnlyRequestsWithTheSameSalt() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("salted");
    router.addWorker(Worker.of(worker, URI.create("http://127.0.0.1:1")));
    int[] prompt = tokens(0, 2);
    try (ZContext ctx = new ZContext(1);
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).build()) {
      ZMQ.Socket pub = ctx.createSocket(SocketType.XPUB);
      pub.bind("tcp://127.0.0.1:*");
      subscriber.addWorker(worker, pub.getLastEndpoint(), null, "", 1);
      subscriber.start();
      pub.setReceiveTimeOut((int) WAIT.toMillis());
      assertEquals(1, pub.recv(0)[0], "subscription");
      pub.sendMore(new byte[0]);
      pub.sendMore(KvEventPublisher.seqBytes(0));
      pub.send(vllmSaltedStore(prompt, "tenant-a"), 0);
      Await.until(() -> stats(subscriber, "salted").storedBlocks() == 2, () -> "applied, " + subscriber.stats());
      try (Routing salted = router.select(RouteRequest.newBuilder(prompt).cacheSalt("tenant-a").build());
          Routing other = router.select(RouteRequest.newBuilder(prompt).cacheSalt("tenant-b").build());
          Routing plain = router.select(prompt)) {
        assertEquals(2, salted.matchedBlocks());
        assertEquals(0, other.matchedBlocks());
        assertEquals(0, plain.matchedBlocks());
      }
    }
  }

  /** vLLM's map-format BlockStored as the GPU path emits it for a salted request without LoRA or images. */
  private static byte[] vllmSaltedStore(int[] tokens, String salt) {
    MsgpackWriter w = new MsgpackWriter(512);
    w.writeArrayHeader(3);
    w.writeDouble(1_700_000_000.0);
    w.writeArrayHeader(1);
    w.writeMapHeader(11);
    w.writeString("type");
    w.writeString("BlockStored");
    w.writeString("block_hashes");
    w.writeArrayHeader(2);
    w.writeUnsigned(0x0123456789ABCDEFL);
    w.writeUnsigned(0xFEDCBA9876543210L);
    w.writeString("parent_block_hash");
    w.writeNil();
    w.writeString("token_ids");
    w.writeArrayHeader(tokens.length);
    for (int t : tokens) {
      w.writeInt(t);
    }
    w.writeString("block_size");
    w.writeInt(BLOCK);
    w.writeString("lora_id");
    w.writeNil();
    w.writeString("medium");
    w.writeString("GPU");
    w.writeString("lora_name");
    w.writeNil();
    w.writeString("extra_keys");
    w.writeArrayHeader(2);
    w.writeArrayHeader(1); // block 0: (cache_salt,)
    w.writeString(salt);
    w.writeNil(); // block 1: no extra keys
    w.writeString("group_idx");
    w.writeInt(0);
    w.writeString("kv_cache_spec_kind");
    w.writeString("full_attention");
    w.writeInt(0);
    return w.toByteArray();
  }

  /** Issue 12 and the health model: one registration, in the router; the subscriber follows and reports states. */
  @Test
  void subscriberFollowsTheRegistry_andReportsItsStreamStates() throws InterruptedException {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("registered");
    List<EventStreamState> states = new CopyOnWriteArrayList<>();
    EventSourceListener listener = new EventSourceListener() {
      @Override
      public void onStreamState(WorkerId w, EventStreamState state) {
        states.add(state);
      }
    };
    int[] prompt = tokens(0, 2);
    try (KvEventPublisher p = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().router(router).listener(listener).build()) {
      subscriber.start();
      assertEquals(List.of(), subscriber.workers());
      router.addWorker(Worker.newBuilder(worker).endpoint(Worker.HTTP, URI.create("http://127.0.0.1:1"))
          .endpoint(KvEventSubscriber.EVENTS_ENDPOINT, URI.create(p.endpoint()))
          .endpoint(KvEventSubscriber.REPLAY_ENDPOINT, URI.create(p.replayEndpoint())).build());
      router.addWorker(Worker.of(WorkerId.of("no-events"), URI.create("http://127.0.0.1:2")));
      assertEquals(List.of(worker), subscriber.workers(), "only workers with an events endpoint");
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 2), null, prompt, BLOCK)));
      Await.until(() -> states.contains(EventStreamState.LIVE), () -> "LIVE, now " + states);
      StreamHealth health = subscriber.health().get(0);
      assertEquals(worker, health.worker());
      assertEquals(EventStreamState.LIVE, health.state());
      assertEquals(0, health.lastSequence());
      assertTrue(health.connected());
      assertFalse(health.replaying());
      try (Routing r = router.select(prompt)) {
        assertEquals(2, r.matchedBlocks());
      }
      router.removeWorker(worker);
      Await.until(() -> p.subscriptions() == 0, () -> "unsubscribed");
      assertEquals(List.of(), subscriber.workers());
      assertNull(router.workers().find(worker).orElse(null));
    }
  }

  /**
   * A closed subscriber stops following the registry: the router no longer holds its listener, so workers added
   * later reach nothing of it (before, each one logged "not subscribing to ...: subscriber is closed").
   */
  @Test
  void closedSubscriber_leavesTheRegistry() {
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    java.util.logging.Logger log = java.util.logging.Logger.getLogger(KvEventSubscriber.class.getName());
    List<String> warnings = new CopyOnWriteArrayList<>();
    java.util.logging.Handler handler = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord record) {
        if (record.getLevel().intValue() >= java.util.logging.Level.WARNING.intValue()) {
          warnings.add(record.getMessage());
        }
      }

      @Override
      public void flush() {
      }

      @Override
      public void close() {
      }
    };
    log.addHandler(handler);
    try {
      KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().router(router).build();
      subscriber.start();
      subscriber.close();
      for (int i = 0; i < 3; i++) {
        router.addWorker(Worker.newBuilder(WorkerId.of("later-" + i))
            .endpoint(Worker.HTTP, URI.create("http://127.0.0.1:1"))
            .endpoint(KvEventSubscriber.EVENTS_ENDPOINT, URI.create("tcp://127.0.0.1:" + (2000 + i))).build());
      }
      assertEquals(List.of(), warnings, "a closed subscriber heard the registry");
      assertEquals(List.of(), subscriber.workers());
    } finally {
      log.removeHandler(handler);
    }
  }

  /**
   * Item 2: after a restart the subscriber first sees the new engine at a number above the last one it applied (the
   * new engine's first batches were lost): the replayed batches differ from the applied ones, so the old engine's
   * entries are purged and only the new engine's are kept.
   */
  @Test
  void restartFirstSeenAheadOfTheLastSequence_purgesTheOldEngine() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("restarted");
    try (KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index)
        .replayTimeout(Duration.ofSeconds(2)).build()) {
      String endpoint;
      String replay;
      try (KvEventPublisher first = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build()) {
        endpoint = first.endpoint();
        replay = first.replayEndpoint();
        subscriber.addWorker(worker, endpoint, replay, "", 1);
        subscriber.start();
        assertTrue(first.awaitSubscribers(1, WAIT));
        for (int i = 0; i < 10; i++) {
          first.publish(List.of(BlockStored.of(hashes(100 * i, 2), null, tokens(1000 * i, 2), BLOCK)));
        }
        Await.until(() -> index.entriesOf(worker) == 20, () -> "old engine, " + subscriber.stats());
      }
      try (KvEventPublisher second = KvEventPublisher.newBuilder().endpoint(endpoint).replayEndpoint(replay)
          .build()) {
        second.dropNext(59); // published before the subscriber reconnected: in the ring only
        for (int i = 0; i < 59; i++) {
          publishOneBlock(second, i);
        }
        assertTrue(second.awaitSubscribers(1, WAIT));
        // A live engine keeps publishing, and so does this one until a live batch arrives: the first can be lost
        // when ZeroMQ reconnects the old SUB socket to the new engine before the subscriber replaces that socket
        // (the subscription the publisher saw was the old socket's), and a lone lost last batch leaves no gap to
        // reveal it. Every batch published is in the new engine's ring, so the index must end with all of them.
        int published = 59;
        long liveBefore = stats(subscriber, "restarted").batches();
        do {
          publishOneBlock(second, published++);
        } while (!Await.within(Duration.ofSeconds(1), () -> stats(subscriber, "restarted").batches() > liveBefore)
            && published < 80);
        int expected = published;
        Await.until(() -> index.entriesOf(worker) == expected, () -> "new engine only, " + subscriber.stats());
      }
      EventSourceStats stats = stats(subscriber, "restarted");
      assertTrue(stats.restarts() >= 1, stats.toString());
      for (int i = 0; i < 10; i++) {
        assertNull(index.findMatches(index.hasher().sequenceHashes(tokens(1000 * i, 2))).get(worker));
      }
    }
  }

  /**
   * Item 4: a batch over the message size limit cannot cross the replay connection either. It costs one counted
   * purge; the rest of the replay window is recovered and replays are not cooled down.
   */
  @Test
  void oversizedBatch_isSkippedWithOneCountedPurge_andTheRestOfTheReplayRecovers() throws InterruptedException {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    WorkerId worker = WorkerId.of("oversized");
    try (KvEventPublisher p = KvEventPublisher.newBuilder().replayEndpoint("tcp://127.0.0.1:0").build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index).maxMessageSize(2_048)
            // a replay that succeeds ends with its last reply; the timeout only bounds a lost one, and with the hour
            // of cooldown a timeout is final, so it is generous (1 s expired once under a loaded CI machine)
            .replayTimeout(Duration.ofSeconds(10)).replayCooldown(Duration.ofHours(1)).build()) {
      subscriber.addWorker(worker, p.endpoint(), p.replayEndpoint(), "", 1);
      subscriber.start();
      assertTrue(p.awaitSubscribers(1, WAIT));
      p.publish(List.of(BlockStored.of(hashes(0, 1), null, tokens(0, 1), BLOCK)));
      Await.until(() -> stats(subscriber, "oversized").batches() == 1, () -> "first batch");
      long[] many = new long[400]; // about 3.6 KB on the wire
      for (int i = 0; i < many.length; i++) {
        many[i] = -1L - i;
      }
      p.dropNext(3);
      p.publish(List.of(BlockStored.of(hashes(10, 1), null, tokens(100, 1), BLOCK)));
      p.publish(List.of(BlockRemoved.of(many)));
      p.publish(List.of(BlockStored.of(hashes(20, 1), null, tokens(200, 1), BLOCK)));
      p.publish(List.of(BlockStored.of(hashes(30, 1), null, tokens(300, 1), BLOCK)));
      Await.until(() -> stats(subscriber, "oversized").skippedBatches() == 1 && !subscriber.health().get(0)
          .replaying(), () -> "skipped, " + subscriber.stats());
      p.publish(List.of(BlockStored.of(hashes(40, 1), null, tokens(400, 1), BLOCK)));
      Await.until(() -> index.entriesOf(worker) == 3, () -> "3, 4 and 5 held, " + subscriber.stats());
      EventSourceStats stats = stats(subscriber, "oversized");
      assertEquals(0, stats.replayFailures(), stats.toString());
      assertEquals(1, stats.purges(), stats.toString());
      assertNull(index.findMatches(index.hasher().sequenceHashes(tokens(0, 1))).get(worker), "purged");
      assertEquals(1, index.findMatches(index.hasher().sequenceHashes(tokens(300, 1))).get(worker).blocks());
    }
  }

  /** Item 5: replies that are not valid replay messages do not keep a replay open. */
  @Test
  void malformedReplayReplies_doNotHoldTheReplayOpen() throws Exception {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    try (ZContext ctx = new ZContext(1);
        KvEventPublisher p = KvEventPublisher.newBuilder().build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(index)
            .replayTimeout(Duration.ofMillis(300)).build()) {
      ZMQ.Socket router = ctx.createSocket(SocketType.ROUTER);
      router.setReceiveTimeOut(20);
      router.bind("tcp://127.0.0.1:*");
      String replay = router.getLastEndpoint();
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      List<byte[]> peers = new CopyOnWriteArrayList<>();
      Thread hostile = new Thread(() -> {
        while (!stop.get()) {
          byte[] identity = router.recv(0);
          if (identity != null) {
            peers.add(identity);
            while (router.hasReceiveMore()) {
              router.recv(0);
            }
          }
          for (byte[] peer : peers) { // one-frame replies, forever
            router.sendMore(peer);
            router.send("not a replay message", ZMQ.DONTWAIT);
          }
        }
      });
      hostile.start();
      try {
        subscriber.addWorker(WorkerId.of("hostile"), p.endpoint(), replay, "", 1);
        subscriber.start();
        assertTrue(p.awaitSubscribers(1, WAIT));
        p.publish(List.of(BlockRemoved.of(1)));
        Await.until(() -> stats(subscriber, "hostile").batches() == 1, () -> "first batch");
        p.dropNext(1);
        p.publish(List.of(BlockRemoved.of(2)));
        p.publish(List.of(BlockRemoved.of(3)));
        Await.until(() -> stats(subscriber, "hostile").replayFailures() == 1
            && stats(subscriber, "hostile").purges() == 1, () -> "failed and purged, " + subscriber.stats());
        EventSourceStats stats = stats(subscriber, "hostile");
        assertTrue(stats.decodeErrors() >= 1, stats.toString());
      } finally {
        stop.set(true);
        hostile.join();
      }
    }
  }
}
