package io.kvroute.events.zmq;

import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A toy engine producing realistic event batches from a seeded generator: stores of block chains (with parents),
 * removals of held blocks, rare clears; not thread-safe.
 */
final class EngineModel {
  private final SplittableRandom random;
  private final int blockSize;
  private final int capacity;
  private final List<Long> held = new ArrayList<>();
  private final List<int[]> prompts = new ArrayList<>();
  private long nextHash;

  EngineModel(long seed, int blockSize, int capacity) {
    this.random = new SplittableRandom(seed);
    this.blockSize = blockSize;
    this.capacity = capacity;
    this.nextHash = seed * 1_000_003L + 1;
  }

  /** The prompts stored so far (whole block multiples). */
  List<int[]> prompts() {
    return prompts;
  }

  List<KvEvent> nextBatch() {
    List<KvEvent> batch = new ArrayList<>();
    int events = 1 + random.nextInt(3);
    for (int e = 0; e < events; e++) {
      int roll = random.nextInt(100);
      if (roll < 65 || held.isEmpty()) {
        int blocks = 1 + random.nextInt(4);
        int[] tokens = new int[blocks * blockSize];
        for (int i = 0; i < tokens.length; i++) {
          tokens[i] = random.nextInt(50_000);
        }
        long[] hashes = new long[blocks];
        for (int i = 0; i < blocks; i++) {
          hashes[i] = nextHash++ * 0x9E3779B97F4A7C15L;
          held.add(hashes[i]);
        }
        prompts.add(tokens);
        batch.add(BlockStored.of(hashes, null, tokens, blockSize));
        while (held.size() > capacity) {
          batch.add(BlockRemoved.of(held.remove(0)));
        }
      } else if (roll < 98) {
        batch.add(BlockRemoved.of(held.remove(random.nextInt(held.size()))));
      } else {
        held.clear();
        batch.add(KvEvent.AllBlocksCleared.INSTANCE);
      }
    }
    return batch;
  }
}
