package io.kvroute.examples;

import io.kvroute.KvAwareConfig;
import io.kvroute.Router;
import io.kvroute.RouterListener;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.SharedLoad;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.Simulation;
import io.kvroute.sim.SimulationResult;
import io.kvroute.sync.nats.NatsLoadSync;
import io.kvroute.sync.nats.SyncStats;
import io.kvroute.testkit.NatsServer;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The article's workload through N gateway replicas, each with its own {@link Router}, requests spread round-robin
 * over them, with and without load sharing over a real NATS server; prints request hit rate, TTFT p50/p99, load
 * balance and sync bytes per request beside the single router; not thread-safe (a command-line program).
 *
 * <pre>{@code
 * mvn -q -pl examples -am package -DskipTests
 * java -cp examples/target/kvroute-examples.jar io.kvroute.examples.ReplicaExperiment --replicas 1,2,4
 * }</pre>
 *
 * <p>The simulation runs on a virtual clock, so load sharing runs in virtual time too. By default
 * ({@code --publish linger}) each replica's deltas are published when {@link NatsLoadSync}'s publisher would publish
 * them (the first after a quiet period at once, then at polls every {@code --sync-interval-ms}, 0.1 ms, its default
 * batch delay, until four find nothing; see {@link LingerPublishing}) and reach the peers {@code --nats-latency-ms}
 * later; with {@code --publish grid} every {@code --sync-interval-ms} of virtual time each replica flushes its
 * batched deltas, delivered at that instant. Either way the simulation waits (in real time) until every peer has
 * received and applied a delivered batch.
 * Each replica's sync is given that interval as its batch delay, which with {@code --estimate-unseen true} is the
 * delivery window its router is told ({@code SharedLoad.deliveryWindowNanos}) for its estimate of the peers'
 * bookings not delivered yet (off by default, as in {@link NatsLoadSync}).
 * Results do not depend on this machine's load. Each closed-loop client waits up to {@code --client-jitter-ms}
 * (1 ms) before each request, as its own processing and round trip to the gateway would make it; without it the
 * clients whose requests finish in one engine step all send at the same virtual instant, which no replica can learn
 * of from its peers in any positive time. Besides p99 TTFT over all requests it prints the warm p99, without the
 * first {@code concurrency} requests (the cold start, sent within the jitter of time zero: with 24 clients and 960
 * requests that wave alone is 2.5% of the requests, so it sets the p99 of every configuration). Without
 * {@code --nats-url} a {@code nats-server} is started on a free loopback port. Every replica receives every engine's
 * KV events, as a real deployment where each replica subscribes to every engine.
 */
public final class ReplicaExperiment {
  // Held so the level sticks: the router's per-worker approximate-mode notices would flood the output.
  private static final java.util.logging.Logger KVROUTE_LOG = java.util.logging.Logger.getLogger("io.kvroute");

  /**
   * By default each client waits up to this long (uniformly) before each request: a client's own processing and
   * its round trip to the gateway, without which clients whose requests finish in one engine step send their next
   * ones at the same virtual instant, which no replica can learn of from its peers in time.
   */
  static final Duration DEFAULT_CLIENT_JITTER = Duration.ofMillis(1);

  /**
   * With {@code --publish linger}, the default time from a replica's publish to its peers applying the frame: the
   * publisher's wake-up, the encoding and one NATS delivery (publisher, server, subscriber).
   */
  static final Duration DEFAULT_NATS_LATENCY = Duration.ofNanos(100_000);

  private ReplicaExperiment() {}

  /** Runs the grid and prints the table. */
  public static void main(String[] args) throws IOException {
    Options options = Cli.parseOrExit(args, Options::parse, o -> o.help, Options.USAGE);
    if (options == null) {
      return;
    }
    KVROUTE_LOG.setLevel(java.util.logging.Level.WARNING);
    long start = System.nanoTime();
    NatsServer server = null;
    String url = options.natsUrl;
    if (url == null && options.syncModes.contains("nats")) {
      server = startNatsServer();
      url = server.url();
    }
    try {
      List<Row> rows = run(options, url, System.err);
      print(rows, options, System.out);
    } finally {
      if (server != null) {
        server.close();
      }
    }
    System.out.printf(Locale.ROOT, "%nDone in %.1f s.%n", (System.nanoTime() - start) / 1e9);
  }

