package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2IntOpenHashMap;
import java.util.Arrays;

/**
 * The router's own bookkeeping of load per worker slot; not thread-safe: the router guards it with its admission
 * lock.
 *
 * <p>Blocks of active requests are reference-counted per worker by sequence hash, so a prefix shared by several
 * active requests on one worker counts once, as in Dynamo's active-sequence tracking. Each worker's map is built
 * for 1,024 keys (24 KB): fastutil never shrinks a map below its initial size, so booking and releasing prompts of
 * up to 1,536 blocks never rehashes (a default-sized map grew and shrank on every request: 8 KB of garbage and
 * 5 µs per 2,048-token request).
 */
final class LoadTracker {
  private static final int EXPECTED_BLOCKS = 1024;

  private long[] prefillTokens = new long[16];
  private int[] activeRequests = new int[16];
  private int[] liveBlocks = new int[16];
  private Long2IntOpenHashMap[] activeBlocks = new Long2IntOpenHashMap[16];

  void ensureSlot(int slot) {
    if (slot >= prefillTokens.length) {
      int n = Math.max(slot + 1, prefillTokens.length * 2);
      prefillTokens = Arrays.copyOf(prefillTokens, n);
      activeRequests = Arrays.copyOf(activeRequests, n);
      liveBlocks = Arrays.copyOf(liveBlocks, n);
      activeBlocks = Arrays.copyOf(activeBlocks, n);
    }
    if (activeBlocks[slot] == null) {
      activeBlocks[slot] = new Long2IntOpenHashMap(EXPECTED_BLOCKS);
    }
  }

  void resetSlot(int slot) {
    if (slot < prefillTokens.length) {
      prefillTokens[slot] = 0;
      activeRequests[slot] = 0;
      liveBlocks[slot] = 0;
      activeBlocks[slot] = null;
    }
  }

  long prefillTokens(int slot) {
    return prefillTokens[slot];
  }

  int activeRequests(int slot) {
    return activeRequests[slot];
  }

  /** Distinct blocks held by the slot's active requests. */
  long activeBlocks(int slot) {
    return liveBlocks[slot];
  }

  /** Leading request blocks already held by the slot's active requests. */
  int activeDepth(int slot, long[] hashes, int count) {
    if (liveBlocks[slot] == 0) {
      return 0;
    }
    Long2IntOpenHashMap map = activeBlocks[slot];
    int depth = 0;
    while (depth < count && map.containsKey(hashes[depth])) {
      depth++;
    }
    return depth;
  }

  void book(int slot, long prefill, long[] hashes, int count) {
    ensureSlot(slot);
    prefillTokens[slot] += prefill;
    activeRequests[slot]++;
    Long2IntOpenHashMap map = activeBlocks[slot];
    int live = liveBlocks[slot];
    for (int i = 0; i < count; i++) {
      if (map.addTo(hashes[i], 1) == 0) {
        live++;
      }
    }
    liveBlocks[slot] = live;
  }

  void releasePrefill(int slot, long prefill) {
    if (slot < prefillTokens.length && activeBlocks[slot] != null) {
      prefillTokens[slot] = Math.max(0, prefillTokens[slot] - prefill);
    }
  }

  void releaseRequest(int slot, long[] hashes, int count) {
    if (slot >= prefillTokens.length || activeBlocks[slot] == null) {
      return; // the worker was removed meanwhile
    }
    activeRequests[slot] = Math.max(0, activeRequests[slot] - 1);
    Long2IntOpenHashMap map = activeBlocks[slot];
    int live = liveBlocks[slot];
    for (int i = 0; i < count; i++) {
      long h = hashes[i];
      int before = map.get(h);
      if (before > 1) {
        map.put(h, before - 1);
      } else if (before == 1) {
        map.remove(h);
        live--;
      }
    }
    liveBlocks[slot] = live;
  }
}
