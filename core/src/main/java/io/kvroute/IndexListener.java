package io.kvroute;

/**
 * Receives reports of KV events a {@link KvIndexer} could not apply as given, and of its evictions; implementations
 * must be thread-safe, and every method must execute fast, without external locking, and must not throw.
 *
 * <p>Methods run on the thread applying events, some while the index holds its write lock: do not call back into the
 * index or the router. All methods default to doing nothing; {@link #NONE} is the no-op instance. A
 * {@link RouterListener} is an index listener too, and a router passes its listeners to its index.
 */
public interface IndexListener {
  /** A listener that ignores everything. */
  IndexListener NONE = new IndexListener() {};

  /**
   * A stored event's parent block is unknown for this worker (the stream started mid-sequence or lost an event).
   * Its blocks are kept as unmatchable placeholders so that their removals and children resolve, but they never
   * match a request, since the prefix they extend is unknown.
   *
   * @param worker the worker whose event it was
   * @param blocks the blocks kept as placeholders
   */
  default void onOrphanBlocks(WorkerId worker, int blocks) {}

  /**
   * A stored event's block size differs from the index's; its blocks were dropped.
   *
   * @param worker the worker whose event it was
   * @param expected the index's block size
   * @param actual the event's block size
   * @param blocks the blocks dropped
   */
  default void onBlockSizeMismatch(WorkerId worker, int expected, int actual, int blocks) {}

  /**
   * A stored event was malformed (token count not matching its hashes, repeated hashes); it was dropped.
   *
   * @param worker the worker whose event it was
   * @param event the event
   * @param reason what is wrong with it
   */
  default void onInvalidEvent(WorkerId worker, KvEvent event, String reason) {}

  /**
   * A removal named blocks the index does not hold for this worker; they were ignored.
   *
   * @param worker the worker whose event it was
   * @param blocks the blocks not found
   */
  default void onUnknownRemoval(WorkerId worker, int blocks) {}

  /**
   * An event arrived for a worker the index cannot take (a router does not know it, or the worker bound is
   * reached); it was dropped.
   *
   * @param worker the worker named
   * @param event the event
   */
  default void onEventForUnknownWorker(WorkerId worker, KvEvent event) {}

  /**
   * The index reached its entry budget and dropped its least recently stored entries.
   *
   * @param entries the entries dropped
   */
  default void onIndexEviction(int entries) {}
}