  /** Starts {@code nats-server} on a free loopback port, or says how to get one. */
  static NatsServer startNatsServer() throws IOException {
    try {
      return NatsServer.start();
    } catch (IOException e) {
      throw new IOException(e.getMessage() + "; or pass --nats-url of a running server", e);
    }
  }

  /** One (kinds, policy, replicas, sync) point: medians over the runs. */
  record Row(int kinds, String policy, int replicas, String sync, double hitRate, double cachedRatio,
      double ttftP50, double ttftP99, double warmP99, double warmP99Min, double warmP99Max, double imbalance,
      double syncBytesPerRequest) {}

  static List<Row> run(Options options, @Nullable String natsUrl, PrintStream progress) {
    List<Row> rows = new ArrayList<>();
    Map<String, Supplier<RouterPolicy>> factories = ArticleExperiment.builtInPolicies(KvAwareConfig.DEFAULT);
    for (int kinds : options.kinds) {
      for (String policy : options.policies) {
        for (int n : options.replicas) {
          for (String sync : options.syncModes) {
            if (n == 1 && !sync.equals("none")) {
              continue; // one router shares with nobody
            }
            long t0 = System.nanoTime();
            Row row = point(options, kinds, policy, factories.get(policy), n, sync, natsUrl);
            rows.add(row);
            progress.printf(Locale.ROOT, "kinds=%-2d %-13s N=%d sync=%-4s hit %5.1f%%  TTFT p50/p99 %4.0f/%4.0f ms"
                    + " (warm p99 %4.0f)  max/mean %.2f  %6.0f B/req  (%d ms)%n", kinds, policy, n, sync,
                100 * row.hitRate, row.ttftP50, row.ttftP99, row.warmP99, row.imbalance, row.syncBytesPerRequest,
                (System.nanoTime() - t0) / 1_000_000);
          }
        }
      }
    }
    return rows;
  }

  private static final AtomicInteger RUNS = new AtomicInteger();

