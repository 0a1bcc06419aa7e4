package io.kvroute.jmh;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@link TokenizeBenchmark}'s operations timed by the calling thread's CPU time, the whole process's CPU time and
 * wall time: on a machine shared with other jobs, CPU time is inflated only by cache and core sharing, not by
 * waiting for a core. The remote round trips' thread CPU time excludes the simulator's and OkHttp's threads; the
 * process CPU time includes them (the simulator runs in this process), and JIT and GC threads too. A program, not a
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
      ops.put("localChatNative", b::localChatNative);
      ops.put("localRenderOnly", b::localRenderOnly);
      ops.put("localEncodeOnly", b::localEncodeOnly);
      ops.put("localEncodeOnlyNative", b::localEncodeOnlyNative);
      ops.put("remoteTokenize", b::remoteTokenize);
      ops.put("remoteTokenizeRealJava", b::remoteTokenizeRealJava);
      ops.put("remoteTokenizeRealNative", b::remoteTokenizeRealNative);
      ops.put("multiTurnCached", b::multiTurnCached);
      ops.put("multiTurnUncached", b::multiTurnUncached);
      ThreadMXBean mx = ManagementFactory.getThreadMXBean();
      com.sun.management.OperatingSystemMXBean os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      for (int round = 0; round < 2; round++) { // the first round warms up
        for (Map.Entry<String, Callable<Object>> op : ops.entrySet()) {
          long cpu0 = mx.getCurrentThreadCpuTime();
          long process0 = os.getProcessCpuTime();
          long wall0 = System.nanoTime();
          for (int i = 0; i < n; i++) {
            op.getValue().call();
          }
          long wall = System.nanoTime() - wall0;
          long cpu = mx.getCurrentThreadCpuTime() - cpu0;
          long process = os.getProcessCpuTime() - process0;
          if (round == 1) {
            System.out.printf(Locale.ROOT, "%-26s thread cpu %8.1f us/op   process cpu %8.1f us/op   wall %8.1f"
                + " us/op%n", op.getKey(), cpu / 1e3 / n, process / 1e3 / n, wall / 1e3 / n);
          }
        }
      }
    } finally {
      b.tearDown();
    }
  }
}
