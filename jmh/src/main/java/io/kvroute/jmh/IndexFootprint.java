package io.kvroute.jmh;

import io.kvroute.IndexStats;
import io.kvroute.KvIndexer;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Measures the heap a populated {@link KvIndexer} holds per (worker, block) entry, two independent ways: the
 * index's own estimate ({@link IndexStats#bytesPerEntry()}, its table sizes) and the growth of the live heap after
 * full collections, which counts everything the index keeps reachable. Not a JMH benchmark, since memory is not a
 * rate; run it in its own JVM:
 * <pre>
 * java -Xms4g -Xmx4g -cp jmh/target/benchmarks.jar io.kvroute.jmh.IndexFootprint
 * </pre>
 * Each row populates a fresh index over 64 workers with sequences of 128 blocks (2,048-token prompts). The tables
 * grow by doubling, so the bytes per entry depend on how full the last doubling is: the rows show a table exactly
 * full, the 1M-block target, and one just past a doubling, plus an index whose budget caps its growth.
 */
public final class IndexFootprint {
  private static final int WORKERS = 64;
  private static final int SEQUENCE_BLOCKS = 128;

  private IndexFootprint() {}

  public static void main(String[] args) {
    System.out.printf(Locale.ROOT, "JDK %s (%s), %s, %d processors, max heap %d MB%n",
        System.getProperty("java.version"), System.getProperty("java.vm.name"),
        ManagementFactory.getRuntimeMXBean().getInputArguments(), Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() >> 20);
    System.out.printf(Locale.ROOT, "%12s %12s %12s %12s %14s %14s %12s%n", "blocks", "maxEntries", "entries",
        "capacity", "estimated B/e", "heap delta B/e", "heap MB");
    measure(1 << 20, KvIndexer.DEFAULT_MAX_ENTRIES);
    measure(1_000_000, KvIndexer.DEFAULT_MAX_ENTRIES);
    measure(600_000, KvIndexer.DEFAULT_MAX_ENTRIES);
    measure(1_000_000, 1_000_000);
  }

  /** Populates an index with {@code blocks} blocks and prints one row; returns the measured bytes per entry. */
  static Row measure(int blocks, int maxEntries) {
    long before = liveHeap();
    KvIndexer indexer = populate(blocks, maxEntries);
    long after = liveHeap();
    IndexStats stats = indexer.stats();
    Row row = new Row(blocks, maxEntries, stats, after - before);
    System.out.printf(Locale.ROOT, "%12d %12d %12d %12d %14.1f %14.1f %12.1f%n", blocks, maxEntries, stats.entries(),
        stats.capacity(), stats.bytesPerEntry(), row.heapBytesPerEntry(), (after - before) / 1e6);
    return row;
  }

  static KvIndexer populate(int blocks, int maxEntries) {
    KvIndexer indexer = KvIndexer.newBuilder().blockSize(Workload.BLOCK_SIZE).maxEntries(maxEntries).build();
    Workload.populate(indexer, Workload.workers(WORKERS), blocks, SEQUENCE_BLOCKS, 0,
        new SplittableRandom(Workload.SEED));
    return indexer;
  }

  /** The heap in use after full collections: the live set, give or take region rounding. */
  private static long liveHeap() {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  /** One measurement: the index's estimate and the heap it was seen to hold. */
  record Row(int blocks, int maxEntries, IndexStats stats, long heapDelta) {
    double heapBytesPerEntry() {
      return stats.entries() == 0 ? 0 : (double) heapDelta / stats.entries();
    }
  }
}
