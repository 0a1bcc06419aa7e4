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
 * <p>Per worker it also keeps the active blocks by number of holders (blocks held by exactly one request, two, …):
 * closing a request frees only the blocks it holds alone, so these say how much memory finishing requests free.
 * Each booking or release moves a counted block between two buckets, O(1) and allocation-free.
 *
 * <p>Each worker's map starts at 128 slots, for 96 keys (five bookings of 2,048 tokens, 17 keys each): fastutil
 * never shrinks a map below its initial size, so a worker's first bookings never rehash it (a default-sized map of
 * 16 slots grew and shrank on every request); under more load it doubles at 75 % fill and halves only when its keys
 * fall below a quarter of that limit, so a load swinging by less than a factor of two does not rehash. It is kept
 * small because every select books into a map and every close releases from it, and the keys land on random
 * lines: at 2,048 slots (24 KB a worker, 1.5 MB for 64 workers, more than a core's L2 cache) each of a booking's
 * 17 keys missed to L3 (a cold 64-worker miss measured about 1 us slower than at 128 slots).
 *
 * <p>Each slot carries the generation of the registration that owns it. Bookings and releases name the generation
 * they were made for; those of an ended registration are ignored (a worker removed and re-added, or another worker
 * on the reused slot, never inherits them), and a release that would take a count below zero is counted in
 * {@link #overReleases()} instead of being silently clamped, so tests can assert that every booking was released
 * exactly once.
 */
final class LoadTracker {
  static final int SAMPLE = RemoteLoad.LOAD_KEY_STRIDE;
  private static final int EXPECTED_KEYS = 96;

  private long[] prefillTokens = new long[16];
  private int[] activeRequests = new int[16];
  private long[] liveBlocks = new long[16];
  /** Holder counts above this share its bucket; such blocks are freed only when nearly every request has closed. */
  static final int MAX_HOLDERS = 32;
  // holders[slot][h]: distinct blocks held by exactly h active requests (h = MAX_HOLDERS: at least that many).
  private long[][] holders = new long[16][];
  private Long2IntOpenHashMap[] activeBlocks = new Long2IntOpenHashMap[16];
  private long[] generations = new long[16]; // 0: no registration owns the slot
  // The router's own bookings younger than the sync's delivery window (see Admission.unseenCopies): their pending
  // prefill tokens and count per slot, counted again for each peer in what the policy sees.
  private long[] youngPrefill = new long[16];
  private int[] youngRequests = new int[16];
  private long overReleases;
  private long staleReleases;

  /** Gives the slot, empty, to the registration of generation {@code generation} (positive). */
  void activate(int slot, long generation) {
    if (slot >= prefillTokens.length) {
      int n = Math.max(slot + 1, prefillTokens.length * 2);
      prefillTokens = Arrays.copyOf(prefillTokens, n);
      activeRequests = Arrays.copyOf(activeRequests, n);
      liveBlocks = Arrays.copyOf(liveBlocks, n);
      holders = Arrays.copyOf(holders, n);
      activeBlocks = Arrays.copyOf(activeBlocks, n);
      generations = Arrays.copyOf(generations, n);
      youngPrefill = Arrays.copyOf(youngPrefill, n);
      youngRequests = Arrays.copyOf(youngRequests, n);
    }
    clear(slot);
    activeBlocks[slot] = new Long2IntOpenHashMap(EXPECTED_KEYS);
    holders[slot] = new long[MAX_HOLDERS + 1];
    generations[slot] = generation;
  }

  /** Ends the slot's registration: its load is dropped, and later releases of its bookings are ignored. */
  void deactivate(int slot) {
    if (slot < prefillTokens.length) {
      clear(slot);
      generations[slot] = 0;
    }
  }

  private void clear(int slot) {
    prefillTokens[slot] = 0;
    activeRequests[slot] = 0;
    liveBlocks[slot] = 0;
    holders[slot] = null;
    activeBlocks[slot] = null;
    youngPrefill[slot] = 0;
    youngRequests[slot] = 0;
  }

  /** Whether the slot belongs to the registration of this generation. */
  boolean owns(int slot, long generation) {
    return slot < generations.length && generations[slot] == generation;
  }

  /** Releases that would have taken a count below zero: a booking released twice. Zero unless there is a bug. */
  long overReleases() {
    return overReleases;
  }

  /** Releases ignored because the booking's registration ended (the worker was removed); expected, not a bug. */
  long staleReleases() {
    return staleReleases;
  }

  long prefillTokens(int slot) {
    return prefillTokens[slot];
  }

  int activeRequests(int slot) {
    return activeRequests[slot];
  }

  /** Pending prefill tokens of the router's own bookings on the slot younger than the delivery window. */
  long youngPrefillTokens(int slot) {
    return youngPrefill[slot];
  }

  /** The router's own bookings on the slot younger than the delivery window. */
  int youngRequests(int slot) {
    return youngRequests[slot];
  }

  /** Counts one of the router's own bookings as young (nothing if the registration no longer owns the slot). */
  void addYoung(int slot, long generation, long prefill) {
    if (owns(slot, generation)) {
      youngPrefill[slot] += prefill;
      youngRequests[slot]++;
    }
  }

  /** Stops counting a booking {@link #addYoung} counted (nothing if the registration ended meanwhile). */
  void removeYoung(int slot, long generation, long prefill) {
    if (owns(slot, generation)) {
      youngPrefill[slot] -= prefill;
      youngRequests[slot]--;
    }
  }

  /** Distinct blocks held by the slot's active requests. */
  long activeBlocks(int slot) {
    return liveBlocks[slot];
  }

  /**
   * Blocks held by exactly one of the slot's active requests: what closing that request frees. A shared prefix's
   * blocks count here only once a single holder is left.
   */
  long soleBlocks(int slot) {
    return holders[slot][1];
  }

  /**
   * The slot's distinct active blocks by holder count: element {@code h} counts the blocks held by exactly {@code h}
   * active requests ({@link #MAX_HOLDERS}: at least that many; element 0 is unused). The tracker's own array: read
   * only under the admission lock, never kept past it or written.
   */
  long[] holderHistogram(int slot) {
    return holders[slot];
  }

  private static void moveHolders(long[] histogram, int before, int after, int span) {
    if (before > 0) {
      histogram[Math.min(before, MAX_HOLDERS)] -= span;
    }
    if (after > 0) {
      histogram[Math.min(after, MAX_HOLDERS)] += span;
    }
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

  /**
   * Books a request on the slot of the registration {@code generation}.
   *
   * @return false, booking nothing, if that registration no longer owns the slot
   */
  boolean book(int slot, long generation, long prefill, long[] hashes, int count) {
    if (!owns(slot, generation)) {
      return false;
    }
    prefillTokens[slot] += prefill;
    activeRequests[slot]++;
    Long2IntOpenHashMap map = activeBlocks[slot];
    long live = liveBlocks[slot];
    long[] histogram = holders[slot];
    for (int p = firstKey(count); p >= 0; p = nextKey(p, count)) {
      live += addHolder(map, histogram, hashes[p], span(p));
    }
    liveBlocks[slot] = live;
    return true;
  }

  /**
   * Books a peer replica's request from its load keys alone (the hashes {@link #book} would read, in order; see
   * {@link RemoteLoad#loadKeys}).
   *
   * @return false, booking nothing, if that registration no longer owns the slot
   */
  boolean bookKeys(int slot, long generation, long prefill, long[] keys, int blocks) {
    if (!owns(slot, generation)) {
      return false;
    }
    prefillTokens[slot] += prefill;
    activeRequests[slot]++;
    Long2IntOpenHashMap map = activeBlocks[slot];
    long live = liveBlocks[slot];
    long[] histogram = holders[slot];
    int k = 0;
    for (int p = firstKey(blocks); p >= 0; p = nextKey(p, blocks)) {
      live += addHolder(map, histogram, keys[k++], span(p));
    }
    liveBlocks[slot] = live;
    return true;
  }

  /** Releases what {@link #bookKeys} booked (its prefill is released separately). */
  void releaseKeys(int slot, long generation, long[] keys, int blocks) {
    if (!owns(slot, generation)) {
      staleReleases++;
      return;
    }
    if (activeRequests[slot] == 0) {
      overReleases++;
      return;
    }
    activeRequests[slot]--;
    Long2IntOpenHashMap map = activeBlocks[slot];
    long live = liveBlocks[slot];
    long[] histogram = holders[slot];
    int k = 0;
    for (int p = firstKey(blocks); p >= 0; p = nextKey(p, blocks)) {
      int freed = removeHolder(map, histogram, keys[k++], span(p));
      if (freed < 0) {
        overReleases++;
      } else {
        live -= freed;
      }
    }
    liveBlocks[slot] = live;
  }

  void releasePrefill(int slot, long generation, long prefill) {
    if (!owns(slot, generation)) {
      staleReleases++;
      return;
    }
    long left = prefillTokens[slot] - prefill;
    if (left < 0) {
      overReleases++;
      left = 0;
    }
    prefillTokens[slot] = left;
  }

  void releaseRequest(int slot, long generation, long[] hashes, int count) {
    if (!owns(slot, generation)) {
      staleReleases++;
      return; // the worker was removed meanwhile: its load went with it
    }
    if (activeRequests[slot] == 0) {
      overReleases++;
      return;
    }
    activeRequests[slot]--;
    Long2IntOpenHashMap map = activeBlocks[slot];
    long live = liveBlocks[slot];
    long[] histogram = holders[slot];
    for (int p = firstKey(count); p >= 0; p = nextKey(p, count)) {
      int freed = removeHolder(map, histogram, hashes[p], span(p));
      if (freed < 0) {
        overReleases++; // a block this request booked is not booked: released twice
      } else {
        live -= freed;
      }
    }
    liveBlocks[slot] = live;
  }

  /**
   * Adds one holder of the counted block {@code key}, which stands for {@code span} blocks.
   *
   * @return the blocks that became live (span for the first holder, else 0)
   */
  private static int addHolder(Long2IntOpenHashMap map, long[] histogram, long key, int span) {
    int before = map.addTo(key, 1);
    moveHolders(histogram, before, before + 1, span);
    return before == 0 ? span : 0;
  }

  /**
   * Removes one holder of the counted block {@code key}, which stands for {@code span} blocks.
   *
   * @return the blocks freed (span when the last holder left, else 0), or -1 if the block was not booked
   */
  private static int removeHolder(Long2IntOpenHashMap map, long[] histogram, long key, int span) {
    int before = map.get(key);
    if (before > 1) {
      map.put(key, before - 1);
      moveHolders(histogram, before, before - 1, span);
      return 0;
    }
    if (before == 1) {
      map.remove(key);
      moveHolders(histogram, 1, 0, span);
      return span;
    }
    return -1;
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
