package io.kvroute.jmh;

import io.kvroute.EventStreamState;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.SharedLoad;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sync.nats.NatsLoadSync;
import io.kvroute.testkit.NatsServer;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What sharing load over NATS adds to one request's routing: {@link Router#select(int[])}, then
 * {@link Routing#firstToken()} and {@link Routing#close()}, the three calls that tell a {@link SharedLoad} port of a
 * delta. {@code sync=NONE} is a lone router; {@code sync=NATS} is the same router with a {@link NatsLoadSync}
 * connected to a real {@code nats-server} (started on a free loopback port by the test kit's {@link NatsServer}; it
 * must be installed) and a peer replica booking and releasing {@code peerRate} requests per second, so the measured
 * thread both appends its own deltas and applies the peer's that arrived while it held the admission lock. The
 * difference of the two scores is the added cost per request, hence an upper bound of the added cost per
 * {@code select} (the target: within 1 µs). With {@code sync=NONE} the second client's requests go to the measured
 * router itself, so both variants route the same workload in the same state: one router seeing both clients' load
 * and predictions, or two replicas each seeing both through the sync. (Comparing against a lone router with one
 * request in flight would not: with the peer's 64 open requests in view, approximate mode spreads each hot prompt
 * over several workers, and the prediction index holds about 7 times the entries.) With {@code peerRate=0} there is
 * no peer: the measured replica publishes to nobody, and the difference is its own hooks and publisher. The
 * publisher, NATS and peer threads run beside the measured one: on a machine with fewer free cores than threads
 * they steal its time, so run it on a quiet machine with at least four; the measured thread's CPU time per
 * operation, printed after each iteration, is not inflated by that. Before the first iteration both variants route
 * {@code warmSelections} requests by count (the peer's client one in {@link #PEER_EVERY}): in approximate mode the
 * prediction index keeps growing for a long time (a prompt spreads to another worker whenever its workers are
 * busier), and a selection that stores a prompt costs more than one that renews it, so iterations timed by the clock
 * would compare a variant that had routed more requests (a later, cheaper state) with one that had routed fewer.
 * With {@code peer=PROCESS} the peer replica runs in a JVM of its own ({@link SyncPeer}), so that what the sync
 * costs the measured JVM is separated from two replicas sharing one JVM's cores; {@code jmh/run-issue11.sh} runs
 * that layout with the measured JVM, the peer and {@code nats-server} pinned apart ({@code -Dbench.natsUrl} names a
 * server started outside, {@code -Dbench.peerCpus} the peer's CPUs).
 * {@code -Dbench.counts=true} (as a forked JVM's argument) prints, after each iteration, how the routers recorded
 * their predictions (renewed, renewed a peer's node, extended, stored whole; a peer's renewed or stored) and the
 * prediction index's size.
 *
 * <pre>
 * mvn -B -q -pl jmh -am package -DskipTests
 * java -jar jmh/target/benchmarks.jar SharedLoadBenchmark -f 3 -wi 5 -w 1s -i 10 -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@State(Scope.Benchmark)
public class SharedLoadBenchmark {
  /** Whether load is shared. */
  public enum Sync { NONE, NATS }

  @Param({"NONE", "NATS"})
  Sync sync;

  @Param({"2048"})
  int promptTokens;

  @Param({"16"})
  int workers;

  @Param({"kvAware", "approximate"})
  String policy;

  /** {@link #hooks}: the work between two requests' hooks, in {@link Blackhole#consumeCPU} tokens. */
  @Param({"1000"})
  int hookSpacing;

  /** Requests per second the peer replica books and releases. */
  @Param({"2000"})
  int peerRate;

  /**
   * Selections (the measured router's, with the peer's one in {@link #PEER_EVERY} beside them) routed in the
   * trial's setup before any iteration, so that both variants start measuring from the same state.
   */
  @Param({"300000"})
  int warmSelections;

  /** In the setup's warm-up, the peer's client routes one request per this many of the measured router's. */
  static final int PEER_EVERY = 64;

  /**
   * Where {@code sync=NATS}'s peer replica runs: {@code SAME_JVM}, beside the measured one, or {@code PROCESS}, in
   * a JVM of its own ({@link SyncPeer}; {@code -Dbench.peerCpus=1} pins it with {@code taskset}), as in a
   * deployment where the peer is another host, so that its decoding and applying of the measured replica's deltas
   * and its own routing leave the measured JVM. {@code sync=NONE} ignores it (its second client routes on the
   * measured router itself, on a thread of this JVM).
   */
  @Param({"SAME_JVM"})
  PeerLayout peer = PeerLayout.SAME_JVM;

  /** Where the peer replica runs (see {@link #peer}). */
  public enum PeerLayout { SAME_JVM, PROCESS }

  Router router;
  /** A port to use instead of {@link #sync}'s (for {@link SyncAb}); null: {@link #sync}'s. */
  SharedLoad portOverride;
  /** The peer replica's router in {@link PeerLayout#SAME_JVM}; null without a peer or with it in another process. */
  Router peerRouter;
  private PeerClient peerClient;
  private SyncPeer peerProcess;
  int[][] prompts;
  private NatsServer server;
  private NatsLoadSync local;
  private NatsLoadSync peerSync;
  private static final AtomicInteger SUBJECTS = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws IOException, InterruptedException {
    List<WorkerId> ids = Workload.workers(workers);
    SharedLoad port = SharedLoad.NONE;
    Router peerReplica = null;
    if (sync == Sync.NATS) {
      // -Dbench.natsUrl: a server started outside (jmh/run-issue11.sh starts one pinned to the peer's core)
      String url = System.getProperty("bench.natsUrl", "");
      if (url.isEmpty()) {
        server = NatsServer.start();
        url = server.url();
      }
      // one subject per variant: SyncAb's variants may share a server
      String subject = "kvroute.bench." + ProcessHandle.current().pid() + "." + SUBJECTS.incrementAndGet();
      local = NatsLoadSync.newBuilder().servers(url).subject(subject).replicaName("measured").build();
      port = local;
      if (peerRate > 0 && peer == PeerLayout.PROCESS) {
        peerProcess = SyncPeer.launch(url, subject, policy, promptTokens, workers);
      } else if (peerRate > 0) { // with no peer, the measured replica publishes to nobody: its own hooks alone
        peerSync = NatsLoadSync.newBuilder().servers(url).subject(subject).replicaName("peer").build();
        peerReplica = Router.newBuilder().policy(policy(policy)).randomSeed(Workload.SEED + 1).sharedLoad(peerSync)
            .build();
      }
    }
    if (portOverride != null) {
      port = portOverride;
    }
    router = Router.newBuilder().policy(policy(policy)).randomSeed(Workload.SEED).sharedLoad(port).build();
    if (sync == Sync.NONE && peerRate > 0) {
      peerReplica = router; // one router routes both clients' requests: the state two synced replicas share
    }
    for (WorkerId id : ids) {
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
      if (peerReplica != null && peerReplica != router) {
        peerReplica.addWorker(Worker.of(id));
        peerReplica.reportEventStream(id, EventStreamState.LIVE);
      }
    }
    prompts = prompts(promptTokens);
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (local != null && !local.isConnected() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    if (peerReplica != null || peerProcess != null) {
      while (local != null && (local.peers().isEmpty() || (peerSync != null && peerSync.peers().isEmpty()))
          && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      if (local != null && local.peers().isEmpty()) {
        throw new IllegalStateException("the replicas did not see each other");
      }
      if (peerProcess != null && !peerProcess.awaitReady(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the peer process did not see the measured replica");
      }
      peerRouter = peerReplica;
      peerClient = peerReplica == null ? null : new PeerClient(peerReplica, prompts);
      // The prediction index grows for a long time (a hot prompt spreads to another worker whenever its workers are
      // busier), and a selection that stores a prompt costs several that renew one, so a run measured by time
      // compares a variant that routed more requests (a later, cheaper state) with one that routed fewer: warm both
      // up by count to the same, nearly stationary, state first (the peer routing one request per PEER_EVERY).
      long warmStart = System.nanoTime();
      for (int i = 0; i < warmSelections; i++) {
        try (Routing routing = router.select(prompts[i & (prompts.length - 1)])) {
          routing.firstToken();
        }
        if (i % PEER_EVERY == 0 && peerClient != null) {
          peerClient.step();
        }
        if (local != null && (i & 511) == 511) {
          if (peerProcess != null) {
            peerProcess.step(512 / PEER_EVERY); // the peer process's share of these 512, routed while this sleeps
          }
          Thread.sleep(1); // lets the publisher keep up: a full ring would drop deltas, and the peer not learn them
        }
      }
      Thread.sleep(200); // the last deltas delivered
      System.out.printf(Locale.ROOT, "warm-up: %d selections in %d ms, deltas dropped %d%n", warmSelections,
          (System.nanoTime() - warmStart) / 1_000_000, local == null ? 0 : local.stats().deltasDropped());
      if (peerProcess != null) {
        peerProcess.rate(peerRate);
      } else {
        peerClient.start(peerRate, "bench-peer");
      }
    }
  }

  /** The benchmark's prompts: {@link Workload#MAX_PROMPTS} of {@code promptTokens} random tokens, seeded. */
  static int[][] prompts(int promptTokens) {
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    int[][] prompts = new int[Workload.MAX_PROMPTS][];
    for (int i = 0; i < prompts.length; i++) {
      prompts[i] = random.ints(promptTokens, 0, 150_000).toArray();
    }
    return prompts;
  }

  static RouterPolicy policy(String name) {
    return name.equals("approximate") ? RouterPolicy.approximate() : RouterPolicy.kvAware();
  }

  private long droppedBefore;

  @Setup(Level.Iteration)
  public void countDropped() {
    droppedBefore = local == null ? 0 : local.stats().deltasDropped();
  }

  /** Deltas the measured replica dropped (its ring full: the publisher could not keep up) in the iteration. */
  @TearDown(Level.Iteration)
  public void reportDropped() {
    if (Boolean.getBoolean("bench.counts")) {
      System.out.println("measured " + PredictionCounts.of(router));
      if (peerRouter != null && peerRouter != router) {
        System.out.println("peer     " + PredictionCounts.of(peerRouter));
      }
    }
    if (local != null) {
      System.out.printf(Locale.ROOT, "deltas dropped %d, sent %d frames of %d bytes in all%n",
          local.stats().deltasDropped() - droppedBefore, local.stats().framesSent(), local.stats().bytesSent());
    }
  }

  /** Stops the peer's client; its open requests stay open (a peer process prints what it did and exits). */
  void stopPeer() throws InterruptedException {
    if (peerClient != null) {
      peerClient.stop();
    }
    if (peerProcess != null) {
      peerProcess.close();
      peerProcess = null;
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws InterruptedException {
    stopPeer();
    if (local != null) {
      local.close();
    }
    if (peerSync != null) {
      peerSync.close();
    }
    if (server != null) {
      server.close();
    }
  }

  /**
   * The measured thread's own CPU time per operation, printed after each iteration: unlike the score, it is not
   * inflated by the publisher, NATS, peer and other processes' threads taking the core away (only by their sharing
   * of caches), so on a machine with fewer free cores than threads it separates what {@code select} does from what
   * the sync costs elsewhere.
   */
  @State(Scope.Thread)
  public static class CpuClock {
    private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    long ops;
    private long cpu0;

    private boolean pinnedOnce;

    /** Pins the measuring thread first with {@code -Dbench.measuredCpu} ({@link Pinning}); then starts counting. */
    @Setup(Level.Iteration)
    public void start() {
      String pinned = Pinning.measuredThreadAlone(); // each iteration: threads started since inherit its CPU
      if (!pinned.isEmpty() && !pinnedOnce) {
        pinnedOnce = true;
        System.out.println(pinned);
      }
      ops = 0;
      cpu0 = MX.getCurrentThreadCpuTime();
    }

    @TearDown(Level.Iteration)
    public void stop() {
      long cpu = MX.getCurrentThreadCpuTime() - cpu0;
      System.out.printf(Locale.ROOT, "thread cpu %.1f ns/op%n", (double) cpu / Math.max(1, ops));
    }
  }

  /** Booking ids for {@link #hooks}, above any the router hands out. */
  private long hookId = 1L << 40;
  private long[] hookHashes;

  /**
   * The port's three hooks, as the router calls them for one request (booked, first token, closed), on the
   * measured replica's port, after {@code hookSpacing} tokens of {@link Blackhole#consumeCPU} standing in for the
   * rest of a selection (so that deltas come at a rate a router can produce, which its publisher keeps up with: in
   * a tight loop the hooks outrun any encoder and most deltas would be refused, which is cheaper); {@code sync=NONE}
   * calls {@link SharedLoad#NONE}'s after the same spacing, so the difference is the hooks' cost. Run it with
   * {@code peerRate=0} (with a peer routing on the measured router itself, its selections would offer deltas
   * concurrently, which the router's admission lock forbids), and check that no deltas were dropped.
   */
  @Benchmark
  public long hooks(CpuClock clock) {
    clock.ops++;
    Blackhole.consumeCPU(hookSpacing);
    SharedLoad port = local != null ? local : SharedLoad.NONE;
    long[] hashes = hookHashes;
    if (hashes == null) {
      hashes = hookHashes = new SplittableRandom(Workload.SEED).longs(promptTokens / 16).toArray();
    }
    long id = hookId++;
    port.booked(id, HOOK_WORKER, promptTokens, hashes, hashes.length, policy.equals("approximate"));
    port.firstToken(id);
    port.closed(id);
    return id;
  }

  private static final WorkerId HOOK_WORKER = Workload.workers(1).get(0);

  @Benchmark
  public WorkerId select(PromptCursor cursor, CpuClock clock) {
    clock.ops++;
    int[] prompt = prompts[cursor.next(prompts.length - 1)];
    try (Routing routing = router.select(prompt)) {
      routing.firstToken();
      return routing.workerId();
    }
  }
}