  static Row point(Options options, int kinds, String policyName, Supplier<RouterPolicy> policy, int replicas,
      String sync, @Nullable String natsUrl) {
    int runs = options.runs;
    double[] hit = new double[runs];
    double[] ratio = new double[runs];
    double[] p50 = new double[runs];
    double[] p99 = new double[runs];
    double[] warm = new double[runs];
    double[] imbalance = new double[runs];
    double[] bytes = new double[runs];
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(options.blocks).build();
    Collisions.Totals totals = new Collisions.Totals();
    Map<String, double[]> driftTotals = new LinkedHashMap<>();
    for (int run = 0; run < runs; run++) {
      long seed = options.seed + run;
      SharedPrefixWorkload workload = SharedPrefixWorkload.newBuilder().prefixKinds(kinds)
          .outputTokens(options.outputTokens).seed(seed).build();
      NatsLoadSync[] syncs = new NatsLoadSync[replicas];
      boolean nats = sync.equals("nats");
      if (nats) {
        if (natsUrl == null) {
          throw new IllegalArgumentException("--sync nats needs a NATS server");
        }
        String subject = "kvroute.experiment." + ProcessHandle.current().pid() + "." + RUNS.incrementAndGet();
        for (int r = 0; r < replicas; r++) {
          syncs[r] = NatsLoadSync.newBuilder().servers(natsUrl).subject(subject).replicaName("replica-" + r)
              .manualFlush() // flushed in virtual time by the simulation
              .batchDelay(Duration.ofNanos(options.syncIntervalNanos)) // so the window the routers are told is it
              .estimateUnseenPeerBookings(options.estimateUnseen)
              // what most deltas take here: published at once by a parked publisher, delivered a latency later
              .viewDelay(Duration.ofNanos(options.burstSampling ? options.natsLatencyNanos : 0))
              .snapshotInterval(Duration.ZERO).heartbeatInterval(Duration.ofSeconds(1))
              .replicaTtl(Duration.ofSeconds(60)).build();
        }
      }
      LingerPublishing linger = nats && options.syncIntervalNanos > 0 && options.linger
          ? new LingerPublishing(syncs, (r, calls, target) -> {
            calls.forEach(c -> c.accept(target));
            flushAndDeliver(syncs, r);
          }, options.syncIntervalNanos, options.natsLatencyNanos) : null;
      AtomicInteger built = new AtomicInteger();
      List<RouterListener> outcomeListeners = new ArrayList<>();
      RouterPolicy one = options.sharedPolicy ? new OneInstance(policy.get()) : null;
      long[] bytesAtStart = new long[1];
      WarmTtft warmTtft = new WarmTtft(options.concurrency, options.requests);
      Collisions[] collisions = new Collisions[1];
      Drift drift = options.drift ? new Drift(replicas, options.concurrency) : null;
      Simulation.Builder simulation = Simulation.newBuilder()
          .engine(engine)
          .workers(options.workers)
          .concurrency(options.concurrency)
          .requests(options.requests)
          .workload(workload)
          .clientJitter(Duration.ofNanos(options.clientJitterNanos), seed * 0x9E3779B97F4A7C15L)
          .clientStart(Duration.ofNanos(options.clientStartNanos))
          .replicas(replicas)
          .router(ticker -> {
            int r = built.getAndIncrement();
            RouterListener listener = nats && options.syncIntervalNanos == 0 ? new DeliverAtOnce(warmTtft, syncs)
                : warmTtft;
            @Nullable RouterListener collisionsListener = null;
            if (options.collisions || options.deliverAtOnce != null) {
              if (collisions[0] == null) {
                Runnable deliver = !nats ? null : linger != null ? linger::deliverAllNow : () -> flushAndDeliver(syncs);
                collisions[0] = new Collisions(replicas, Math.max(1, options.syncIntervalNanos), options.concurrency,
                    workload, ticker, "placements".equals(options.deliverAtOnce) ? deliver : null,
                    "joins".equals(options.deliverAtOnce) ? deliver : null,
                    "cold".equals(options.deliverAtOnce) ? deliver : null, linger,
                    options.placementsLog ? System.out : null, String.format(Locale.ROOT, "kinds=%d %s N=%d seed=%d",
                        kinds, policyName, replicas, seed));
              }
              collisionsListener = collisions[0].forReplica(r);
            }
            RouterPolicy own = one != null ? one : policy.get();
            if (drift != null) {
              drift.policy(r, own);
            }
            if (options.shareOutcomes && own instanceof RouterListener l) {
              listener = new OutcomesToPeers(listener, l, outcomeListeners);
            }
            Router.Builder builder = Router.newBuilder().policy(own).ticker(ticker)
                .randomSeed(seed * 31 + r + options.routerSeed * 0x9E3779B97F4A7C15L)
                .sharedLoad(!nats ? SharedLoad.NONE : linger != null ? linger.port(r) : syncs[r]).listener(listener);
            if (linger != null) {
              linger.clock(ticker);
            }
            if (collisionsListener != null) {
              builder.listener(collisionsListener); // the router calls its listeners in order, each isolated
            }
            if (drift != null) {
              builder.listener(drift);
            }
            Router router = builder.build();
            if (nats && r == replicas - 1) {
              awaitMesh(syncs);
              bytesAtStart[0] = Arrays.stream(syncs).mapToLong(s -> s.stats().bytesSent()).sum();
            }
            return router;
          });
      if (linger != null) {
        simulation.timer(linger::due, linger::run);
      } else if (nats && options.syncIntervalNanos > 0) {
        simulation.periodic(Duration.ofNanos(options.syncIntervalNanos), () -> flushAndDeliver(syncs));
      }
      SimulationResult result;
      try {
        result = simulation.build().run();
      } finally {
        if (nats) {
          for (NatsLoadSync s : syncs) {
            s.close();
          }
        }
      }
      hit[run] = result.requestHitRate();
      ratio[run] = result.cachedTokenRatio();
      p50[run] = result.ttftMillis(0.50);
      p99[run] = result.ttftMillis(0.99);
      warm[run] = warmTtft.millis(0.99);
      imbalance[run] = maxOverMean(result.requestsPerWorker());
      if (nats) {
        long sent = Arrays.stream(syncs).mapToLong(s -> s.stats().bytesSent()).sum() - bytesAtStart[0];
        bytes[run] = (double) sent / options.requests;
      }
      if (collisions[0] != null) {
        collisions[0].addTo(totals);
      }
      if (drift != null) {
        drift.addTo(driftTotals);
      }
      if (options.perRun) {
        System.out.printf(Locale.ROOT, "run kinds=%d policy=%s N=%d sync=%s seed=%d hit=%.4f p99=%.1f warmP99=%.1f%n",
            kinds, policyName, replicas, sync, seed, hit[run], p99[run], warm[run]);
        System.out.printf(Locale.ROOT, "warm kinds=%d policy=%s N=%d sync=%s seed=%d ttftMicros=%s%n", kinds,
            policyName, replicas, sync, seed, warmTtft.micros());
        if (linger != null) {
          System.out.printf(Locale.ROOT, "publish kinds=%d policy=%s N=%d seed=%d %s%n", kinds, policyName, replicas,
              seed, linger.summary());
        }
      }
    }
    if (!driftTotals.isEmpty()) {
      Drift.print(driftTotals, System.out, String.format(Locale.ROOT, "kinds=%d %s N=%d sync=%s", kinds, policyName,
          replicas, sync));
    }
    if (totals.runs > 0) {
      totals.print(System.out, String.format(Locale.ROOT, "kinds=%d %s N=%d sync=%s", kinds, policyName, replicas,
          sync));
    }
    return new Row(kinds, policyName, replicas, sync, ArticleExperiment.median(hit), ArticleExperiment.median(ratio),
        ArticleExperiment.median(p50), ArticleExperiment.median(p99), ArticleExperiment.median(warm),
        Arrays.stream(warm).min().orElse(0), Arrays.stream(warm).max().orElse(0), ArticleExperiment.median(imbalance),
        ArticleExperiment.median(bytes));
  }

