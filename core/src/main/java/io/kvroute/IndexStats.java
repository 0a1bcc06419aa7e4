package io.kvroute;

import java.util.Map;

/**
 * A snapshot of a {@link KvIndexer}'s size and counters; an immutable value, thread-safe.
 *
 * @param entries (worker, tier, block) entries held now
 * @param entriesPerWorker entries held now, per worker
 * @param capacity entries the current tables can hold before they grow
 * @param maxEntries the configured budget
 * @param estimatedBytes heap held by the index tables
 * @param storedBlocks blocks applied from stored events (duplicates included)
 * @param removedBlocks blocks removed by removal events
 * @param orphanBlocks stored blocks whose parent was unknown, kept as unmatchable placeholders
 * @param mismatchedBlocks stored blocks dropped because their block size differed from the index's
 * @param invalidEvents events dropped as malformed
 * @param unknownRemovals removed blocks that the index did not hold
 * @param ignoredBlocks blocks of cache groups that do not count toward prefixes (sliding window, Mamba, …)
 * @param evictedEntries entries dropped to keep within the budget
 */
public record IndexStats(
    long entries,
    Map<WorkerId, Long> entriesPerWorker,
    long capacity,
    long maxEntries,
    long estimatedBytes,
    long storedBlocks,
    long removedBlocks,
    long orphanBlocks,
    long mismatchedBlocks,
    long invalidEvents,
    long unknownRemovals,
    long ignoredBlocks,
    long evictedEntries) {

  /**
   * Copies the per-worker map.
   *
   * @param entriesPerWorker entries held now, per worker
   * @param entries (worker, tier, block) entries held now
   * @param capacity entries the current tables can hold before they grow
   * @param maxEntries the configured budget
   * @param estimatedBytes heap held by the index tables
   * @param storedBlocks blocks applied from stored events (duplicates included)
   * @param removedBlocks blocks removed by removal events
   * @param orphanBlocks stored blocks whose parent was unknown, kept as unmatchable placeholders
   * @param mismatchedBlocks stored blocks dropped because their block size differed from the index's
   * @param invalidEvents events dropped as malformed
   * @param unknownRemovals removed blocks that the index did not hold
   * @param ignoredBlocks blocks of cache groups that do not count toward prefixes (sliding window, Mamba, …)
   * @param evictedEntries entries dropped to keep within the budget
   */
  public IndexStats {
    entriesPerWorker = Map.copyOf(entriesPerWorker);
  }

  /**
   * Estimated heap bytes per entry held, or 0 when empty.
   *
   * @return the bytes per entry, zero or more
   */
  public double bytesPerEntry() {
    return entries == 0 ? 0 : (double) estimatedBytes / entries;
  }
}
