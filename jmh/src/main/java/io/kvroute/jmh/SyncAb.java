package io.kvroute.jmh;

import io.kvroute.RemoteLoad;
import io.kvroute.SharedLoad;
import io.kvroute.WorkerId;
import io.kvroute.sync.nats.NatsLoadSync;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.IntToDoubleFunction;

/**
 * Sync off against sync on in one JVM, timed by the measured thread's CPU time: {@link SharedLoadBenchmark}'s
 * variants (its setup, its peer client and its {@code select} operation, no JMH) run in short interleaved rounds in
 * alternating order, so that both see the same machine, and each reports its best, 25th-percentile and median round
 * in ns of the measured thread's CPU per request (select, first token, close); not thread-safe (a command-line
 * program).
 *
 * <pre>
 * mvn -B -q -pl jmh -am package -DskipTests
 * java -Xms2g -Xmx2g -cp jmh/target/benchmarks.jar io.kvroute.jmh.SyncAb approximate 2000 100000 60 20000 NONE NATS
 * </pre>
 * Arguments: the policy ({@code kvAware} or {@code approximate}), the peer's requests per second, the warm-up
 * selections of each variant (see {@link SharedLoadBenchmark#warmSelections}), rounds, requests per round, then the
 * variants: {@code NONE} (one router routing both clients), {@code NATS} (two replicas over a real
 * {@code nats-server}, which must be installed), {@code NATSP} (as {@code NATS}, with the peer replica in a JVM of
 * its own, {@link SyncPeer}: what the sync costs with the peer's work out of this process, as in a deployment;
 * {@code -Dbench.peerCpus} and {@code -Dbench.natsUrl} as for {@link SharedLoadBenchmark#peer}), {@code NOOP} (as {@code NONE}, with a port that does nothing: what
 * the router's own side of sharing costs), {@code NOOP3} (the same port claiming 3 peers and a 0.1 ms delivery
 * window: what counting the router's own young bookings again for its peers' unseen ones costs); each may be written
 * {@code label=VARIANT@classpath} to run that variant on another build's classes (child first, as
 * {@link SameJvmAb} does; for example {@code base=NATS@/tmp/base/benchmarks.jar new=NATS@jmh/target/benchmarks.jar}),
 * and every variant is compared with the first, paired by round. With {@code -Dbench.measuredCpu=0} the measuring
 * thread runs alone on CPU 0 ({@link Pinning}). {@code PORT:class:argument} routes as {@code NONE} through a
 * {@link SharedLoad} of that class made with its public {@code (String)} constructor (for experiments with a port).
 */
public final class SyncAb {
  private static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

  private SyncAb() {}

