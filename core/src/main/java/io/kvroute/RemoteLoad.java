package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * A router's view of the load its peer replicas booked, fed by a {@link SharedLoad} port; thread-safe: ports call it
 * from their own threads; a selection that starts after a call returns sees its delta. A booking, phase or drop is
 * applied on the calling thread if the router's admission lock is free, else by the next selection before it
 * scores; a prediction is applied on the calling thread, which waits for the lock (a selection never applies
 * peers' predictions, so its cost does not grow with the peers' request rate). Never call it from inside a
 * {@link SharedLoad} hook, which runs under a router's admission lock.
 *
 * <p>Peers' bookings are counted with the router's own in what policies see ({@link Candidates#activeRequests},
 * {@link Candidates#prefillTokens}, {@link Candidates#decodeBlocks}, {@link Candidates#activeOverlapBlocks}); a
 * peer's approximate-mode predictions enter the router's prediction index with the router's own prediction TTL.
 * Bookings are keyed by replica and booking id: a repeated {@link #booked} is ignored, and {@link #firstToken} or
 * {@link #closed} for an unknown booking does nothing, so replaying deltas never counts anything twice. Bookings on
 * workers this router does not know are kept (their release must still be matched) but count nowhere; a worker
 * added later sees them from the peer's next snapshot.
 *
 * <p>A booking carries only its load keys, a digest of its block hashes: the hash of every
 * {@value #LOAD_KEY_STRIDE}th block and of the last one, which is what the router counts active blocks by (see
 * {@link #loadKeys}).
 */
public interface RemoteLoad {
  /** A load key is taken every this many blocks, plus the last block. */
  int LOAD_KEY_STRIDE = 8;

  /**
   * The router's block size: a peer's hashes are comparable only if its block size is the same.
   *
   * @return tokens per block, positive
   */
  int blockSize();

  /**
   * A peer booked a request.
   *
   * @param replica the peer's name
   * @param bookingId the peer's id of the booking
   * @param worker the worker the peer routed the request to
   * @param prefillTokens pending prompt tokens (0 once the first token came)
   * @param blocks the prompt's full blocks
   * @param keys the booking's load keys, {@link #loadKeyCount loadKeyCount(blocks)} of them; copied
   * @param keyCount how many of {@code keys} are given
   * @throws IllegalArgumentException if {@code keyCount} is not {@code loadKeyCount(blocks)} or a count is negative
   */
  void booked(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks, long[] keys,
      int keyCount);

  /**
   * A peer booked a request, with what its policy learned from the choice (see
   * {@link SharedLoad#booked(long, WorkerId, long, long[], int, boolean, int, boolean)}): the router books it as
   * the seven-argument form does and, the first time the booking arrives, lets its own policy learn the same (a
   * built-in {@code cacheAffinity} or {@code predictedTtft} counts the placement and the warm prefix as if it had
   * routed the request itself). Deliver a peer's snapshot with the seven-argument form: its bookings were learned
   * from when they were booked. The default drops the note.
   *
   * @param replica the peer's name
   * @param bookingId the peer's id of the booking
   * @param worker the worker the peer routed the request to
   * @param prefillTokens pending prompt tokens (0 once the first token came)
   * @param blocks the prompt's full blocks
   * @param keys the booking's load keys, {@link #loadKeyCount loadKeyCount(blocks)} of them; copied
   * @param keyCount how many of {@code keys} are given
   * @param warmBlocks the prompt's first blocks the peer's policy counted as warm on the worker, 0 for none
   * @param warmKey the sequence hash of the last of them (ignored when {@code warmBlocks} is 0)
   * @param newPrefix whether the peer's policy placed a new prefix on the worker
   * @throws IllegalArgumentException if {@code keyCount} is not {@code loadKeyCount(blocks)}, a count is negative,
   *     or {@code warmBlocks} exceeds {@code blocks}
   */
  default void booked(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks, long[] keys,
      int keyCount, int warmBlocks, long warmKey, boolean newPrefix) {
    booked(replica, bookingId, worker, prefillTokens, blocks, keys, keyCount);
  }

  /**
   * A peer's booked request produced its first token.
   *
   * @param replica the peer's replica name
   * @param bookingId the peer's id of the booking
   */
  void firstToken(String replica, long bookingId);

  /**
   * A peer's booked request closed.
   *
   * @param replica the peer's replica name
   * @param bookingId the peer's id of the booking
   */
  void closed(String replica, long bookingId);

  /**
   * A peer predicted that {@code worker} holds the prefix named by these block hashes (approximate mode); ignored
   * by a router that does not predict.
   *
   * @param worker the worker predicted to hold the prefix
   * @param hashes copied
   * @param count how many of {@code hashes} to take
   */
  void predicted(WorkerId worker, long[] hashes, int count);

  /**
   * Forgets every booking of {@code replica}: it left, expired, or its deltas can no longer be trusted.
   *
   * @param replica the peer's replica name
   */
  void dropReplica(String replica);

  /**
   * Peers' bookings open on {@code worker}, after applying everything delivered so far.
   *
   * @param worker the worker
   * @return the count, zero or more
   */
  int activeRequests(WorkerId worker);

  /**
   * Peers' open bookings in all, after applying everything delivered so far.
   *
   * @return the count, zero or more
   */
  long openBookings();

  /**
   * The number of load keys of a prompt of {@code blocks} full blocks.
   *
   * @param blocks the prompt's full blocks, zero or more
   * @return the count, zero for no blocks
   */
  static int loadKeyCount(int blocks) {
    Checks.notNegative("blocks", blocks);
    return (blocks + LOAD_KEY_STRIDE - 1) / LOAD_KEY_STRIDE;
  }

  /**
   * Writes the load keys of {@code hashes[0..blocks)} into {@code keys}: the hashes at positions
   * {@code STRIDE-1, 2*STRIDE-1, …} and {@code blocks-1} (each once).
   *
   * @param hashes the prompt's block sequence hashes
   * @param blocks how many of {@code hashes} are the prompt's full blocks
   * @param keys receives the keys; at least {@code loadKeyCount(blocks)} long
   * @return the number written, {@link #loadKeyCount loadKeyCount(blocks)}
   */
  static int loadKeys(long[] hashes, int blocks, long[] keys) {
    int n = 0;
    for (int p = firstLoadKey(blocks); p >= 0; p = nextLoadKey(p, blocks)) {
      keys[n++] = hashes[p];
    }
    return n;
  }

  private static int firstLoadKey(int blocks) {
    return blocks == 0 ? -1 : Math.min(LOAD_KEY_STRIDE, blocks) - 1;
  }

  private static int nextLoadKey(int p, int blocks) {
    return p == blocks - 1 ? -1 : Math.min(p + LOAD_KEY_STRIDE, blocks - 1);
  }
}
