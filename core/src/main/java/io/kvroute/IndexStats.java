package io.kvroute;

import io.kvroute.internal.Checks;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;

/**
 * A snapshot of a {@link KvIndexer}'s size and counters; an immutable value, thread-safe.
 *
 * <p>A value class with a factory, as Caffeine's {@code CacheStats}: {@link KvIndex#stats()} returns one, and
 * {@link #of} builds one for tests and for custom {@link KvIndex} views; it checks its arguments and copies the map.
 */
public final class IndexStats {
  private final long entries;
  private final Map<WorkerId, Long> entriesPerWorker;
  private final long capacity;
  private final long maxEntries;
  private final long estimatedBytes;
  private final long storedBlocks;
  private final long removedBlocks;
  private final long orphanBlocks;
  private final long mismatchedBlocks;
  private final long invalidEvents;
  private final long unknownRemovals;
  private final long ignoredBlocks;
  private final long evictedEntries;

  private IndexStats(long entries, Map<WorkerId, Long> entriesPerWorker, long capacity, long maxEntries,
      long estimatedBytes, long storedBlocks, long removedBlocks, long orphanBlocks, long mismatchedBlocks,
      long invalidEvents, long unknownRemovals, long ignoredBlocks, long evictedEntries) {
    this.entries = entries;
    this.entriesPerWorker = entriesPerWorker;
    this.capacity = capacity;
    this.maxEntries = maxEntries;
    this.estimatedBytes = estimatedBytes;
    this.storedBlocks = storedBlocks;
    this.removedBlocks = removedBlocks;
    this.orphanBlocks = orphanBlocks;
    this.mismatchedBlocks = mismatchedBlocks;
    this.invalidEvents = invalidEvents;
    this.unknownRemovals = unknownRemovals;
    this.ignoredBlocks = ignoredBlocks;
    this.evictedEntries = evictedEntries;
  }

  /**
   * A reading with these values; maps are copied. Counts must not be negative.
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
   * @return the reading
   * @throws NullPointerException if {@code entriesPerWorker} is null
   * @throws IllegalArgumentException if a count is negative, naming it
   */
  public static IndexStats of(long entries, Map<WorkerId, Long> entriesPerWorker, long capacity, long maxEntries,
      long estimatedBytes, long storedBlocks, long removedBlocks, long orphanBlocks, long mismatchedBlocks,
      long invalidEvents, long unknownRemovals, long ignoredBlocks, long evictedEntries) {
    Checks.notNegative("entries", entries);
    Checks.notNegative("capacity", capacity);
    Checks.notNegative("maxEntries", maxEntries);
    Checks.notNegative("estimatedBytes", estimatedBytes);
    Checks.notNegative("storedBlocks", storedBlocks);
    Checks.notNegative("removedBlocks", removedBlocks);
    Checks.notNegative("orphanBlocks", orphanBlocks);
    Checks.notNegative("mismatchedBlocks", mismatchedBlocks);
    Checks.notNegative("invalidEvents", invalidEvents);
    Checks.notNegative("unknownRemovals", unknownRemovals);
    Checks.notNegative("ignoredBlocks", ignoredBlocks);
    Checks.notNegative("evictedEntries", evictedEntries);
    return new IndexStats(entries, Map.copyOf(Objects.requireNonNull(entriesPerWorker, "entriesPerWorker")), capacity,
        maxEntries, estimatedBytes, storedBlocks, removedBlocks, orphanBlocks, mismatchedBlocks, invalidEvents,
        unknownRemovals, ignoredBlocks, evictedEntries);
  }

  /**
   * Returns (worker, tier, block) entries held now.
   *
   * @return (worker, tier, block) entries held now
   */
  public long entries() {
    return entries;
  }

  /**
   * Returns entries held now, per worker.
   *
   * @return entries held now, per worker
   */
  public Map<WorkerId, Long> entriesPerWorker() {
    return entriesPerWorker;
  }

