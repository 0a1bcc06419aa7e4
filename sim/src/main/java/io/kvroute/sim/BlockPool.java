package io.kvroute.sim;

import io.kvroute.KvEvent;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The paged KV cache of one engine, as vLLM v1's {@code BlockPool}; not thread-safe (owned by the engine's step
 * loop).
 *
 * <ul>
 *   <li>Blocks carry a reference count (running requests pin their blocks) and, once full, an engine hash.
 *   <li>Blocks with no references sit in the free queue, least recently freed at the head. A freed block keeps
 *       its hash and can still be hit until it is reused.
 *   <li>Allocation pops the head of the free queue; a popped block that still carries a hash is evicted from
 *       the cache, which emits {@link KvEvent.BlockRemoved} with that one hash.
 *   <li>One hash may be held by several blocks (two requests computed the same block concurrently); the cache
 *       keeps all of them, as vLLM's {@code BlockHashToBlockMap} does, and each eviction is reported.
 * </ul>
 */
final class BlockPool {
  private static final int NIL = -1;

  private final int numBlocks;
  private final int[] refCount;
  private final long[] hash;
  private final boolean[] hashed;
  // Free queue: a doubly linked list over block ids; head is evicted first.
  private final int[] prev;
  private final int[] next;
  private final boolean[] inFreeQueue;
  private int head = NIL;
  private int tail = NIL;
  private int freeCount;
  // hash -> blocks holding it (almost always one).
  private final Map<Long, int[]> cached = new HashMap<>();
  private final List<KvEvent> events = new ArrayList<>();
  private int cachedBlockCount;

  BlockPool(int numBlocks) {
    this.numBlocks = numBlocks;
    this.refCount = new int[numBlocks];
    this.hash = new long[numBlocks];
    this.hashed = new boolean[numBlocks];
    this.prev = new int[numBlocks];
    this.next = new int[numBlocks];
    this.inFreeQueue = new boolean[numBlocks];
    for (int b = 0; b < numBlocks; b++) {
      append(b);
    }
  }

  int numBlocks() {
    return numBlocks;
  }

  /** Blocks in the free queue (including freed blocks that are still cached). */
  int freeBlocks() {
    return freeCount;
  }

  /** Blocks that hold a hash (cached), pinned or not. */
  int cachedBlocks() {
    return cachedBlockCount;
  }

  /** vLLM's {@code kv_cache_usage_perc}: the share of blocks not in the free queue. */
  double usage() {
    return 1.0 - (double) freeCount / numBlocks;
  }

  /** A block holding {@code blockHash}, or -1. */
  int lookup(long blockHash) {
    int[] blocks = cached.get(blockHash);
    return blocks == null ? NIL : blocks[0];
  }

  int refCount(int block) {
    return refCount[block];
  }

  boolean isFree(int block) {
    return inFreeQueue[block];
  }

  /** Pins a cached block found by a prefix lookup, taking it out of the free queue if it was there. */
  void touch(int block) {
    if (refCount[block] == 0) {
      unlink(block);
    }
    refCount[block]++;
  }

  /** Takes {@code count} blocks from the head of the free queue, evicting their hashes; the caller checked room. */
  void allocate(int count, int[] out, int offset) {
    if (count > freeCount) {
      throw new IllegalStateException("allocating " + count + " blocks with only " + freeCount + " free");
    }
    for (int i = 0; i < count; i++) {
      int block = head;
      unlink(block);
      if (hashed[block]) {
        evict(block);
      }
      refCount[block] = 1;
      out[offset + i] = block;
    }
  }

  /** Marks a full block as holding {@code blockHash}, making it hittable. */
  void cache(int block, long blockHash) {
    if (hashed[block]) {
      throw new IllegalStateException("block " + block + " is already cached");
    }
    hashed[block] = true;
    hash[block] = blockHash;
    cachedBlockCount++;
    int[] holders = cached.get(blockHash);
    if (holders == null) {
      cached.put(blockHash, new int[] {block});
    } else {
      int[] more = java.util.Arrays.copyOf(holders, holders.length + 1);
      more[holders.length] = block;
      cached.put(blockHash, more);
    }
  }

  /**
   * Releases one reference to each block, in the given order; blocks that reach zero references go to the tail of
   * the free queue in that order, so the first of them will be evicted first.
   */
  void free(int[] blocks, int from, int to, boolean reverse) {
    if (reverse) {
      for (int i = to - 1; i >= from; i--) {
        release(blocks[i]);
      }
    } else {
      for (int i = from; i < to; i++) {
        release(blocks[i]);
      }
    }
  }

  private void release(int block) {
    if (refCount[block] <= 0) {
      throw new IllegalStateException("block " + block + " freed more often than allocated");
    }
    if (--refCount[block] == 0) {
      append(block);
    }
  }

  /**
   * Drops every hash, as vLLM's {@code reset_prefix_cache}; succeeds only when no block is pinned.
   *
   * @return whether the cache was reset
   */
  boolean reset() {
    if (freeCount != numBlocks) {
      return false;
    }
    for (int b = 0; b < numBlocks; b++) {
      hashed[b] = false;
    }
    cached.clear();
    cachedBlockCount = 0;
    events.add(KvEvent.AllBlocksCleared.INSTANCE);
    return true;
  }

  /** Adds an event to the pending batch (the engine adds its stored events here, keeping event order). */
  void emit(KvEvent event) {
    events.add(event);
  }

  /** The events since the last call, in order, or an empty list. */
  List<KvEvent> takeEvents() {
    if (events.isEmpty()) {
      return List.of();
    }
    List<KvEvent> out = List.copyOf(events);
    events.clear();
    return out;
  }

  private void evict(int block) {
    long h = hash[block];
    hashed[block] = false;
    cachedBlockCount--;
    int[] holders = cached.get(h);
    if (holders != null) {
      if (holders.length == 1) {
        cached.remove(h);
      } else {
        int[] fewer = new int[holders.length - 1];
        int n = 0;
        for (int holder : holders) {
          if (holder != block) {
            fewer[n++] = holder;
          }
        }
        cached.put(h, fewer);
      }
    }
    events.add(KvEvent.BlockRemoved.of(h));
  }

  private void append(int block) {
    prev[block] = tail;
    next[block] = NIL;
    if (tail == NIL) {
      head = block;
    } else {
      next[tail] = block;
    }
    tail = block;
    inFreeQueue[block] = true;
    freeCount++;
  }

  private void unlink(int block) {
    int p = prev[block];
    int n = next[block];
    if (p == NIL) {
      head = n;
    } else {
      next[p] = n;
    }
    if (n == NIL) {
      tail = p;
    } else {
      prev[n] = p;
    }
    inFreeQueue[block] = false;
    freeCount--;
  }
}
