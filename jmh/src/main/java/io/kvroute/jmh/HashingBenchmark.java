package io.kvroute.jmh;

import io.kvroute.BlockHasher;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * The speed of prompt hashing, {@link BlockHasher#sequenceHashes(int[], int, String, long[][], long[])}: XXH3 over
 * each 16-token block, chained into sequence hashes, written into a reused array (the router's allocation-free path).
 *
 * <p>The primary score is prompts hashed per microsecond; the secondary {@code tokens} score is tokens hashed per
 * microsecond, a thousand times the tokens per nanosecond the target is stated in.
 * <pre>
 * java -jar jmh/target/benchmarks.jar HashingBenchmark -prof gc -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class HashingBenchmark {
  static final int PROMPTS = 64;
  private static final BlockHasher HASHER = BlockHasher.of(Workload.BLOCK_SIZE);

  @Param({"512", "2048", "8192"})
  int promptTokens;

  int[][] prompts;
  long[] out;
  int next;

  @Setup(Level.Trial)
  public void setUp() {
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    prompts = new int[PROMPTS][];
    for (int i = 0; i < PROMPTS; i++) {
      prompts[i] = Workload.tokens(random, promptTokens);
    }
    out = new long[promptTokens / Workload.BLOCK_SIZE];
  }

  /** Counts the tokens hashed; JMH reports them per unit of time. */
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  @State(Scope.Thread)
  public static class Tokens {
    public long tokens;
  }

  /** Hashes a prompt the way the router does: local hashes chained into sequence hashes. */
  @Benchmark
  public long sequenceHashes(Tokens counter) {
    int[] prompt = prompts[next++ & (PROMPTS - 1)];
    int blocks = HASHER.sequenceHashes(prompt, prompt.length, null, null, out);
    counter.tokens += prompt.length;
    return out[blocks - 1];
  }

  /**
   * Only the local hash of each block (XXH3 over its 64 bytes of tokens), without the chaining: the difference from
   * {@link #sequenceHashes} is the cost of the chain.
   */
  @Benchmark
  public long localHashes(Tokens counter) {
    int[] prompt = prompts[next++ & (PROMPTS - 1)];
    long folded = 0;
    for (int offset = 0; offset + Workload.BLOCK_SIZE <= prompt.length; offset += Workload.BLOCK_SIZE) {
      folded ^= HASHER.localHash(prompt, offset, null, null);
    }
    counter.tokens += prompt.length;
    return folded;
  }
}
