package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2IntOpenHashMap;
import java.util.Arrays;

/**
 * The router's own bookkeeping of load per worker slot; not thread-safe: the router guards it with its admission
 * lock.
 *
 * <p>Blocks of active requests are reference-counted per worker by sequence hash, so a prefix shared by several
 * active requests on one worker counts once, as in Dynamo's active-sequence tracking.
 */
final class LoadTracker {
  private long[] prefillTokens = new long[16];
  private int[] activeRequests = new int[16];
  private Long2IntOpenHashMap[] activeBlocks = new Long2IntOpenHashMap[16];

  void ensureSlot(int slot) {
    if (slot >= prefillTokens.length) {
      int n = Math.max(slot + 1, prefillTokens.length * 2);
      prefillTokens = Arrays.copyOf(prefillTokens, n);
      activeRequests = Arrays.copyOf(activeRequests, n);
      activeBlocks = Arrays.copyOf(activeBlocks, n);
    }
    if (activeBlocks[slot] == null) {
      activeBlocks[slot] = new Long2IntOpenHashMap();
    }
  }

  void resetSlot(int slot) {
    if (slot < prefillTokens.length) {
      prefillTokens[slot] = 0;
      activeRequests[slot] = 0;
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
    Long2IntOpenHashMap map = activeBlocks[slot];
    return map == null ? 0 : map.size();
  }

  /** Leading request blocks already held by the slot's active requests. */
  int activeDepth(int slot, long[] hashes, int count) {
    Long2IntOpenHashMap map = activeBlocks[slot];
    if (map == null || map.isEmpty()) {
      return 0;
    }
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
    for (int i = 0; i < count; i++) {
      map.addTo(hashes[i], 1);
    }
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
    for (int i = 0; i < count; i++) {
      long h = hashes[i];
      int left = map.addTo(h, -1) - 1;
      if (left <= 0) {
        map.remove(h);
      }
    }
  }
}
