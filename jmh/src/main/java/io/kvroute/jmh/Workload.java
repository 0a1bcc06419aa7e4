package io.kvroute.jmh;

import io.kvroute.BlockHasher;
import io.kvroute.EventStreamState;
import io.kvroute.KvEvent;
import io.kvroute.KvEventSink;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Seeded synthetic workloads shared by the benchmarks: prompts, workers and a populated index; stateless and
 * thread-safe.
 *
 * <p>Prompts are uniformly random token ids, so two prompts share no block unless one was built from the other.
 * Engine block hashes are random 64-bit values, as vLLM's sha256-derived ones are.
 */
final class Workload {
  /** Tokens per KV block, vLLM's default. */
  static final int BLOCK_SIZE = BlockHasher.DEFAULT_BLOCK_SIZE;
  /** Llama 3's vocabulary size: token ids need up to 17 bits, as in production traffic. */
  static final int VOCABULARY = 128_256;
  /** The seed of every workload, printed so that results can be reproduced. */
  static final long SEED = 0x6b76_726f_7574_6531L;
  /** The most distinct prompts a benchmark cycles through: enough that a large index is read from memory. */
  static final int MAX_PROMPTS = 512;

  private Workload() {}

  /** Returns {@code count} random token ids. */
  static int[] tokens(SplittableRandom random, int count) {
    int[] tokens = new int[count];
    for (int i = 0; i < count; i++) {
      tokens[i] = random.nextInt(VOCABULARY);
    }
    return tokens;
  }

  /** Returns {@code count} random engine block hashes. */
  static long[] engineHashes(SplittableRandom random, int count) {
    long[] hashes = new long[count];
    for (int i = 0; i < count; i++) {
      hashes[i] = random.nextLong();
    }
    return hashes;
  }

  /** Returns the ids {@code vllm-0 .. vllm-(count-1)}. */
  static List<WorkerId> workers(int count) {
    List<WorkerId> ids = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      ids.add(WorkerId.of("vllm-" + i));
    }
    return ids;
  }

  /**
   * Adds {@code count} workers ({@link #workers}) to {@code router} with live event streams, as an event subscriber
   * would report them: workers without entries are then known empty, not scored by the router's predictions.
   *
   * @return the workers' ids, in order
   */
  static List<WorkerId> liveWorkers(Router router, int count) {
    List<WorkerId> ids = workers(count);
    for (WorkerId id : ids) {
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    return ids;
  }

  /**
   * Stores {@code blocks} blocks into {@code sink} as sequences of {@code sequenceBlocks} blocks each (the last one
   * possibly shorter), sequence {@code s} on worker {@code s mod workers}, one {@link KvEvent.BlockStored} per
   * sequence.
   *
   * @return the tokens of the first {@code keep} whole sequences, at most as many as there are: prompts that hit
   */
  static int[][] populate(KvEventSink sink, List<WorkerId> workers, long blocks, int sequenceBlocks, int keep,
      SplittableRandom random) {
    List<int[]> kept = new ArrayList<>(keep);
    long left = blocks;
    for (int s = 0; left > 0; s++) {
      int n = (int) Math.min(sequenceBlocks, left);
      int[] tokens = tokens(random, n * BLOCK_SIZE);
      sink.apply(workers.get(s % workers.size()),
          KvEvent.BlockStored.of(engineHashes(random, n), null, tokens, BLOCK_SIZE));
      if (n == sequenceBlocks && kept.size() < keep) {
        kept.add(tokens);
      }
      left -= n;
    }
    return kept.toArray(int[][]::new);
  }

  /**
   * Returns the prompts a benchmark cycles through: for {@link Match#HIT} the first of the {@code indexed}
   * sequences, for {@link Match#MISS} fresh random ones; as many as {@code distinct} allows, rounded down to a power
   * of two so that a cursor can mask into them.
   */
  static int[][] prompts(Match match, int[][] indexed, int promptTokens, int distinct, SplittableRandom random) {
    int available = match == Match.HIT ? indexed.length : MAX_PROMPTS;
    int count = Math.min(distinct, available);
    if (count <= 0) {
      throw new IllegalStateException("no prompts: the index holds no whole sequence of " + promptTokens + " tokens");
    }
    count = Integer.highestOneBit(count);
    int[][] prompts = new int[count][];
    for (int i = 0; i < count; i++) {
      prompts[i] = match == Match.HIT ? indexed[i] : tokens(random, promptTokens);
    }
    return prompts;
  }
}
