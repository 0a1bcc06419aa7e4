package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Replicas whose policies learn from each other's bookings ({@link PeerLearning}, fed by the note a booking carries
 * through {@link SharedLoad} and {@link RemoteLoad}) decide as one router would: with every delta delivered before
 * the next selection, two {@code cacheAffinity} or {@code predictedTtft} replicas route a seeded stream of new and
 * repeated prefixes to exactly the workers one router routes it to. The independent model is the single router fed
 * the same stream; without the notes the replicas' placement counters each count half of the placements and their
 * choices drift from it.
 */
class PeerLearningTest {
  private static final int BLOCK = 16;
  private static final List<WorkerId> WORKERS = List.of(WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2"),
      WorkerId.of("w3"));

  /** An in-memory transport: queues this replica's deltas and delivers them to the peers' views on demand. */
  static final class QueuePort implements SharedLoad {
    final String name;
    final boolean notes;
    final List<Runnable> queued = new ArrayList<>();
    final List<RemoteLoad> peers = new ArrayList<>();
    RemoteLoad own;

    QueuePort(String name, boolean notes) {
      this.name = name;
      this.notes = notes;
    }

    @Override
    public void start(RemoteLoad view) {
      own = view;
    }

    @Override
    public void booked(long id, WorkerId worker, long prefill, long[] hashes, int blocks, boolean predicted) {
      enqueue(id, worker, prefill, hashes, blocks, false, 0, false);
    }

    @Override
    public void booked(long id, WorkerId worker, long prefill, long[] hashes, int blocks, boolean predicted,
        int warmBlocks, boolean newPrefix) {
      enqueue(id, worker, prefill, hashes, blocks, notes, warmBlocks, newPrefix);
    }

    private void enqueue(long id, WorkerId worker, long prefill, long[] hashes, int blocks, boolean noted,
        int warmBlocks, boolean newPrefix) {
      long[] keys = new long[RemoteLoad.loadKeyCount(blocks)];
      int n = RemoteLoad.loadKeys(hashes, blocks, keys);
      long warmKey = warmBlocks > 0 ? hashes[warmBlocks - 1] : 0;
      queued.add(() -> {
        for (RemoteLoad p : peers) {
          if (noted) {
            p.booked(name, id, worker, prefill, blocks, keys, n, warmBlocks, warmKey, newPrefix);
          } else {
            p.booked(name, id, worker, prefill, blocks, keys, n);
          }
        }
      });
    }

    @Override
    public void firstToken(long id) {
      queued.add(() -> peers.forEach(p -> p.firstToken(name, id)));
    }

    @Override
    public void closed(long id) {
      queued.add(() -> peers.forEach(p -> p.closed(name, id)));
    }

    void deliver() {
      List<Runnable> now = new ArrayList<>(queued);
      queued.clear();
      now.forEach(Runnable::run);
    }
  }

  static Stream<Arguments> cases() {
    return LongStream.rangeClosed(1, 8).boxed().flatMap(seed -> Stream.of(Arguments.of("cacheAffinity", seed),
        Arguments.of("predictedTtft", seed)));
  }

  private static Supplier<RouterPolicy> policy(String name) {
    return name.equals("cacheAffinity") ? RouterPolicy::cacheAffinity : RouterPolicy::predictedTtft;
  }

  @ParameterizedTest(name = "{0}, seed {1}")
  @MethodSource("cases")
  void replicasThatLearnFromEachOtherRouteAsOneRouter(String policy, long seed) {
    List<WorkerId> one = route(policy(policy), seed, 1, true);
    List<WorkerId> two = route(policy(policy), seed, 2, true);
    assertEquals(one, two, policy + " seed " + seed + ": two replicas sharing their notes against one router");
    assertTrue(one.stream().distinct().count() > 1, "the stream spread over several workers: " + one);
  }

  /** The control: without the notes, the replicas' choices differ from one router's for some seed. */
  @Test
  void withoutTheNotesReplicasDrift() {
    for (String policy : List.of("cacheAffinity", "predictedTtft")) {
      int differ = 0;
      for (long seed = 1; seed <= 8; seed++) {
        if (!route(policy(policy), seed, 1, true).equals(route(policy(policy), seed, 2, false))) {
          differ++;
        }
      }
      assertTrue(differ > 0, policy + ": without notes no seed differed, so the notes were not what made them agree");
    }
  }

