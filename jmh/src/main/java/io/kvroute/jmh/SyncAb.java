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
 * {@code nats-server}, which must be installed), {@code NOOP} (as {@code NONE}, with a port that does nothing: what
 * the router's own side of sharing costs), {@code NOOP3} (the same port claiming 3 peers and a 0.1 ms delivery
 * window: what counting the router's own young bookings again for its peers' unseen ones costs).
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
    List<SharedLoadBenchmark> benches = new ArrayList<>();
    for (int i = 5; i < args.length; i++) {
      SharedLoadBenchmark b = new SharedLoadBenchmark();
      if (args[i].equals("NOOP") || args[i].equals("NOOP3")) {
        b.sync = SharedLoadBenchmark.Sync.NONE;
        b.portOverride = args[i].equals("NOOP") ? noop(0, 0) : noop(3, NatsLoadSync.DEFAULT_BATCH_DELAY.toNanos());
      } else {
        b.sync = SharedLoadBenchmark.Sync.valueOf(args[i]);
      }
      b.policy = policy;
      b.promptTokens = 2048;
      b.workers = 16;
      b.hookSpacing = 1000;
      b.peerRate = peerRate;
      b.warmSelections = warmSelections;
      b.setUp();
      names.add(args[i]);
      benches.add(b);
    }
    PromptCursor[] cursors = new PromptCursor[benches.size()];
    SharedLoadBenchmark.CpuClock clock = new SharedLoadBenchmark.CpuClock();
    for (int k = 0; k < cursors.length; k++) {
      cursors[k] = new PromptCursor();
    }
    int warm = rounds / 5;
    double[][] results = new double[benches.size()][rounds - warm];
    try {
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < benches.size(); k++) {
          int which = r % 2 == 0 ? k : benches.size() - 1 - k;
          SharedLoadBenchmark b = benches.get(which);
          long cpu0 = MX.getCurrentThreadCpuTime();
          for (int i = 0; i < reps; i++) {
            b.select(cursors[which], clock);
          }
          double v = (double) (MX.getCurrentThreadCpuTime() - cpu0) / reps;
          if (r >= warm) {
            results[which][r - warm] = v;
          }
        }
      }
    } finally {
      for (SharedLoadBenchmark b : benches) {
        b.tearDown();
      }
    }
    System.out.printf(Locale.ROOT, "%s, peer %d req/s, %d rounds of %d, load %.1f%n", policy, peerRate, rounds, reps,
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    for (int k = 0; k < benches.size(); k++) {
      double[] s = results[k].clone();
      Arrays.sort(s);
      double mean = Arrays.stream(s).average().orElse(0);
      System.out.printf(Locale.ROOT,
          "%-6s thread cpu per request: best %8.1f  p25 %8.1f  median %8.1f  mean %8.1f ns%n", names.get(k), s[0],
          s[s.length / 4], s[s.length / 2], mean);
    }
    if (benches.size() == 2) {
      double[] d = new double[rounds - warm];
      for (int r = 0; r < d.length; r++) {
        d[r] = results[1][r] - results[0][r];
      }
      Arrays.sort(d);
      System.out.printf(Locale.ROOT, "%s - %s per round: median %+.1f ns (p25 %+.1f, p75 %+.1f)%n", names.get(1),
          names.get(0), d[d.length / 2], d[d.length / 4], d[3 * d.length / 4]);
    }
  }

  /**
   * A port that shares nothing but claims {@code peers} peers seeing this replica's bookings {@code window} ns late,
   * so that the router counts its own young bookings again (what that estimate costs a selection).
   */
  private static SharedLoad noop(int peers, long window) {
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
