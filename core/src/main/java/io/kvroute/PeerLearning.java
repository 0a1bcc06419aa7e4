package io.kvroute;

/**
 * A built-in policy that learns from its peer replicas' routing as from its own: the placements and warm prefixes
 * their bookings carry (see {@link SharedLoad#booked(long, WorkerId, long, long[], int, boolean, int, boolean)}) and
 * the engine steps their first tokens mark; called by {@link RemoteBookings} under the router's admission lock, on
 * the thread applying a peer's delta (never for a snapshot's bookings, which were already learned from when they
 * were delivered, or not at all), so implementations synchronize as their {@code select} does.
 *
 * <p>Without it each of N replicas learns from its own 1/N of the selections: its placement counters (which spread
 * new prefixes) count a quarter of the placements at N = 4, so replicas place new prefixes on the same workers, and
 * {@code predictedTtft}'s model of each worker's warm prefixes and its arrival rate hold a quarter of what one
 * router would learn.
 */
interface PeerLearning {
  /**
   * A peer booked a request on {@code worker}.
   *
   * @param worker the worker the peer chose
   * @param warmBlocks the prompt's blocks the peer's policy counted as a warm prefix there, 0 for none
   * @param warmKey the sequence hash of the last of those blocks (meaningless when {@code warmBlocks} is 0)
   * @param newPrefix whether the peer's policy placed a new prefix there (it counts in the placement counters)
   * @param nowNanos this router's clock
   */
  void peerBooked(WorkerId worker, int warmBlocks, long warmKey, boolean newPrefix, long nowNanos);

  /**
   * A peer's request on {@code worker} produced its first token: the worker ended an engine step about now.
   *
   * @param worker the worker
   * @param nowNanos this router's clock
   */
  void peerStepEnded(WorkerId worker, long nowNanos);
}
