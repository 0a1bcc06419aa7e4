package io.kvroute.jmh;

import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.WorkerId;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * The latency of one routing decision, {@link Router#select(int[])} followed by {@link Routing#close()}, with the
 * default KV-aware policy over a populated index.
 *
 * <p>The index holds {@code indexedBlocks} blocks in sequences as long as the prompt, spread round-robin over the
 * workers. A {@link Match#HIT} prompt is one of those sequences, so one worker holds all of it and the match walks
 * every block; a {@link Match#MISS} prompt shares no block with the index, so the match stops at the first. Each
 * thread cycles through up to 512 distinct prompts ({@code distinctPrompts}), so that a 1M-block index is read
 * from memory as in production, not from a warm cache.
 *
 * <p>The target configuration, single-threaded and on two threads, with allocation per call:
 * <pre>
 * java -jar jmh/target/benchmarks.jar SelectBenchmark -p promptTokens=2048 -p workers=64 -p indexedBlocks=1000000 \
 *     -t 1 -prof gc -f 1 -wi 3 -w 1s -i 5 -r 1s
 * java -jar jmh/target/benchmarks.jar SelectBenchmark -p promptTokens=2048 -p workers=64 -p indexedBlocks=1000000 \
 *     -t 2 -prof gc -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 * Without {@code -p} options it runs the whole matrix: 512 / 2,048 / 8,192-token prompts, 8 / 64 / 1,024 workers,
 * 10k and 1M indexed blocks, hit and miss.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class SelectBenchmark {
  @Param({"512", "2048", "8192"})
  int promptTokens;

  @Param({"8", "64", "1024"})
  int workers;

  @Param({"10000", "1000000"})
  int indexedBlocks;

  @Param({"HIT", "MISS"})
  Match match;

  /**
   * How many distinct prompts the threads cycle through (rounded down to a power of two, at most 512, fewer when the
   * index holds fewer sequences). 1 keeps the prompt's index entries in cache, which isolates compute from memory
   * latency.
   */
  @Param({"512"})
  int distinctPrompts;

  Router router;
  int[][] prompts;

  @Setup(Level.Trial)
  public void setUp() {
    router = Router.newBuilder().randomSeed(Workload.SEED).build();
    List<WorkerId> ids = Workload.liveWorkers(router, workers);
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    int[][] indexed = Workload.populate(router.eventSink(), ids, indexedBlocks, promptTokens / Workload.BLOCK_SIZE,
        Workload.MAX_PROMPTS, random);
    prompts = Workload.prompts(match, indexed, promptTokens, distinctPrompts, random);
  }

  @Benchmark
  public WorkerId select(PromptCursor cursor) {
    int[] prompt = prompts[cursor.next(prompts.length - 1)];
    try (Routing routing = router.select(prompt)) {
      return routing.workerId();
    }
  }
}