  /**
   * Runs the comparison.
   *
   * @param args see the class description
   * @throws Exception if a variant cannot be set up
   */
  public static void main(String[] args) throws Exception {
    String policy = args[0];
    int peerRate = Integer.parseInt(args[1]);
    int warmSelections = Integer.parseInt(args[2]);
    int rounds = Integer.parseInt(args[3]);
    int reps = Integer.parseInt(args[4]);
    List<String> names = new ArrayList<>();
    List<IntToDoubleFunction> variants = new ArrayList<>();
    for (int i = 5; i < args.length; i++) {
      // [label=]VARIANT[@classpath]: a classpath loads that build's classes (child first) for this variant
      String spec = args[i];
      String label = spec.contains("=") ? spec.substring(0, spec.indexOf('=')) : spec.split("@", 2)[0];
      String rest = spec.contains("=") ? spec.substring(spec.indexOf('=') + 1) : spec;
      String[] variantAndPath = rest.split("@", 2);
      IntToDoubleFunction v;
      if (variantAndPath.length == 2) {
        ClassLoader loader = new SameJvmAb.ChildFirst(SameJvmAb.urls(variantAndPath[1]),
            SyncAb.class.getClassLoader().getParent());
        v = (IntToDoubleFunction) loader.loadClass(Variant.class.getName())
            .getConstructor(String.class, int.class, int.class, String.class)
            .newInstance(policy, peerRate, warmSelections, variantAndPath[0]);
      } else {
        v = new Variant(policy, peerRate, warmSelections, variantAndPath[0]);
      }
      names.add(label);
      variants.add(v);
    }
    String pinned = Pinning.measuredThreadAlone();
    if (!pinned.isEmpty()) {
      System.out.println(pinned);
    }
    int warm = rounds / 5;
    double[][] results = new double[variants.size()][rounds - warm];
    try {
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < variants.size(); k++) {
          int which = r % 2 == 0 ? k : variants.size() - 1 - k;
          double v = variants.get(which).applyAsDouble(reps);
          if (r >= warm) {
            results[which][r - warm] = v;
          }
        }
      }
    } finally {
      for (IntToDoubleFunction v : variants) {
        ((AutoCloseable) v).close();
      }
    }
    System.out.printf(Locale.ROOT, "%s, peer %d req/s, %d rounds of %d, load %.1f%n", policy, peerRate, rounds, reps,
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    for (int k = 0; k < variants.size(); k++) {
      double[] s = results[k].clone();
      Arrays.sort(s);
      double mean = Arrays.stream(s).average().orElse(0);
      System.out.printf(Locale.ROOT,
          "%-8s thread cpu per request: best %8.1f  p25 %8.1f  median %8.1f  mean %8.1f ns%n", names.get(k), s[0],
          s[s.length / 4], s[s.length / 2], mean);
    }
    // every variant against the first, paired by round
    for (int k = 1; k < variants.size(); k++) {
      double[] d = new double[rounds - warm];
      for (int r = 0; r < d.length; r++) {
        d[r] = results[k][r] - results[0][r];
      }
      Arrays.sort(d);
      System.out.printf(Locale.ROOT, "%s - %s per round: median %+.1f ns (p25 %+.1f, p75 %+.1f)%n", names.get(k),
          names.get(0), d[d.length / 2], d[d.length / 4], d[3 * d.length / 4]);
    }
  }

  /**
   * One variant: a {@link SharedLoadBenchmark} set up as named; {@link #applyAsDouble} runs a round of requests and
   * returns the measured thread's CPU ns per request. Public for the class loaders of builds compared side by side;
   * not thread-safe.
   */
  public static final class Variant implements IntToDoubleFunction, AutoCloseable {
    private final SharedLoadBenchmark bench = new SharedLoadBenchmark();
    private final PromptCursor cursor = new PromptCursor();
    private final SharedLoadBenchmark.CpuClock clock = new SharedLoadBenchmark.CpuClock();

    /**
     * Sets the variant up (its routers, warm-up, peer).
     *
     * @param variant {@code NONE}, {@code NATS}, {@code NATSP}, {@code NOOP} or {@code NOOP3}
     * @throws Exception if it cannot be set up
     */
    public Variant(String policy, int peerRate, int warmSelections, String variant) throws Exception {
      SharedLoadBenchmark b = bench;
      if (variant.startsWith("PORT:")) { // PORT:class:argument, a SharedLoad with a public (String) constructor
        String[] parts = variant.split(":", 3);
        b.sync = SharedLoadBenchmark.Sync.NONE;
        b.portOverride = (SharedLoad) Class.forName(parts[1]).getConstructor(String.class)
            .newInstance(parts.length > 2 ? parts[2] : "");
      } else if (variant.equals("NOOP") || variant.equals("NOOP3")) {
        b.sync = SharedLoadBenchmark.Sync.NONE;
        b.portOverride = variant.equals("NOOP") ? noop(0, 0) : noop(3, NatsLoadSync.DEFAULT_BATCH_DELAY.toNanos());
      } else if (variant.equals("NATSP")) {
        b.sync = SharedLoadBenchmark.Sync.NATS;
        b.peer = SharedLoadBenchmark.PeerLayout.PROCESS;
      } else {
        b.sync = SharedLoadBenchmark.Sync.valueOf(variant);
      }
      b.policy = policy;
      b.promptTokens = 2048;
      b.workers = 16;
      b.hookSpacing = 1000;
      b.peerRate = peerRate;
      b.warmSelections = warmSelections;
      b.setUp();
    }

    @Override
    public double applyAsDouble(int reps) {
      long cpu0 = MX.getCurrentThreadCpuTime();
      for (int i = 0; i < reps; i++) {
        bench.select(cursor, clock);
      }
      return (double) (MX.getCurrentThreadCpuTime() - cpu0) / reps;
    }

    @Override
    public void close() throws InterruptedException {
      bench.tearDown();
    }
  }

  /**
   * A port that shares nothing but claims {@code peers} peers seeing this replica's bookings {@code window} ns late,
   * so that the router counts its own young bookings again (what that estimate costs a selection).
   */
  static SharedLoad noop(int peers, long window) {
    return new SharedLoad() {
      @Override
      public void start(RemoteLoad view) {}

      @Override
      public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
          boolean predicted) {}

      @Override
      public void firstToken(long bookingId) {}

      @Override
      public void closed(long bookingId) {}

      @Override
      public int peerCount() {
        return peers;
      }

      @Override
      public long deliveryWindowNanos() {
        return window;
      }
    };
  }
}
