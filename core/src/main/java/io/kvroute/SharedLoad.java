package io.kvroute;

/**
 * A port through which several router replicas share the load they book and, in approximate mode, the prefixes they
 * predict, so that each replica routes with its peers' load in view; implementations must be thread-safe.
 *
 * <p>Set one on {@link Router.Builder#sharedLoad}. The router calls {@link #start} once when it is built, then tells
 * the port of every local booking delta: {@link #booked}, {@link #firstToken}, {@link #closed}. It calls those one
 * at a time, on whichever thread is selecting or releasing, while holding its admission lock: an implementation
 * must only record or enqueue the delta, never block, never touch the network and never throw (an exception is
 * logged and otherwise ignored). The peers' deltas go the other way: the port delivers them, from its own threads,
 * to the {@link RemoteLoad} view given to {@link #start}, which the router applies before its next selection
 * (predictions on the delivering thread); a selection never waits on the port.
 *
 * <p>A port owns the replica protocol: encoding, batching, sequence numbers, membership and expiry. Whatever it
 * loses (a dead peer, a broken connection) it must remove with {@link RemoteLoad#dropReplica}, so that the view
 * degrades to local-only instead of holding stale load; and a peer's state should be replaced as a whole
 * ({@code dropReplica} followed by its open bookings) whenever deltas may have been lost, so nothing is ever
 * counted twice. {@code kvroute-sync-nats} is the NATS implementation.
 */
public interface SharedLoad {
  /** A port that shares nothing: the router sees only its own bookings. */
  SharedLoad NONE = new SharedLoad() {
    @Override
    public void start(RemoteLoad view) {}

    @Override
    public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
        boolean predicted) {}

    @Override
    public void firstToken(long bookingId) {}

    @Override
    public void closed(long bookingId) {}

    @Override
    public String toString() {
      return "SharedLoad.NONE";
    }
  };

  /**
   * Binds the port to a router, once, when the router is built.
   *
   * @param view where the port delivers its peers' deltas
   * @throws IllegalStateException if the port is already bound to a router
   */
  void start(RemoteLoad view);

  /**
   * This replica booked a request on {@code worker}.
   *
   * @param bookingId this replica's id of the booking: unique and increasing over the router's life
   * @param worker the worker the request was routed to
   * @param prefillTokens the prompt tokens the worker has to compute (not expected to be cached)
   * @param hashes the prompt's block sequence hashes; valid only during the call (copy what is kept)
   * @param blocks how many of {@code hashes} are the prompt's
   * @param predicted whether the router also predicted these blocks cached on the worker (approximate mode), so that
   *     peers should predict them too
   */
  void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks, boolean predicted);

  /**
   * This replica booked a request on {@code worker}, with what its policy learned from the choice, which peers'
   * policies should learn too ({@link RemoteLoad#booked(String, long, WorkerId, long, int, long[], int, int, long,
   * boolean)}). Without it each of N replicas' {@code cacheAffinity} or {@code predictedTtft} counts only its own
   * placements of new prefixes (the counters that spread them over the workers) and models only the warm prefixes
   * it routed itself. The router calls this form when its policy learns from its peers' notes (the built-in
   * {@code cacheAffinity} and {@code predictedTtft}), the six-argument form otherwise. The default drops the note
   * and calls the six-argument form.
   *
   * @param bookingId this replica's id of the booking: unique and increasing over the router's life
   * @param worker the worker the request was routed to
   * @param prefillTokens the prompt tokens the worker has to compute (not expected to be cached)
   * @param hashes the prompt's block sequence hashes; valid only during the call (copy what is kept)
   * @param blocks how many of {@code hashes} are the prompt's
   * @param predicted whether the router also predicted these blocks cached on the worker (approximate mode)
   * @param warmBlocks the prompt's first blocks the policy counted as a warm prefix on the worker (0: none, or a
   *     policy that keeps no such model); {@code hashes[warmBlocks - 1]} names it
   * @param newPrefix whether the policy placed a new prefix on the worker (its placement counters count it)
   */
  default void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
      boolean predicted, int warmBlocks, boolean newPrefix) {
    booked(bookingId, worker, prefillTokens, hashes, blocks, predicted);
  }

  /**
   * How many peer replicas share this replica's load now. With a positive {@link #deliveryWindowNanos}, the router
   * counts each of its own bookings younger than the window this many more times in what its policy sees (pending
   * prefill tokens and active requests on the booked worker): the bookings its peers are likely making meanwhile,
   * which no delivery has brought yet. Replicas behind one load balancer each take about 1/N of the requests, so
   * while this replica routes requests closer together than the window, each of its peers routes about as many
   * unseen, with a view that differs from this replica's only by those same unseen bookings; the router assumes
   * they went where its own did. Once a booking is older than the window its peers' real bookings of that moment
   * have arrived and the copies are dropped. Called under the admission lock at every selection: it must be a cheap
   * read and must not throw. The default, 0, counts nothing more (one router, or a port that cannot tell).
   *
   * @return the peers in view, zero or more
   */
  default int peerCount() {
    return 0;
  }

  /**
   * The longest a booking of this replica may take to reach its peers' views (the port's batching delay), for
   * {@link #peerCount}. Called under the admission lock at every selection: it must be a cheap read and must not
   * throw. The default, 0, counts no booking as unseen.
   *
   * @return nanoseconds, zero or more
   */
  default long deliveryWindowNanos() {
    return 0;
  }

  /**
   * How long after a booking here its peers' views typically show it (the port's batching plus its transport's
   * delivery), for the policies' estimate of the selections the peers made that this replica's view cannot show yet
   * (see {@link Candidates}: {@code kvAware} and {@code approximate} then place a request where one router would
   * have placed it within the burst of selections its replica and the peers made on the same view). Independent of
   * {@link #deliveryWindowNanos}. Called under the admission lock at every selection: it must be a cheap read and
   * must not throw. The default, 0, estimates no unseen selection (one router, or a port that cannot tell).
   *
   * @return nanoseconds, zero or more
   */
  default long viewDelayNanos() {
    return 0;
  }

  /**
   * The booked request produced its first token: its prefill tokens are no longer pending.
   *
   * @param bookingId the id given in {@link #booked}
   */
  void firstToken(long bookingId);

  /**
   * The booked request completed, failed, was cancelled or expired: all its load is released.
   *
   * @param bookingId the id given in {@link #booked}
   */
  void closed(long bookingId);
}
