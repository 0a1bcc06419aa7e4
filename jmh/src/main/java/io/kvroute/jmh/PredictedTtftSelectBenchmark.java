package io.kvroute.jmh;

import io.kvroute.EngineLoad;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.WorkerId;
import io.kvroute.testkit.FakeTicker;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
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

/**
 * The latency of one routing decision with {@link RouterPolicy#predictedTtft()} once it has learned: {@link
 * Router#select(int[])} then {@link Routing#close()}, where every worker has {@code active} requests decoding, its
 * time model and service time fitted, its cache known full and its pinned-block error measured, so that the memory
 * wait, its probability and the rest of the cost run for every candidate.
 *
 * <p>Setup learns on a {@link FakeTicker}: 4,096 requests from {@code 4 x workers} closed-loop clients, each with its
 * first token 20 ms after it is routed and its close 1 s after that, and engine reports once a second (the first with
 * a request waiting and the cache at 99 %, which marks it full; then 95 % with none waiting, which measures the
 * estimate's error). Then {@code active} requests per worker are left open, past their first token, and each measured
 * selection advances the clock by 1 us. The prompts hit: each is one of the indexed sequences (2,048 tokens).
 *
 * <pre>
 * java -jar jmh/target/benchmarks.jar PredictedTtftSelectBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class PredictedTtftSelectBenchmark {
  @Param({"8", "64"})
  int workers;

  @Param({"2"})
  int active;

  @Param({"predictedTtft", "kvAware"})
  String policy;

  static final int PROMPT_TOKENS = 2048;
  static final long INDEXED_BLOCKS = 100_000;
  static final int LEARNED_REQUESTS = 4096;

  Router router;
  FakeTicker ticker;
  int[][] prompts;
  final List<Routing> open = new ArrayList<>();

  @Setup(Level.Trial)
  public void setUp() {
    ticker = new FakeTicker();
    RouterPolicy p = policy.equals("kvAware") ? RouterPolicy.kvAware() : RouterPolicy.predictedTtft();
    router = Router.newBuilder().policy(p).ticker(ticker).randomSeed(Workload.SEED).build();
    List<WorkerId> ids = Workload.liveWorkers(router, workers);
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    int[][] indexed = Workload.populate(router.eventSink(), ids, INDEXED_BLOCKS, PROMPT_TOKENS / Workload.BLOCK_SIZE,
        Workload.MAX_PROMPTS, random);
    prompts = Workload.prompts(Match.HIT, indexed, PROMPT_TOKENS, Workload.MAX_PROMPTS, random);
    // Learning, on virtual time: 4 x workers clients in a closed loop, each request's first token 20 ms after it is
    // routed and its close 1 s after that, when its client sends the next.
    java.util.PriorityQueue<long[]> due = new java.util.PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
    List<Routing> routings = new ArrayList<>();
    int clients = 4 * workers;
    for (int k = 0; k < clients; k++) {
      due.add(new long[] {k * 1_000_000L, -1, k}); // a send, staggered by 1 ms
    }
    int sent = 0;
    long lastReport = 0;
    boolean reported = false;
    while (sent < LEARNED_REQUESTS) {
      long[] e = due.poll();
      ticker.advanceNanos(Math.max(0, e[0] - ticker.read()));
      if (e[1] == -1) {
        routings.add(router.select(prompts[sent++ & (prompts.length - 1)]));
        due.add(new long[] {ticker.read() + 20_000_000L, 1, routings.size() - 1});
      } else if (e[1] == 1) {
        routings.get((int) e[2]).firstToken();
        due.add(new long[] {ticker.read() + 1_000_000_000L, 2, e[2]});
      } else {
        routings.get((int) e[2]).close();
        due.add(new long[] {ticker.read(), -1, 0});
      }
      if (ticker.read() - lastReport >= 1_000_000_000L) {
        lastReport = ticker.read();
        for (WorkerId id : ids) {
          router.updateLoad(id, new EngineLoad(4, reported ? 0 : 1, reported ? 0.95 : 0.99, ticker.read()));
        }
        reported = true;
      }
    }
    for (Routing r : routings) {
      if (!r.isClosed()) {
        r.close();
      }
    }
    for (int i = 0; i < active * workers; i++) {
      Routing r = router.select(prompts[(i * 7) & (prompts.length - 1)]);
      r.firstToken();
      open.add(r);
    }
    ticker.advance(java.time.Duration.ofMillis(20));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    open.forEach(Routing::close);
  }

  @Benchmark
  public WorkerId select(PromptCursor cursor) {
    int[] prompt = prompts[cursor.next(prompts.length - 1)];
    ticker.advanceNanos(1_000); // 1 us of virtual time per selection: arrivals a million a second
    try (Routing routing = router.select(prompt)) {
      return routing.workerId();
    }
  }
}
