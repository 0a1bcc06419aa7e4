package io.kvroute.sync.nats;

import io.kvroute.WorkerId;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The router's own booking deltas on their way from the selecting threads to the publisher: a bounded,
 * preallocated ring of primitive records; single producer, single consumer, no lock: the producer is whichever
 * thread the router calls a {@code SharedLoad} hook on, one at a time under the router's admission lock (which
 * orders successive producers), and the consumer is whoever holds the sync's publish lock.
 *
 * <p>A record is a kind, a booking id, a worker, prefill tokens, the prompt's blocks and a run of hashes (the load
 * keys of a booking, or all its block hashes when peers should predict them) in a second ring of longs. Offering
 * one is a few array stores, an array copy of its hashes and one volatile write; nothing is allocated and nothing
 * waits. A full ring refuses the record: the caller decides what to do with it (see {@code NatsLoadSync}).
 */
final class DeltaRing {
  static final byte BOOK = 1;
  static final byte BOOK_PREDICTED = 2;
  static final byte FIRST_TOKEN = 3;
  static final byte CLOSE = 4;
  /** A booking's note (see {@link #offer(byte, long, WorkerId, long, int, long[], int, byte, int, long)}). */
  static final byte NO_NOTE = 0;
  static final byte NOTED = 1;
  static final byte NOTED_NEW_PREFIX = 3;

