package io.kvroute.jmh;

import io.kvroute.KvIndexer;
import io.kvroute.PrefixMatch;
import io.kvroute.WorkerId;
import java.util.Map;
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
 * The index lookup alone, {@link KvIndexer#findMatches(long[])}, on prompts already hashed: the part of
 * {@link SelectBenchmark} that reads the index, so that select's cost can be split into hashing
 * ({@link HashingBenchmark}), matching (this) and admission (the rest).
 *
 * <p>{@code findMatches} allocates its result map; the router's internal path matches the same way into reused
 * per-thread arrays, so compare this benchmark's time, not its allocation. Workload as in {@link SelectBenchmark}.
 * <pre>
 * java -jar jmh/target/benchmarks.jar MatchBenchmark -p promptTokens=2048 -p workers=64 -p indexedBlocks=1000000 \
 *     -p distinctPrompts=1,512 -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@State(Scope.Benchmark)
public class MatchBenchmark {
  @Param({"2048"})
  int promptTokens;

  @Param({"64"})
  int workers;

  @Param({"10000", "1000000"})
  int indexedBlocks;

  @Param({"HIT", "MISS"})
  Match match;

  /** As in {@link SelectBenchmark#distinctPrompts}. */
  @Param({"512"})
  int distinctPrompts;

  KvIndexer indexer;
  long[][] hashes;

  @Setup(Level.Trial)
  public void setUp() {
    indexer = KvIndexer.newBuilder().blockSize(Workload.BLOCK_SIZE).build();
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    int[][] indexed = Workload.populate(indexer, Workload.workers(workers), indexedBlocks,
        promptTokens / Workload.BLOCK_SIZE, Workload.MAX_PROMPTS, random);
    int[][] prompts = Workload.prompts(match, indexed, promptTokens, distinctPrompts, random);
    hashes = new long[prompts.length][];
    for (int i = 0; i < prompts.length; i++) {
      hashes[i] = indexer.hasher().sequenceHashes(prompts[i]);
    }
  }

  @Benchmark
  public Map<WorkerId, PrefixMatch> findMatches(PromptCursor cursor) {
    return indexer.findMatches(hashes[cursor.next(hashes.length - 1)]);
  }
}
