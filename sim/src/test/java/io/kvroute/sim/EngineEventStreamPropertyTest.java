package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvIndexer;
import io.kvroute.PrefixMatch;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random workloads against small caches: the engine's KV event stream, applied to the core's {@link KvIndexer},
 * must describe exactly the blocks the engine can hit, after every step; and the engine's block accounting must
 * return every block to the free queue.
 */
class EngineEventStreamPropertyTest {
  private static final WorkerId WORKER = WorkerId.of("engine");

  static Stream<Arguments> seeds() {
    return LongStream.range(0, 40).mapToObj(seed -> Arguments.of(seed * 0x9e3779b97f4a7c15L + 17));
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void eventStreamMirrorsTheCache(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int blockSize = 1 + random.nextInt(16);
    int numBlocks = 8 + random.nextInt(40);
    SimEngineConfig config = SimEngineConfig.newBuilder()
        .blockSize(blockSize)
        .numBlocks(numBlocks)
        .maxNumBatchedTokens(8 + random.nextInt(200))
        .maxNumSeqs(1 + random.nextInt(6))
        .timing(TimingModel.ZERO)
        .engineHashSeed(random.nextLong())
        .build();
    KvIndexer indexer = KvIndexer.newBuilder().blockSize(blockSize).build();
    SimEngine engine = new SimEngine(config, events -> indexer.applyAll(WORKER, events));
    EngineHasher hasher = new EngineHasher(config.engineHashSeed());

    // A few shared prefixes, so hits, duplicates and evictions all happen.
    int[][] prefixes = new int[1 + random.nextInt(5)][];
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = randomTokens(random, random.nextInt(numBlocks * blockSize / 2 + 1));
    }
    List<int[]> probes = new ArrayList<>();
    int capacity = numBlocks * blockSize;
    int submitted = 0;
    for (int step = 0; step < 400; step++) {
      if (random.nextInt(3) == 0 && submitted < 60) {
        int[] prefix = prefixes[random.nextInt(prefixes.length)];
        int tailLength = 1 + random.nextInt(3 * blockSize);
        int[] prompt = concat(prefix, randomTokens(random, tailLength));
        int maxTokens = 1 + random.nextInt(2 * blockSize);
        if (engine.validate(prompt.length, maxTokens) == null && prompt.length + maxTokens <= capacity) {
          engine.submit(prompt, maxTokens, random.nextLong(), new EngineRequest.Observer() {});
          probes.add(prompt);
          submitted++;
        }
      }
      if (engine.hasWork()) {
        SimEngine.Step s = engine.schedule();
        engine.complete(s);
      }
      if (random.nextInt(50) == 0 && !engine.hasWork()) {
        assertTrue(engine.resetPrefixCache());
      }
      for (int[] probe : probes.subList(Math.max(0, probes.size() - 5), probes.size())) {
        assertEquals(engineHits(engine, hasher, probe, blockSize), indexedBlocks(indexer, probe),
            "index and engine disagree at step " + step);
      }
    }
    for (int i = 0; i < 100_000 && engine.hasWork(); i++) {
      engine.complete(engine.schedule());
    }
    assertEquals(numBlocks, engine.freeBlocks(), "every block returns to the free queue");
    for (int[] probe : probes) {
      assertEquals(engineHits(engine, hasher, probe, blockSize), indexedBlocks(indexer, probe));
    }
  }

  /** Consecutive leading full blocks of {@code tokens} the engine holds (without vLLM's last-token cap). */
  private static int engineHits(SimEngine engine, EngineHasher hasher, int[] tokens, int blockSize) {
    int blocks = tokens.length / blockSize;
    long parent = 0;
    for (int j = 0; j < blocks; j++) {
      long h = hasher.hash(j > 0, parent, tokens, j * blockSize, blockSize);
      if (engine.pool().lookup(h) < 0) {
        return j;
      }
      parent = h;
    }
    return blocks;
  }

  private static int indexedBlocks(KvIndexer indexer, int[] tokens) {
    long[] hashes = indexer.hasher().sequenceHashes(tokens);
    return indexer.findMatches(hashes).getOrDefault(WORKER, PrefixMatch.NONE).blocks();
  }

  private static int[] randomTokens(SplittableRandom random, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = 16 + random.nextInt(1000);
    }
    return t;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
