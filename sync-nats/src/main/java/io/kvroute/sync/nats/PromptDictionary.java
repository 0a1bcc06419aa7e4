package io.kvroute.sync.nats;

import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * The approximate-mode prompts one replica published with all their block hashes, lately, keyed by the hash of
 * every {@value #STRIDE}th block and of the last; not thread-safe (the publisher keeps one under its lock, the
 * receiving table one per peer under its own).
 *
 * <p>A booking whose prompt begins with a prefix ending at such a key is sent as a {@link Frame#RENEW}: the prefix's
 * length and last hash, then only the blocks after it; the receiver takes the prefix's hashes from its dictionary
 * of that sender. The sender and every receiver apply the same registrations in the same order (the sender's frame
 * order, which NATS keeps per publisher and receivers check by sequence number), and the same eviction (oldest
 * prompt first, beyond {@value #BUDGET_BLOCKS} blocks), and both start empty at the same point of the stream (the
 * sender clears its own just before a snapshot's first part, a receiver that sender's when that part arrives; a new
 * or restarted peer's starts empty), so a prefix the sender refers to is one every receiver that saw every frame
 * holds. A receiver that missed frames may lack it: it counts the miss and asks for a snapshot, as for any gap.
 */
final class PromptDictionary {
  /** The keys are every this-many blocks' hash (and the last), as the load keys are. */
  static final int STRIDE = 8;
  /** At most this many blocks are held (2 MiB of hashes), the oldest prompts dropped first. */
  static final int BUDGET_BLOCKS = 1 << 18;

  private final Long2ObjectOpenHashMap<long[]> byKey = new Long2ObjectOpenHashMap<>();
  private final ArrayDeque<long[]> order = new ArrayDeque<>();
  private final int budget;
  private long blocks;

  PromptDictionary() {
    this(BUDGET_BLOCKS);
  }

  PromptDictionary(int budgetBlocks) {
    this.budget = budgetBlocks;
  }

  /**
   * The longest prefix of {@code hashes[0..count)} ending at one of its keys that a registered prompt shares: its
   * length in blocks, or 0 for none. A block's sequence hash chains every block before it, so a prompt holding it at
   * the same position holds the whole prefix.
   */
  int longestPrefix(long[] hashes, int count) {
    for (int p = count - 1; p >= 0; p = previousKey(p)) {
      long[] a = byKey.get(hashes[p]);
      if (a != null && a.length > p && a[p] == hashes[p]) {
        return p + 1;
      }
    }
    return 0;
  }

  /** The key position before {@code p}: the previous multiple of {@link #STRIDE} minus one, or -1. */
  private static int previousKey(int p) {
    return (p + 1) % STRIDE == 0 ? p - STRIDE : p - (p + 1) % STRIDE;
  }

  /** Registers a prompt published (or reconstructed) whole; drops the oldest beyond the budget. */
  void register(long[] hashes, int count) {
    if (count == 0) {
      return;
    }
    long[] prompt = Arrays.copyOf(hashes, count);
    for (int p = count - 1; p >= 0; p = previousKey(p)) {
      byKey.put(prompt[p], prompt);
    }
    order.addLast(prompt);
    blocks += count;
    while (blocks > budget && order.size() > 1) {
      long[] old = order.pollFirst();
      blocks -= old.length;
      for (int p = old.length - 1; p >= 0; p = previousKey(p)) {
        if (byKey.get(old[p]) == old) {
          byKey.remove(old[p]);
        }
      }
    }
  }

  /**
   * Copies the first {@code refBlocks} hashes of the registered prefix ending at {@code refHash} into {@code dst};
   * false if none is registered.
   */
  boolean copyPrefix(long refHash, int refBlocks, long[] dst) {
    long[] a = refBlocks <= 0 ? null : byKey.get(refHash);
    if (a == null || a.length < refBlocks || a[refBlocks - 1] != refHash) {
      return false;
    }
    System.arraycopy(a, 0, dst, 0, refBlocks);
    return true;
  }

  void clear() {
    byKey.clear();
    order.clear();
    blocks = 0;
  }

  /** Blocks held, for tests. */
  long blocks() {
    return blocks;
  }
}