  /**
   * Returns entries the current tables can hold before they grow.
   *
   * @return entries the current tables can hold before they grow
   */
  public long capacity() {
    return capacity;
  }

  /**
   * Returns the configured budget.
   *
   * @return the configured budget
   */
  public long maxEntries() {
    return maxEntries;
  }

  /**
   * Returns heap held by the index tables.
   *
   * @return heap held by the index tables
   */
  public long estimatedBytes() {
    return estimatedBytes;
  }

  /**
   * Returns blocks applied from stored events (duplicates included).
   *
   * @return blocks applied from stored events (duplicates included)
   */
  public long storedBlocks() {
    return storedBlocks;
  }

  /**
   * Returns blocks removed by removal events.
   *
   * @return blocks removed by removal events
   */
  public long removedBlocks() {
    return removedBlocks;
  }

  /**
   * Returns stored blocks whose parent was unknown, kept as unmatchable placeholders.
   *
   * @return stored blocks whose parent was unknown, kept as unmatchable placeholders
   */
  public long orphanBlocks() {
    return orphanBlocks;
  }

  /**
   * Returns stored blocks dropped because their block size differed from the index's.
   *
   * @return stored blocks dropped because their block size differed from the index's
   */
  public long mismatchedBlocks() {
    return mismatchedBlocks;
  }

  /**
   * Returns events dropped as malformed.
   *
   * @return events dropped as malformed
   */
  public long invalidEvents() {
    return invalidEvents;
  }

  /**
   * Returns removed blocks that the index did not hold.
   *
   * @return removed blocks that the index did not hold
   */
  public long unknownRemovals() {
    return unknownRemovals;
  }

  /**
   * Returns blocks of cache groups that do not count toward prefixes (sliding window, Mamba, …).
   *
   * @return blocks of cache groups that do not count toward prefixes (sliding window, Mamba, …)
   */
  public long ignoredBlocks() {
    return ignoredBlocks;
  }

  /**
   * Returns entries dropped to keep within the budget.
   *
   * @return entries dropped to keep within the budget
   */
  public long evictedEntries() {
    return evictedEntries;
  }

  /**
   * Estimated heap bytes per entry held, or 0 when empty.
   *
   * @return the bytes per entry, zero or more
   */
  public double bytesPerEntry() {
    return entries == 0 ? 0 : (double) estimatedBytes / entries;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof IndexStats other)) {
      return false;
    }
    return entries == other.entries && entriesPerWorker.equals(other.entriesPerWorker) && capacity == other.capacity
        && maxEntries == other.maxEntries && estimatedBytes == other.estimatedBytes
        && storedBlocks == other.storedBlocks && removedBlocks == other.removedBlocks
        && orphanBlocks == other.orphanBlocks && mismatchedBlocks == other.mismatchedBlocks
        && invalidEvents == other.invalidEvents && unknownRemovals == other.unknownRemovals
        && ignoredBlocks == other.ignoredBlocks && evictedEntries == other.evictedEntries;
  }

  @Override
  public int hashCode() {
    int h = Arrays.hashCode(new long[] {entries, capacity, maxEntries, estimatedBytes, storedBlocks, removedBlocks,
        orphanBlocks, mismatchedBlocks, invalidEvents, unknownRemovals, ignoredBlocks, evictedEntries});
    h = 31 * h + entriesPerWorker.hashCode();
    return h;
  }

  @Override
  public String toString() {
    return "IndexStats[entries=" + entries + ", entriesPerWorker=" + entriesPerWorker + ", capacity=" + capacity
        + ", maxEntries=" + maxEntries + ", estimatedBytes=" + estimatedBytes + ", storedBlocks=" + storedBlocks
        + ", removedBlocks=" + removedBlocks + ", orphanBlocks=" + orphanBlocks + ", mismatchedBlocks="
        + mismatchedBlocks + ", invalidEvents=" + invalidEvents + ", unknownRemovals=" + unknownRemovals
        + ", ignoredBlocks=" + ignoredBlocks + ", evictedEntries=" + evictedEntries + "]";
  }
}