  /**
   * Times to first token of every request routed after the first {@code skip} (the cold-start wave: one request
   * per client, all sent within the client jitter of time zero), by the routers' tickers; the simulation is
   * single-threaded, so routings across replicas are counted in sending order.
   */
  static final class WarmTtft implements RouterListener {
    private final int skip;
    private final Map<Routing, Boolean> counted = new java.util.IdentityHashMap<>();
    private final long[] nanos;
    private int routed;
    private int size;

    WarmTtft(int skip, int requests) {
      this.skip = skip;
      this.nanos = new long[requests];
    }

    @Override
    public void onRouted(Routing routing) {
      if (routed++ >= skip) {
        counted.put(routing, Boolean.TRUE);
      }
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      if (counted.remove(routing) != null && size < nanos.length) {
        nanos[size++] = elapsedNanos;
      }
    }

    /** Every counted time to first token in whole microseconds, comma-separated, in routing order. */
    String micros() {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < size; i++) {
        sb.append(i == 0 ? "" : ",").append(nanos[i] / 1000);
      }
      return sb.toString();
    }

    /** The quantile {@code q} by nearest rank, in milliseconds; 0 if nothing was counted. */
    double millis(double q) {
      if (size == 0) {
        return 0;
      }
      long[] sorted = Arrays.copyOf(nanos, size);
      Arrays.sort(sorted);
      int rank = (int) Math.ceil(q * size);
      return sorted[Math.max(0, Math.min(size - 1, rank - 1))] / 1e6;
    }
  }

  /**
   * {@code --sync-interval-ms 0}, the counterfactual of a delivery that takes no time: every booking, first token
   * and close is published and applied by every peer before the simulation goes on (the listener runs after the
   * router's admission lock is released, on the simulation's only thread), so no replica ever decides without its
   * peers' earlier decisions.
   */
  static final class DeliverAtOnce implements RouterListener {
    private final RouterListener delegate;
    private final NatsLoadSync[] syncs;

    DeliverAtOnce(RouterListener delegate, NatsLoadSync[] syncs) {
      this.delegate = delegate;
      this.syncs = syncs;
    }

    @Override
    public void onRouted(Routing routing) {
      delegate.onRouted(routing);
      flushAndDeliver(syncs);
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      delegate.onFirstToken(routing, elapsedNanos);
      flushAndDeliver(syncs);
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      delegate.onClosed(routing, elapsedNanos);
      flushAndDeliver(syncs);
    }
  }

  /**
   * {@code --shared-policy true}: one policy instance for every replica, seen by the routers as a policy that learns
   * nothing from its peers' notes (it is not a {@code PeerLearning}), so that each selection is learned from once, in
   * its own {@code select}, not once more per peer from the notes on the bookings the sync delivers; the router's
   * callbacks (first tokens, closes) reach it as they would the policy itself.
   */
  static final class OneInstance implements RouterPolicy, RouterListener {
    private final RouterPolicy policy;
    private final RouterListener listener; // the policy itself when it listens, else a no-op

    OneInstance(RouterPolicy policy) {
      this.policy = policy;
      this.listener = policy instanceof RouterListener l ? l : new RouterListener() {};
    }

    @Override
    public int select(io.kvroute.Candidates candidates) {
      return policy.select(candidates);
    }

    @Override
    public String name() {
      return policy.name();
    }

    @Override
    public void onRouted(Routing routing) {
      listener.onRouted(routing);
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      listener.onFirstToken(routing, elapsedNanos);
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      listener.onClosed(routing, elapsedNanos);
    }

    @Override
    public void onNoWorker(io.kvroute.RouteRequest request) {
      listener.onNoWorker(request);
    }

    @Override
    public void onWorkerAdded(io.kvroute.Worker worker) {
      listener.onWorkerAdded(worker);
    }

    @Override
    public void onWorkerRemoved(io.kvroute.Worker worker) {
      listener.onWorkerRemoved(worker);
    }

    @Override
    public void onWorkerUpdated(io.kvroute.Worker worker) {
      listener.onWorkerUpdated(worker);
    }

    @Override
    public void onBookingsExpired(int count) {
      listener.onBookingsExpired(count);
    }

    @Override
    public void onHealthChanged(io.kvroute.WorkerId worker, io.kvroute.HealthState from, io.kvroute.HealthState to,
        String reason) {
      listener.onHealthChanged(worker, from, to, reason);
    }
  }

  /**
   * {@code --share-outcomes true}, a bound: every replica's policy also hears the other replicas' first tokens and
   * closes, at once and exactly (what it learns its time model from), as one shared policy instance would.
   */
  static final class OutcomesToPeers implements RouterListener {
    private final RouterListener delegate;
    private final RouterListener own;
    private final List<RouterListener> all;

    OutcomesToPeers(RouterListener delegate, RouterListener own, List<RouterListener> all) {
      this.delegate = delegate;
      this.own = own;
      this.all = all;
      all.add(own);
    }

    @Override
    public void onRouted(Routing routing) {
      delegate.onRouted(routing);
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      delegate.onFirstToken(routing, elapsedNanos);
      for (RouterListener l : all) {
        if (l != own) {
          l.onFirstToken(routing, elapsedNanos);
        }
      }
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      delegate.onClosed(routing, elapsedNanos);
      for (RouterListener l : all) {
        if (l != own) {
          l.onClosed(routing, elapsedNanos);
        }
      }
    }
  }

  /** The busiest worker's requests over the mean: 1.00 is a perfectly even spread. */
  static double maxOverMean(int[] perWorker) {
    double mean = Arrays.stream(perWorker).average().orElse(0);
    return mean == 0 ? 0 : Arrays.stream(perWorker).max().orElse(0) / mean;
  }

  /** Waits until every replica is connected and has heard from every other. */
  private static void awaitMesh(NatsLoadSync[] syncs) {
    long deadline = System.nanoTime() + 20_000_000_000L;
    for (NatsLoadSync s : syncs) {
      while (!s.isConnected() || s.peers().size() < syncs.length - 1) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("replica " + s.replicaName() + " did not see its peers: " + s);
        }
        LockSupport.parkNanos(1_000_000);
      }
    }
  }

  /** Publishes every replica's batch, then waits until each peer has received everything published so far. */
  static void flushAndDeliver(NatsLoadSync[] syncs) {
    flushAndDeliver(syncs, -1);
  }

  /**
   * Publishes replica {@code only}'s batch (every replica's if negative), then waits until each peer has received
   * everything published so far.
   */
  static void flushAndDeliver(NatsLoadSync[] syncs, int only) {
    boolean any = false;
    for (int i = 0; i < syncs.length; i++) {
      if (only < 0 || i == only) {
        any |= syncs[i].flush();
      }
    }
    if (!any) {
      return;
    }
    long[] sent = new long[syncs.length];
    for (int i = 0; i < syncs.length; i++) {
      sent[i] = syncs[i].stats().sequence();
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    for (int i = 0; i < syncs.length; i++) {
      for (int j = 0; j < syncs.length; j++) {
        if (i == j || (only >= 0 && j != only)) {
          continue;
        }
        String peer = syncs[j].replicaName();
        while (true) {
          SyncStats stats = syncs[i].stats();
          Long seen = stats.peers().get(peer);
          if (seen != null && seen >= sent[j]) {
            break;
          }
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException(syncs[i].replicaName() + " did not receive " + peer + "'s frames up to "
                + sent[j] + ": " + stats);
          }
          Thread.onSpinWait();
        }
      }
    }
  }

  static void print(List<Row> rows, Options options, PrintStream out) {
    out.println();
    out.printf(Locale.ROOT, "%d workers x %d blocks, concurrency %d, %d requests x %d runs (medians); replicas share"
            + " the requests round-robin; gaps are against the single router (N=1); client jitter %.1f ms, peers"
            + " see deltas within %.2f ms (virtual time); warm p99 leaves out the first %d requests (the cold start),"
            + " its range is over the runs%n",
        options.workers, options.blocks, options.concurrency, options.requests, options.runs,
        options.clientJitterNanos / 1e6, options.syncIntervalNanos / 1e6, options.concurrency);
    String header = String.format(Locale.ROOT, "%-5s | %-13s | %2s | %-4s | %8s | %8s | %-17s | %9s | %-13s | %-11s"
            + " | %8s | %8s", "kinds", "policy", "N", "sync", "hit rate", "hit gap", "TTFT p50 / p99 ms", "p99 gap",
        "warm p99 gap", "warm range", "max/mean", "B/req");
    out.println(header);
    out.println("-".repeat(header.length()));
    Map<String, Row> single = new LinkedHashMap<>();
    for (Row r : rows) {
      if (r.replicas == 1) {
        single.put(r.kinds + "/" + r.policy, r);
      }
    }
    for (Row r : rows) {
      Row base = single.get(r.kinds + "/" + r.policy);
      String hitGap = base == null || r.replicas == 1 ? "" : String.format(Locale.ROOT, "%+.1f pp",
          100 * (r.hitRate - base.hitRate));
      String p99Gap = base == null || r.replicas == 1 || base.ttftP99 == 0 ? "" : String.format(Locale.ROOT,
          "%+.1f%%", 100 * (r.ttftP99 - base.ttftP99) / base.ttftP99);
      String warmGap = base == null || r.replicas == 1 || base.warmP99 == 0 ? "" : String.format(Locale.ROOT,
          "%+.1f%%", 100 * (r.warmP99 - base.warmP99) / base.warmP99);
      out.printf(Locale.ROOT, "%-5d | %-13s | %2d | %-4s | %7.1f%% | %8s | %8.0f / %6.0f | %9s | %4.0f %8s | %4.0f-%-6.0f"
              + " | %8.2f | %8s%n", r.kinds, r.policy, r.replicas, r.sync, 100 * r.hitRate, hitGap, r.ttftP50,
          r.ttftP99, p99Gap, r.warmP99, warmGap, r.warmP99Min, r.warmP99Max, r.imbalance,
          r.sync.equals("nats") ? String.format(Locale.ROOT, "%.0f", r.syncBytesPerRequest) : "-");
    }
  }

  /** Command-line options. */
  static final class Options extends Cli.Options {
    static final String USAGE = String.join("\n",
        "usage: java -cp kvroute-examples.jar io.kvroute.examples.ReplicaExperiment [options]",
        "  --replicas 1,2,4          router replicas (requests spread round-robin)",
        "  --sync none,nats          load sharing: none, or over NATS",
        "  --policies kvAware,approximate,cacheAffinity",
        "  --kinds 2,7,12,24         prefix kinds",
        "  --workers 6  --concurrency 8  --requests 240  --runs 3  --blocks 585  --output-tokens 128  --seed 1",
        "  --sync-interval-ms 0.1    virtual time between flushes of the replicas' batched deltas (a peer learns",
        "                            of a booking up to this late; default: NatsLoadSync's batch delay; 0: every",
        "                            delta delivered to every peer before the simulation goes on, a counterfactual)",
        "  --publish linger          when a replica's deltas reach its peers: linger (default), NatsLoadSync's rule",
        "                            in virtual time: the first delta after a quiet period published at once, then",
        "                            polls every --sync-interval-ms until four find nothing; grid: every replica",
        "                            flushed every --sync-interval-ms, delivered at that instant (rounds 1-9)",
        "  --nats-latency-ms 0.1     with linger: from a publish to the peers applying it (wake-up, encoding and",
        "                            one NATS delivery)",
        "  --client-jitter-ms 1      each client waits uniformly up to this long before each request (0: clients",
        "                            send the instant their previous request finished, all starting at time 0)",
        "  --client-start-ms 0       clients send their first request uniformly within this span (0: after the",
        "                            client jitter, all within it of time 0)",
        "  --nats-url URL            use this NATS server (default: start nats-server on a free loopback port)",
        "  --shared-policy true      one policy instance for all replicas: its learned state shared at once (a bound",
        "                            for sharing it, not a deployment)",
        "  --share-outcomes true     every replica's policy also hears the others' first tokens and closes, at once",
        "                            (a bound for sharing what predictedTtft fits its time model to)",
        "  --per-run true            also print one line per run (seed, hit rate, p99, warm p99) and one with its",
        "                            warm TTFTs, for paired comparisons and pooled quantiles across runs",
        "  --collisions true         count the decisions two replicas made within one delivery window that collide",
        "                            (see Collisions) and the same pairs for one router; with --publish linger,",
        "                            unseen means delivered after the later routing",
        "  --placements-log true     with the collisions, one line per warm placement: replica, time, kind, worker,",
        "                            the workers its view had seen take the kind, the peers' bookings it had not",
        "  --deliver-at-once placements|joins|cold  an oracle: after each routing of that class (a new placement",
        "                            or copy; a join; one of the first --concurrency, the cold start), deliver every",
        "                            replica's deltas to every peer before going on",
        "  --estimate-unseen true    each router counts its own bookings younger than the sync interval once more",
        "                            per peer (NatsLoadSync.Builder.estimateUnseenPeerBookings; off by default)",
        "  --burst-sampling false    the routers estimate no unseen peer selections (NatsLoadSync viewDelay 0;",
        "                            on by default: the view delay is --nats-latency-ms)",
        "  --router-seed 0           varies the routers' own random seed (their tie-breaks and draws) and nothing",
        "                            else: the same workload and arrivals; for the noise floor of one router",
        "  --drift true              after each warm routing, how far apart the replicas' predictedTtft learned",
        "                            state is, per quantity (see Drift; a diagnosis, read by reflection)");

    int[] replicas = {1, 2, 4};
    List<String> syncModes = List.of("none", "nats");
    long syncIntervalNanos = NatsLoadSync.DEFAULT_BATCH_DELAY.toNanos();
    long clientJitterNanos = DEFAULT_CLIENT_JITTER.toNanos();
    long clientStartNanos;
    boolean linger = true;
    long natsLatencyNanos = DEFAULT_NATS_LATENCY.toNanos();
    @Nullable String natsUrl;
    boolean sharedPolicy;
    boolean shareOutcomes;
    boolean perRun;
    boolean collisions;
    boolean placementsLog;
    boolean estimateUnseen;
    boolean burstSampling = true;
    @Nullable String deliverAtOnce;
    boolean drift;
    long routerSeed;

    Options() {
      super(List.of("kvAware", "approximate", "cacheAffinity"));
    }

    static Options parse(String[] args) {
      Options o = new Options();
      o.read(args);
      return o;
    }

    @Override
    boolean option(String arg, String value) {
      switch (arg) {
        case "--replicas" -> replicas = Cli.positives(value, arg);
        case "--sync" -> {
          List<String> modes = List.of(value.split(","));
          for (String m : modes) {
            if (!m.equals("none") && !m.equals("nats")) {
              throw new IllegalArgumentException("--sync takes none and/or nats but got '" + m + "'");
            }
          }
          syncModes = modes;
        }
        case "--sync-interval-ms" -> syncIntervalNanos = Cli.millisAsNanos(value, arg, true);
        case "--publish" -> {
          if (!value.equals("linger") && !value.equals("grid")) {
            throw new IllegalArgumentException("--publish takes linger or grid but got '" + value + "'");
          }
          linger = value.equals("linger");
        }
        case "--nats-latency-ms" -> natsLatencyNanos = Cli.millisAsNanos(value, arg, true);
        case "--client-jitter-ms" -> clientJitterNanos = Cli.millisAsNanos(value, arg, true);
        case "--client-start-ms" -> clientStartNanos = Cli.millisAsNanos(value, arg, true);
        case "--nats-url" -> natsUrl = value;
        case "--shared-policy" -> sharedPolicy = Boolean.parseBoolean(value);
        case "--share-outcomes" -> shareOutcomes = Boolean.parseBoolean(value);
        case "--per-run" -> perRun = Boolean.parseBoolean(value);
        case "--collisions" -> collisions = Boolean.parseBoolean(value);
        case "--placements-log" -> {
          placementsLog = Boolean.parseBoolean(value);
          collisions |= placementsLog;
        }
        case "--estimate-unseen" -> estimateUnseen = Boolean.parseBoolean(value);
        case "--burst-sampling" -> burstSampling = Boolean.parseBoolean(value);
        case "--drift" -> drift = Boolean.parseBoolean(value);
        case "--router-seed" -> routerSeed = Cli.integer(value, arg);
        case "--deliver-at-once" -> {
          if (!List.of("placements", "joins", "cold").contains(value)) {
            throw new IllegalArgumentException("--deliver-at-once takes placements, joins or cold but got '" + value
                + "'");
          }
          deliverAtOnce = value;
        }
        default -> {
          return false;
        }
      }
      return true;
    }
  }
}
