package io.kvroute.examples;

import io.kvroute.sim.MooncakeTrace;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The pooled-LRU reference for a trace: one LRU prefix cache with the whole cluster's capacity, fed the requests in
 * arrival order; a stateless utility, thread-safe.
 *
 * <p>It is what a cluster would cache if its workers' caches were one: no prefix is duplicated and none is evicted
 * while the cluster still has room. No router can put a prefix in two places for free, so routers sit below it
 * (up to concurrency effects: a request that arrives while an earlier one with its prefix is still being computed
 * misses in a real engine but hits here). Blocks follow vLLM's rules: a block is cached once full, a prompt hits at
 * most the full blocks before its last token, and a request's tail blocks are evicted before its prefix.
 */
final class PooledLru {
  private PooledLru() {}

  /** The cached-token ratio of one LRU cache of {@code capacityBlocks} blocks of {@code blockSize} tokens. */
  static double cachedTokenRatio(MooncakeTrace trace, long capacityBlocks, int blockSize) {
    int perId = trace.blockTokens() / blockSize;
    if (perId * blockSize != trace.blockTokens()) {
      throw new IllegalArgumentException("block size " + blockSize + " does not divide the trace's "
          + trace.blockTokens());
    }
    Map<Long, Boolean> lru = new LinkedHashMap<>(1 << 16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
        return size() > capacityBlocks;
      }
    };
    long prompt = 0;
    long cached = 0;
    for (int i = 0; i < trace.size(); i++) {
      long[] ids = trace.hashIds(i);
      int tokens = trace.inputLength(i);
      int full = tokens / blockSize;
      int maxHit = (tokens - 1) / blockSize;
      long[] keys = new long[full];
      for (int b = 0; b < full; b++) {
        keys[b] = ids[b / perId] * perId + (b % perId); // chained ids: the key names the whole prefix
      }
      int hits = 0;
      while (hits < maxHit && lru.containsKey(keys[hits])) {
        hits++;
      }
      prompt += tokens;
      cached += (long) hits * blockSize;
      for (int b = full - 1; b >= 0; b--) { // tail first, so the prefix ends most recently used
        lru.put(keys[b], Boolean.TRUE);
      }
    }
    return prompt == 0 ? 0 : (double) cached / prompt;
  }
}
