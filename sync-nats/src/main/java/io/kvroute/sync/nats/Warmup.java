package io.kvroute.sync.nats;

import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import it.unimi.dsi.fastutil.longs.Long2LongLinkedOpenHashMap;
import it.unimi.dsi.fastutil.longs.LongIterator;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A replica's recent approximate-mode predictions, kept for the JetStream key-value snapshot from which a new
 * replica warms up its prediction index, and that snapshot's encoding; thread-safe (methods synchronize on the
 * table; the codec is stateless).
 *
 * <p>The table holds, per worker, the block hashes this replica predicted there, each with the time it was last
 * predicted, in recency order (a prompt's first block the most recent of its blocks): at most {@code maxBlocks} in
 * all (the least recently predicted go first) and none
 * older than the maximum age. It is fed on the publisher thread from the frames this replica publishes, never on the
 * selecting thread.
 *
 * <p>Layout of a snapshot (a JetStream value), integers as in {@link FrameCodec}:
 * <pre>
 * snapshot = magic 'k' 'w' | version 1 | blockSize | writtenAtMillis (8 bytes, Unix epoch)
 *            | workers | (name (string) | dataParallelRank | count | hash*count)*workers
 * </pre>
 * Hashes of one worker go from least to most recently predicted. A snapshot is rejected whole
 * ({@link SyncFormatException}) when truncated, with trailing bytes, another magic or version, or counts its length
 * cannot hold.
 */
final class Warmup {
  static final byte MAGIC_0 = 'k';
  static final byte MAGIC_1 = 'w';
  static final byte VERSION = 1;
  /** Header bytes besides the strings: magic, version, block size, time, counts. */
  private static final int HEADER_BYTES = 3 + FrameCodec.MAX_VARINT + 8 + FrameCodec.MAX_VARINT;

  private final int maxBlocks;
  private final Map<WorkerId, Long2LongLinkedOpenHashMap> byWorker = new LinkedHashMap<>();
  private int blocks;
  private long version;

  /** @param maxBlocks the most hashes kept in all */
  Warmup(int maxBlocks) {
    this.maxBlocks = Checks.positive("maxBlocks", maxBlocks);
  }

  /** The most hashes a snapshot of {@code maxBytes} can hold with a few workers' names. */
  static int blocksFor(int maxBytes) {
    return Math.max(1, (maxBytes - 4096) / 8);
  }

  /**
   * Records that this replica predicted {@code hashes[offset, offset + count)} on {@code worker} at {@code now}.
   * The prompt's blocks are taken last to first, so its first block counts as the most recent: the bound then drops
   * a prompt's blocks from its end, and what a snapshot keeps of each prompt is a prefix of it (a prefix routed
   * again later is more recent still). The router's prediction index relies on that: a worker predicted to hold a
   * block holds every block before it (its selections match a sample of the blocks).
   */
  synchronized void record(WorkerId worker, long[] hashes, int offset, int count, long nowNanos) {
    Long2LongLinkedOpenHashMap m = byWorker.computeIfAbsent(worker, w -> new Long2LongLinkedOpenHashMap());
    for (int i = count - 1; i >= 0; i--) {
      long h = hashes[offset + i];
      if (!m.containsKey(h)) {
        blocks++;
      }
      m.putAndMoveToLast(h, nowNanos);
    }
    while (blocks > maxBlocks) {
      evictOldest();
    }
    version++;
  }

  /** How many hashes are held. */
  synchronized int blocks() {
    return blocks;
  }

  /** Changes so far: a writer compares it to skip unchanged snapshots. */
  synchronized long version() {
    return version;
  }

  /** Drops the least recently predicted hash of all workers. */
  private void evictOldest() {
    WorkerId oldest = null;
    long oldestAt = 0;
    for (Map.Entry<WorkerId, Long2LongLinkedOpenHashMap> e : byWorker.entrySet()) {
      Long2LongLinkedOpenHashMap m = e.getValue();
      if (m.isEmpty()) {
        continue;
      }
      long at = m.get(m.firstLongKey());
      if (oldest == null || at - oldestAt < 0) {
        oldest = e.getKey();
        oldestAt = at;
      }
    }
    if (oldest == null) {
      blocks = 0;
      return;
    }
    Long2LongLinkedOpenHashMap m = byWorker.get(oldest);
    m.removeFirstLong();
    blocks--;
    if (m.isEmpty()) {
      byWorker.remove(oldest);
    }
  }

  /**
   * Encodes the hashes predicted within {@code maxAgeNanos} of {@code nowNanos}, dropping older ones from the table.
   *
   * @param writtenAtMillis the wall-clock time to stamp the snapshot with
   */
  synchronized byte[] encode(int blockSize, long nowNanos, long maxAgeNanos, long writtenAtMillis) {
    int nameBytes = 0;
    for (Map.Entry<WorkerId, Long2LongLinkedOpenHashMap> e : byWorker.entrySet()) {
      Long2LongLinkedOpenHashMap m = e.getValue();
      while (!m.isEmpty() && nowNanos - m.get(m.firstLongKey()) > maxAgeNanos) {
        m.removeFirstLong();
        blocks--;
      }
      nameBytes += e.getKey().name().length() * 3 + 3 * FrameCodec.MAX_VARINT;
    }
    byWorker.values().removeIf(Long2LongLinkedOpenHashMap::isEmpty);
    FrameWriter.ByteSink out = new FrameWriter.ByteSink(HEADER_BYTES + nameBytes + 8 * blocks);
    out.put(MAGIC_0);
    out.put(MAGIC_1);
    out.put(VERSION);
    out.varint(blockSize);
    out.putLong(writtenAtMillis);
    out.varint(byWorker.size());
    for (Map.Entry<WorkerId, Long2LongLinkedOpenHashMap> e : byWorker.entrySet()) {
      out.string(e.getKey().name());
      out.varint(e.getKey().dataParallelRank());
      Long2LongLinkedOpenHashMap m = e.getValue();
      out.varint(m.size());
      for (LongIterator it = m.keySet().iterator(); it.hasNext(); ) {
        out.putLong(it.nextLong());
      }
    }
    return out.toByteArray();
  }

  /** A decoded snapshot. */
  record Snapshot(int blockSize, long writtenAtMillis, List<WorkerId> workers, List<long[]> hashes) {
    int blocks() {
      return hashes.stream().mapToInt(h -> h.length).sum();
    }
  }

  /**
   * Decodes a snapshot.
   *
   * @throws SyncFormatException if the bytes are not a well-formed snapshot
   */
  static Snapshot decode(byte[] b) {
    FrameCodec.Reader c = new FrameCodec.Reader(b);
    c.need(3, "header");
    if (b[0] != MAGIC_0 || b[1] != MAGIC_1) {
      throw new SyncFormatException("not a kvroute warm-up snapshot");
    }
    if (b[2] != VERSION) {
      throw new SyncFormatException("unsupported warm-up snapshot version " + b[2] + " (this decoder reads "
          + VERSION + ")");
    }
    c.skip(3);
    int blockSize = c.count("block size", Integer.MAX_VALUE);
    if (blockSize == 0) {
      throw new SyncFormatException("block size 0");
    }
    long writtenAt = c.fixedLong("written-at time");
    // Each worker entry takes at least 3 bytes: a count beyond that cannot be honest.
    int workers = c.count("worker count", Math.min(FrameCodec.MAX_WORKERS, c.remaining() / 3));
    List<WorkerId> ids = new ArrayList<>(workers);
    List<long[]> hashes = new ArrayList<>(workers);
    for (int i = 0; i < workers; i++) {
      String name = c.string("worker name");
      if (name.isBlank()) {
        throw new SyncFormatException("blank worker name at index " + i);
      }
      int rank = c.count("data-parallel rank", Integer.MAX_VALUE);
      int count = c.count("hash count", c.remaining() / 8);
      long[] h = new long[count];
      for (int k = 0; k < count; k++) {
        h[k] = c.fixedLong("hash");
      }
      ids.add(new WorkerId(name, rank));
      hashes.add(h);
    }
    if (c.remaining() != 0) {
      throw new SyncFormatException(c.remaining() + " trailing bytes after the warm-up snapshot");
    }
    return new Snapshot(blockSize, writtenAt, List.copyOf(ids), List.copyOf(hashes));
  }
}
