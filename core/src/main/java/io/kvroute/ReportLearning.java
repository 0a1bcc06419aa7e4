package io.kvroute;

/**
 * A built-in policy that learns from each engine load report when it arrives rather than when a selection next
 * reads it; called by the router under its admission lock, on the thread that delivered the report
 * ({@link WorkerRegistry#updateLoad}), after the peers' queued bookings were applied, so implementations
 * synchronize as their {@code select} does.
 *
 * <p>A report is a fact about the worker at one instant. Read at a selection, it would be compared with that
 * selection's request and bookings, which differ between gateway replicas reading the same report at different
 * moments: each replica would learn something different from the same fact. Learned on arrival, from the bookings
 * then (this router's and its peers', which every synced replica sees alike), every replica learns the same.
 */
interface ReportLearning {
  /**
   * An engine reported its load.
   *
   * @param worker the worker
   * @param load what it reported
   * @param bookedBlocks the distinct blocks the requests booked on the worker hold at this instant (this router's
   *     and, through a {@link SharedLoad} port, its peers')
   * @param cachedBlocks the blocks the router sees cached on the worker at this instant (its KV index's, plus its
   *     predictions' for a worker scored by predictions), as {@link Candidates#cachedBlocks} would show
   */
  void loadReported(WorkerId worker, EngineLoad load, long bookedBlocks, long cachedBlocks);
}
