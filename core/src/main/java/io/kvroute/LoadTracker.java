package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2IntOpenHashMap;
import java.util.Arrays;

/**
 * The router's own bookkeeping of load per worker slot; not thread-safe: the router guards it with its admission
 * lock.
 *
 * <p>Blocks of active requests are counted per worker with a prefix shared by several active requests counted once,
 * as in Dynamo's active-sequence tracking. Because sequence hashes chain (block {@code i}'s hash names the whole
 * prefix up to {@code i}), it is enough to reference-count every {@value #SAMPLE}th block and the last one: each such
 * key stands for the blocks since the previous one. That makes booking and releasing a 2,048-token prompt 17 map
 * operations instead of 128, under the lock every selection takes, at the price of prefix depths measured in steps
 * of {@value #SAMPLE} blocks (a shared prefix ending inside a step counts up to the step's start).
 *
 * <p>Each worker's map is built for 1,024 keys: fastutil never shrinks a map below its initial size, so bookings
 * never rehash it (a default-sized map grew and shrank on every request).
 */
final class LoadTracker {
  static final int SAMPLE = 8;
  private static final int EXPECTED_KEYS = 1024;

  private long[] prefillTokens = new long[16];
  private int[] activeRequests = new int[16];
  private long[] liveBlocks = new long[16];
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
      activeBlocks[slot] = new Long2IntOpenHashMap(EXPECTED_KEYS);
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

  /** Leading request blocks already held by the slot's active requests, in steps of {@link #SAMPLE}. */
  int activeDepth(int slot, long[] hashes, int count) {
    if (liveBlocks[slot] == 0 || count == 0) {
      return 0;
    }
    Long2IntOpenHashMap map = activeBlocks[slot];
    int depth = 0;
    for (int p = firstKey(count); p >= 0; p = nextKey(p, count)) {
      if (!map.containsKey(hashes[p])) {
        break;
      }
      depth = p + 1;
    }
    return depth;
  }

  void book(int slot, long prefill, long[] hashes, int count) {
    ensureSlot(slot);
    prefillTokens[slot] += prefill;
    activeRequests[slot]++;
    Long2IntOpenHashMap map = activeBlocks[slot];
    long live = liveBlocks[slot];
    for (int p = firstKey(count); p >= 0; p = nextKey(p, count)) {
      if (map.addTo(hashes[p], 1) == 0) {
        live += span(p);
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
    long live = liveBlocks[slot];
    for (int p = firstKey(count); p >= 0; p = nextKey(p, count)) {
      long h = hashes[p];
      int before = map.get(h);
      if (before > 1) {
        map.put(h, before - 1);
      } else if (before == 1) {
        map.remove(h);
        live -= span(p);
      }
    }
    liveBlocks[slot] = live;
  }

  /** The first counted block of a request of {@code count} blocks, or -1 if it has none. */
  private static int firstKey(int count) {
    return count == 0 ? -1 : Math.min(SAMPLE, count) - 1;
  }

  /** The counted block after {@code p}: the next multiple-of-SAMPLE boundary, then the last block; -1 when done. */
  private static int nextKey(int p, int count) {
    if (p == count - 1) {
      return -1;
    }
    return Math.min(p + SAMPLE, count - 1);
  }

  /** The blocks a counted block at position {@code p} stands for: those since the previous boundary. */
  private static int span(int p) {
    int sinceBoundary = (p + 1) % SAMPLE;
    return sinceBoundary == 0 ? SAMPLE : sinceBoundary;
  }
}
