package io.kvroute;

/**
 * A built-in policy that learns from its peer replicas' routing as from its own: the placements and warm prefixes
 * their bookings carry (see {@link SharedLoad#booked(long, WorkerId, long, long[], int, boolean, int, boolean)}), the
 * engine steps their first tokens mark, and the first-token and service times of those bookings, measured on this
 * router's clock from their arrival; called by {@link RemoteBookings} under the router's admission lock, on
 * the thread applying a peer's delta (never for a snapshot's bookings, which were already learned from when they
 * were delivered, or not at all), so implementations synchronize as their {@code select} does.
 *
 * <p>Without it each of N replicas learns from its own 1/N of the selections: its placement counters (which spread
 * new prefixes) count a quarter of the placements at N = 4, so replicas place new prefixes on the same workers, and
 * {@code predictedTtft}'s model of each worker's warm prefixes, its arrival rate and its time model hold a quarter
 * of what one router would learn.
 */
interface PeerLearning {
  /**
   * A peer booked a request on {@code worker}.
   *
   * @param worker the worker the peer chose
   * @param blocks the prompt's blocks
   * @param warmBlocks the prompt's blocks the peer's policy counted as a warm prefix there, 0 for none
   * @param warmKey the sequence hash of the last of those blocks (meaningless when {@code warmBlocks} is 0)
   * @param newPrefix whether the peer's policy placed a new prefix there (it counts in the placement counters)
   * @param nowNanos this router's clock
   */
  void peerBooked(WorkerId worker, int blocks, int warmBlocks, long warmKey, boolean newPrefix, long nowNanos);

  /**
   * A peer's request on {@code worker} produced its first token: the worker ended an engine step about now.
   *
   * @param worker the worker
   * @param nowNanos this router's clock
   */
  void peerStepEnded(WorkerId worker, long nowNanos);

  /**
   * A peer's request whose booking arrived here with its policy's note produced its first token: what the policy
   * fits its time model to, as the peer's own first token would (see {@link RouterListener#onFirstToken}), measured
   * on this router's clock from the booking's arrival to the first token's, so within one delivery window of the
   * peer's own measure.
   *
   * @param worker the worker
   * @param queuedPrefillTokens the prompt tokens this router saw waiting for a first token on the worker when the
   *     booking arrived (its own bookings' and its peers')
   * @param activeRequests the requests this router saw active on the worker when the booking arrived
   * @param prefillTokens the booking's own prompt tokens to prefill
   * @param elapsedNanos from the booking's arrival to the first token's
   */
  void peerFirstToken(WorkerId worker, long queuedPrefillTokens, int activeRequests, long prefillTokens,
      long elapsedNanos);

  /**
   * A peer's request whose booking arrived here with its policy's note was closed: a service time, as the peer's
   * own close would give it (see {@link RouterListener#onClosed}), measured on this router's clock.
   *
   * @param worker the worker
   * @param elapsedNanos from the booking's arrival to the close's
   * @param nowNanos this router's clock
   */
  void peerClosed(WorkerId worker, long elapsedNanos, long nowNanos);

  /**
   * A peer's request whose booking arrived here with its policy's note produced its first token: it decodes on
   * {@code worker} from now until its close ({@link #peerDecodeEnded}), growing the output it pins there, as the
   * router's own requests do between {@link RouterListener#onFirstToken} and {@link RouterListener#onClosed}.
   *
   * @param worker the worker
   * @param arrivedAtNanos when the booking arrived, on this router's clock
   * @param firstTokenAtNanos when its first token arrived, on this router's clock
   */
  default void peerDecodeStarted(WorkerId worker, long arrivedAtNanos, long firstTokenAtNanos) {}

  /**
   * A peer's request that {@link #peerDecodeStarted} reported was closed: it no longer decodes on {@code worker}.
   *
   * @param worker the worker
   * @param arrivedAtNanos when the booking arrived, on this router's clock
   * @param firstTokenAtNanos when its first token arrived, on this router's clock
   */
  default void peerDecodeEnded(WorkerId worker, long arrivedAtNanos, long firstTokenAtNanos) {}
}
