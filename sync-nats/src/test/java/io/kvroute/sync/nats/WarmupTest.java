package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.nats.client.Connection;
import io.nats.client.KeyValue;
import io.nats.client.Nats;
import io.nats.client.api.KeyValueEntry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The JetStream key-value warm-up against a real {@code nats-server -js}: a replica started after its peer routed
 * (and closed) its requests predicts the peer's prefixes on the workers the peer chose, which a fresh router cannot
 * know by itself.
 */
class WarmupTest {
  @RegisterExtension
  static final NatsServerExtension NATS = new NatsServerExtension();
  private static final AtomicInteger RUNS = new AtomicInteger();
  private static final int BLOCK = 16;
  private static final int PREFIX_BLOCKS = 64;
  private static final List<WorkerId> WORKERS = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"),
      WorkerId.of("w3"));

  private final int run = RUNS.incrementAndGet();
  private final String subject = "kvroute.warmup." + run;
  private final String bucket = "kvroute-warmup-" + run;
  private final List<NatsLoadSync> syncs = new ArrayList<>();

  @AfterEach
  void closeAll() {
    syncs.forEach(NatsLoadSync::close);
  }

  private Router router(String name, long seed, NatsLoadSync.Builder sync) {
    NatsLoadSync s = sync.servers(NATS.server().url()).subject(subject).replicaName(name)
        .heartbeatInterval(Duration.ofMillis(200)).replicaTtl(Duration.ofSeconds(1)).build();
    syncs.add(s);
    Router router = Router.newBuilder().policy(RouterPolicy.approximate()).randomSeed(seed).sharedLoad(s).build();
    for (WorkerId w : WORKERS) {
      router.addWorker(Worker.of(w));
    }
    return router;
  }

  /** A prompt of shared prefix {@code kind} (64 full blocks) and a unique tail of {@code tail} tokens. */
  private static int[] prompt(int kind, long tailSeed, int tail) {
    int[] p = new int[PREFIX_BLOCKS * BLOCK + tail];
    SplittableRandom prefix = new SplittableRandom(1000 + kind);
    SplittableRandom rest = new SplittableRandom(tailSeed);
    for (int i = 0; i < p.length; i++) {
      p[i] = i < PREFIX_BLOCKS * BLOCK ? prefix.nextInt(50_000) : rest.nextInt(50_000);
    }
    return p;
  }

  @Test
  void aReplicaStartedLateRoutesItsFirstRequestsToTheWorkersThatHoldThePrefixes() throws Exception {
    Router a = router("a", 1, NatsLoadSync.newBuilder().warmupBucket(bucket));
    NatsLoadSync aSync = syncs.get(0);
    awaitConnected(aSync);
    int kinds = 8;
    WorkerId[] chosen = new WorkerId[kinds];
    for (int k = 0; k < kinds; k++) {
      Routing r = a.select(prompt(k, k, 40));
      chosen[k] = r.workerId();
      r.firstToken();
      r.close();
    }
    aSync.close(); // publishes what is batched and writes its last snapshot; a's open bookings are gone

    Router late = router("late", 99, NatsLoadSync.newBuilder().warmupBucket(bucket));
    NatsLoadSync lateSync = syncs.get(1);
    awaitConnected(lateSync);
    int applied = lateSync.warmUp();
    // Every block of every routed prompt: 64 prefix blocks and 2 full tail blocks (40 tokens) each.
    assertEquals(kinds * (PREFIX_BLOCKS + 40 / BLOCK), applied, "blocks taken from a's snapshot");
    assertEquals(0, late.remoteLoad().openBookings(), "nothing is booked: only predictions were warmed");
    for (int k = kinds - 1; k >= 0; k--) { // another order and other tails than a's
      Routing r = late.select(prompt(k, 500 + k, 300));
      assertEquals(chosen[k], r.workerId(), "prefix " + k + " goes where a put it");
      assertTrue(r.matchedBlocks() >= PREFIX_BLOCKS, "prefix " + k + " is predicted cached there: "
          + r.matchedBlocks() + " blocks");
      r.close();
    }
  }

  @Test
  void withoutTheBucketAFreshRouterPredictsNothing() throws Exception {
    Router a = router("a", 1, NatsLoadSync.newBuilder().warmupBucket(bucket));
    awaitConnected(syncs.get(0));
    Routing first = a.select(prompt(0, 0, 40));
    first.close();
    syncs.get(0).close();
    Router cold = router("cold", 99, NatsLoadSync.newBuilder());
    awaitConnected(syncs.get(1));
    Routing r = cold.select(prompt(0, 7, 300));
    assertEquals(0, r.matchedBlocks(), "a router that did not warm up knows no prefix");
    assertThrows(IllegalStateException.class, () -> syncs.get(1).warmUp());
  }

  @Test
  void theSnapshotIsOneVersionedBoundedValuePerReplica() throws Exception {
    int maxBytes = 8192; // about 500 hashes: far fewer than the 40 prompts below
    Router a = router("a/1", 1, NatsLoadSync.newBuilder().warmupBucket(bucket).warmupMaxBytes(maxBytes));
    NatsLoadSync aSync = syncs.get(0);
    awaitConnected(aSync);
    for (int k = 0; k < 40; k++) {
      Routing r = a.select(prompt(k, k, 0));
      r.close();
    }
    aSync.close();
    try (Connection c = Nats.connect(NATS.server().url())) {
      KeyValue kv = c.keyValue(bucket);
      assertEquals(List.of(NatsLoadSync.warmupKey("a/1")), kv.keys());
      assertFalse(NatsLoadSync.warmupKey("a/1").contains("/"), "keys hold only JetStream's key characters");
      KeyValueEntry entry = kv.get(NatsLoadSync.warmupKey("a/1"));
      byte[] value = entry.getValue();
      assertTrue(value.length <= maxBytes, value.length + " bytes");
      Warmup.Snapshot snapshot = Warmup.decode(value);
      assertEquals(BLOCK, snapshot.blockSize());
      assertEquals(Warmup.blocksFor(maxBytes), snapshot.blocks(), "filled to the bound, the oldest left out");
      assertTrue(Math.abs(System.currentTimeMillis() - snapshot.writtenAtMillis()) < 60_000);
      // The most recent prompt is kept whole (the least recently predicted go first): its 64 blocks are the last
      // hashes of the worker it was routed to, its last block first (a prompt's first block counts as its most
      // recent, so that the bound cuts prompts from their ends).
      Routing again = a.select(prompt(39, 39, 0)); // a predicts its own routing: the same worker
      int w = snapshot.workers().indexOf(again.workerId());
      assertTrue(w >= 0, "the last prompt's worker is in the snapshot");
      long[] hashes = snapshot.hashes().get(w);
      long[] expected = a.indexer().hasher().sequenceHashes(prompt(39, 39, 0));
      assertEquals(PREFIX_BLOCKS, expected.length);
      for (int i = 0, j = expected.length - 1; i < j; i++, j--) {
        long t = expected[i];
        expected[i] = expected[j];
        expected[j] = t;
      }
      assertEquals(java.util.Arrays.toString(expected), java.util.Arrays.toString(
          java.util.Arrays.copyOfRange(hashes, hashes.length - PREFIX_BLOCKS, hashes.length)));
    }
  }

  @Test
  void aNewReplicaWarmsUpByItselfOnItsFirstConnection() throws Exception {
    Router a = router("a", 1, NatsLoadSync.newBuilder().warmupBucket(bucket));
    awaitConnected(syncs.get(0));
    for (int k = 0; k < 3; k++) {
      a.select(prompt(k, k, 0)).close();
    }
    syncs.get(0).close();
    router("late", 99, NatsLoadSync.newBuilder().warmupBucket(bucket));
    NatsLoadSync late = syncs.get(1);
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (late.stats().warmupBlocksApplied() == 0) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no warm-up without a warmUp() call: " + late.stats());
      }
      Thread.sleep(5);
    }
    assertEquals(3 * PREFIX_BLOCKS, late.stats().warmupBlocksApplied(), "a's three prompts, nothing twice");
  }

  @Test
  void aSnapshotOlderThanTheMaximumAgeIsNotApplied() throws Exception {
    Duration maxAge = Duration.ofMillis(500);
    try (Connection c = Nats.connect(NATS.server().url())) {
      // A bucket that keeps entries for a minute: the age check below is the sync's own, not JetStream's expiry.
      c.keyValueManagement().create(io.nats.client.api.KeyValueConfiguration.builder().name(bucket)
          .maxHistoryPerKey(1).ttl(Duration.ofMinutes(1)).build());
    }
    Router a = router("a", 1, NatsLoadSync.newBuilder().warmupBucket(bucket).warmupMaxAge(maxAge));
    awaitConnected(syncs.get(0));
    a.select(prompt(0, 0, 0)).close();
    syncs.get(0).close();
    Thread.sleep(maxAge.toMillis() + 300); // the snapshot's predictions are older than the maximum age now
    router("late", 99, NatsLoadSync.newBuilder().warmupBucket(bucket).warmupMaxAge(maxAge));
    awaitConnected(syncs.get(1));
    try (Connection c = Nats.connect(NATS.server().url())) {
      assertEquals(List.of("a"), c.keyValue(bucket).keys(), "the stale snapshot is still in the bucket");
    }
    assertEquals(0, syncs.get(1).warmUp(), "stale predictions are not taken");
    router("tolerant", 98, NatsLoadSync.newBuilder().warmupBucket(bucket)); // the default maximum age, 120 s
    awaitConnected(syncs.get(2));
    assertEquals(PREFIX_BLOCKS, syncs.get(2).warmUp(), "the same snapshot, young enough for a longer maximum age");
  }

  private static void awaitConnected(NatsLoadSync sync) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!sync.isConnected()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not connected: " + sync);
      }
      Thread.sleep(5);
    }
  }
}