  private static final VarHandle PUBLISHED;
  private static final VarHandle CONSUMED;
  private static final VarHandle HASHES_CONSUMED;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      PUBLISHED = l.findVarHandle(DeltaRing.class, "published", long.class);
      CONSUMED = l.findVarHandle(DeltaRing.class, "consumed", long.class);
      HASHES_CONSUMED = l.findVarHandle(DeltaRing.class, "hashesConsumed", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final int capacity;
  private final int mask;
  private final int hashCapacity;
  private final int hashMask;
  private final byte[] kinds;
  private final long[] ids;
  private final WorkerId[] workers;
  private final long[] prefills;
  private final int[] blocks;
  private final int[] counts;
  private final byte[] notes;
  private final int[] warmBlocks;
  private final long[] warmKeys;
  private final long[] hashes;

  // Producer side (plain: one producer at a time, ordered by the router's admission lock).
  private long tail;
  private long hashTail;
  private long consumedSeen;
  private long hashesConsumedSeen;
  // Records [0, published) are visible to the consumer; written with release semantics by the producer.
  @SuppressWarnings("unused")
  private volatile long published;
  // Consumer side: records and hashes handed back to the producer.
  @SuppressWarnings("unused")
  private volatile long consumed;
  @SuppressWarnings("unused")
  private volatile long hashesConsumed;
  private long head; // the consumer's own copy of `consumed`
  private long hashHead;

  /**
   * A ring of {@code capacity} records sharing {@code hashCapacity} hashes.
   *
   * @param capacity records, a power of two
   * @param hashCapacity hashes, a power of two, at least the most one record carries
   */
  DeltaRing(int capacity, int hashCapacity) {
    if (Integer.bitCount(capacity) != 1 || Integer.bitCount(hashCapacity) != 1) {
      throw new IllegalArgumentException("capacity and hashCapacity must be powers of two but were " + capacity
          + " and " + hashCapacity);
    }
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.hashCapacity = hashCapacity;
    this.hashMask = hashCapacity - 1;
    kinds = new byte[capacity];
    ids = new long[capacity];
    workers = new WorkerId[capacity];
    prefills = new long[capacity];
    blocks = new int[capacity];
    counts = new int[capacity];
    notes = new byte[capacity];
    warmBlocks = new int[capacity];
    warmKeys = new long[capacity];
    hashes = new long[hashCapacity];
  }

  /** The most hashes one record can carry. */
  int hashCapacity() {
    return hashCapacity;
  }

  /**
   * Producer: appends a record, unless the ring is full.
   *
   * @param src the record's hashes, {@code count} of them from index 0
   * @return false, appending nothing, if there is no room for the record or its hashes
   */
  boolean offer(byte kind, long id, WorkerId worker, long prefill, int blockCount, long[] src, int count) {
    return offer(kind, id, worker, prefill, blockCount, src, count, NO_NOTE, 0, 0);
  }

  /**
   * Producer: appends a booking with its policy's note, unless the ring is full.
   *
   * @param note {@link #NO_NOTE}, {@link #NOTED} or {@link #NOTED_NEW_PREFIX} (the policy placed a new prefix)
   * @param warm the prompt's blocks the policy counted as a warm prefix, 0 for none
   * @param warmKey the sequence hash of the last of them
   * @return false, appending nothing, if there is no room for the record or its hashes
   */
  boolean offer(byte kind, long id, WorkerId worker, long prefill, int blockCount, long[] src, int count, byte note,
      int warm, long warmKey) {
    long t = tail;
    if (t - consumedSeen >= capacity) {
      consumedSeen = (long) CONSUMED.getAcquire(this);
      if (t - consumedSeen >= capacity) {
        return false;
      }
    }
    long ht = hashTail;
    if (count > 0 && ht + count - hashesConsumedSeen > hashCapacity) {
      hashesConsumedSeen = (long) HASHES_CONSUMED.getAcquire(this);
      if (ht + count - hashesConsumedSeen > hashCapacity) {
        return false;
      }
    }
    int i = (int) t & mask;
    kinds[i] = kind;
    ids[i] = id;
    workers[i] = worker;
    prefills[i] = prefill;
    blocks[i] = blockCount;
    counts[i] = count;
    notes[i] = note;
    warmBlocks[i] = warm;
    warmKeys[i] = warmKey;
    if (count > 0) {
      int from = (int) ht & hashMask;
      int first = Math.min(count, hashCapacity - from);
      System.arraycopy(src, 0, hashes, from, first);
      if (first < count) {
        System.arraycopy(src, first, hashes, 0, count - first);
      }
      hashTail = ht + count;
    }
    tail = t + 1;
    // A full fence rather than a release: the producer reads the publisher's idle flag next (Dekker), and a
    // release store may be reordered after that load.
    PUBLISHED.setVolatile(this, t + 1);
    return true;
  }

  /** Consumer: whether a published record waits. */
  boolean isEmpty() {
    return (long) PUBLISHED.getVolatile(this) == head;
  }

  /** What {@link #drain} hands over, one record at a time. */
  interface Sink {
    /**
     * One record; {@code hashes} is valid only during the call.
     *
     * @param hashes the record's hashes, {@code count} of them from index 0
     * @param note the booking's note, {@link #NO_NOTE} for none (and for releases)
     */
    void record(byte kind, long id, WorkerId worker, long prefill, int blocks, long[] hashes, int count, byte note,
        int warmBlocks, long warmKey);
  }

  /**
   * Consumer: hands every record published so far to {@code sink}, in order, and frees their room.
   *
   * @param scratch receives each record's hashes; at least {@link #hashCapacity()} long
   * @return the number of records drained
   */
  int drain(Sink sink, long[] scratch) {
    long end = (long) PUBLISHED.getAcquire(this);
    long h = head;
    long hh = hashHead;
    int n = 0;
    for (; h < end; h++, n++) {
      int i = (int) h & mask;
      int count = counts[i];
      if (count > 0) {
        int from = (int) hh & hashMask;
        int first = Math.min(count, hashCapacity - from);
        System.arraycopy(hashes, from, scratch, 0, first);
        if (first < count) {
          System.arraycopy(hashes, 0, scratch, first, count - first);
        }
        hh += count;
      }
      WorkerId worker = workers[i];
      workers[i] = null; // not retained once handed over
      try {
        sink.record(kinds[i], ids[i], worker, prefills[i], blocks[i], scratch, count, notes[i], warmBlocks[i],
            warmKeys[i]);
      } finally {
        head = h + 1;
        hashHead = hh;
        HASHES_CONSUMED.setRelease(this, hh);
        CONSUMED.setRelease(this, h + 1);
      }
    }
    return n;
  }
}