  /**
   * A peer's decoding request counts in a replica's decode age of the worker as the owner's own does, so both price
   * the same growth from one engine report: booked at 0 with its first token at 10 ms, it has decoded 1.0 s at
   * 1.01 s in both replicas' counts (the deltas delivered at once, so the peer saw the booking and the first token
   * when the owner did), and once closed it counts in neither.
   */
  @Test
  void aPeersDecodingRequestCountsInTheDecodeAgeAsTheOwnersOwn() {
    FakeTicker ticker = new FakeTicker();
    QueuePort p0 = new QueuePort("r0", true);
    QueuePort p1 = new QueuePort("r1", true);
    PredictedTtftPolicy owner = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    PredictedTtftPolicy peer = new PredictedTtftPolicy(PredictedTtftConfig.DEFAULT);
    Router r0 = Router.newBuilder().policy(owner).ticker(ticker).randomSeed(1).sharedLoad(p0).build();
    Router r1 = Router.newBuilder().policy(peer).ticker(ticker).randomSeed(1).sharedLoad(p1).build();
    WorkerId w = WORKERS.get(0);
    for (Router r : List.of(r0, r1)) {
      r.addWorker(Worker.of(w));
      r.reportEventStream(w, EventStreamState.LIVE);
    }
    p0.peers.add(p1.own);
    p1.peers.add(p0.own);
    r1.select(Fixtures.prompt(2, BLOCK * 4)).close(); // the peer has a model of the worker, as after any selection
    p1.deliver();
    Routing routing = r0.select(Fixtures.prompt(1, BLOCK * 8));
    p0.deliver();
    ticker.advance(Duration.ofMillis(10));
    routing.firstToken();
    p0.deliver();
    long at = ticker.read() + 1_000_000_000L;
    assertEquals(1.0, owner.decodeAgeSeconds(w, at), 1e-9);
    assertEquals(1.0, peer.decodeAgeSeconds(w, at), 1e-9);
    routing.close();
    p0.deliver();
    assertEquals(0.0, owner.decodeAgeSeconds(w, at), 0.0);
    assertEquals(0.0, peer.decodeAgeSeconds(w, at), 0.0);
  }

  @Test
  void aNoteLongerThanItsBookingIsRefused() {
    Router r = Router.newBuilder().policy(RouterPolicy.cacheAffinity()).build();
    r.addWorker(Worker.of(WORKERS.get(0)));
    assertThrows(IllegalArgumentException.class,
        () -> r.remoteLoad().booked("peer", 1, WORKERS.get(0), 10, 2, new long[] {1}, 1, 3, 7, true));
  }

  /**
   * Routes a seeded stream (new prefixes with their own tails, repeats of earlier prefixes with other tails) through
   * {@code replicas} routers in turn, every delta delivered to every peer before the next selection; requests stay
   * open (with no first token or completion, which only the owner's policy hears), and the clock advances between
   * selections. Returns the chosen workers in order.
   */
  private static List<WorkerId> route(Supplier<RouterPolicy> policy, long seed, int replicas, boolean notes) {
    SplittableRandom random = new SplittableRandom(seed);
    FakeTicker ticker = new FakeTicker();
    List<QueuePort> ports = new ArrayList<>();
    List<Router> routers = new ArrayList<>();
    for (int r = 0; r < replicas; r++) {
      QueuePort port = new QueuePort("r" + r, notes);
      Router router = Router.newBuilder().policy(policy.get()).ticker(ticker).randomSeed(seed).sharedLoad(port)
          .build();
      for (WorkerId w : WORKERS) {
        router.addWorker(Worker.of(w));
        router.reportEventStream(w, EventStreamState.LIVE); // no events: every worker's cache looks empty
      }
      ports.add(port);
      routers.add(router);
    }
    for (QueuePort p : ports) {
      for (QueuePort q : ports) {
        if (p != q) {
          p.peers.add(q.own);
        }
      }
    }
    List<int[]> prefixes = new ArrayList<>();
    List<WorkerId> chosen = new ArrayList<>();
    for (int i = 0; i < 160; i++) { // past predictedTtft's learning window (64), where its served-share bound acts
      int[] prefix;
      if (prefixes.isEmpty() || random.nextInt(3) == 0) {
        prefix = Fixtures.prompt(random.nextLong(), BLOCK * (4 + random.nextInt(6)));
        prefixes.add(prefix);
      } else {
        prefix = prefixes.get(random.nextInt(prefixes.size()));
      }
      int[] prompt = Fixtures.concat(prefix, Fixtures.prompt(random.nextLong(), BLOCK * (1 + random.nextInt(3))));
      Routing routing = routers.get(i % replicas).select(prompt);
      chosen.add(routing.workerId());
      ports.forEach(QueuePort::deliver);
      ticker.advance(Duration.ofMillis(1 + random.nextInt(20)));
    }
    return chosen;
  }
}
