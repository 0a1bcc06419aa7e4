package io.kvroute;

import java.util.List;
import java.util.Map;

/**
 * A read-only view of a KV index, for queries and stats; implementations are thread-safe. {@link Router#indexer()}
 * hands out this view, so that nobody can apply events or remove workers behind the router's registry.
 */
public interface KvIndex {
  /**
   * The block size, in tokens, that the index hashes with.
   *
   * @return the block size
   */
  int blockSize();

  /**
   * The hasher requests must use to query this index.
   *
   * @return the hasher
   */
  BlockHasher hasher();

  /**
   * For every worker holding at least the first block, how many consecutive blocks of the request it holds.
   *
   * @param sequenceHashes the request's block sequence hashes, from {@link #hasher()}
   * @return the matches by worker
   */
  Map<WorkerId, PrefixMatch> findMatches(long[] sequenceHashes);

  /**
   * The number of entries a worker holds.
   *
   * @param worker the worker
   * @return its entries, 0 if unknown
   */
  long entriesOf(WorkerId worker);

  /**
   * A snapshot of sizes and counters.
   *
   * @return the stats
   */
  IndexStats stats();

  /**
   * The workers the index knows, in no particular order.
   *
   * @return the workers
   */
  List<WorkerId> workers();
}
