package io.kvroute.jmh;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@link TokenizeBenchmark}'s operations timed by the calling thread's CPU time as well as wall time: on a machine
 * shared with other jobs, CPU time is inflated only by cache and core sharing, not by waiting for a core. The
 * remote round trip's CPU time excludes the simulator's threads (its wall time includes them). A program, not a
 * JMH benchmark; run from the repository root:
 *
 * <pre>
 * java -cp jmh/target/benchmarks.jar io.kvroute.jmh.TokenizeCpuTime [iterations]
 * </pre>
 */
public final class TokenizeCpuTime {
  private TokenizeCpuTime() {}

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    TokenizeBenchmark b = new TokenizeBenchmark();
    b.setUp();
    try {
      Map<String, Callable<Object>> ops = new LinkedHashMap<>();
      ops.put("localChat", b::localChat);
      ops.put("localRenderOnly", b::localRenderOnly);
      ops.put("localEncodeOnly", b::localEncodeOnly);
      ops.put("remoteTokenize", b::remoteTokenize);
      ops.put("multiTurnCached", b::multiTurnCached);
      ops.put("multiTurnUncached", b::multiTurnUncached);
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      for (int round = 0; round < 2; round++) { // the first round warms up
        for (Map.Entry<String, Callable<Object>> op : ops.entrySet()) {
          long cpu0 = mx.getCurrentThreadCpuTime();
          long wall0 = System.nanoTime();
          for (int i = 0; i < n; i++) {
            op.getValue().call();
          }
          long wall = System.nanoTime() - wall0;
          long cpu = mx.getCurrentThreadCpuTime() - cpu0;
          if (round == 1) {
            System.out.printf(Locale.ROOT, "%-18s cpu %8.1f us/op   wall %8.1f us/op%n", op.getKey(),
                cpu / 1e3 / n, wall / 1e3 / n);
          }
        }
      }
    } finally {
      b.tearDown();
    }
  }
}
