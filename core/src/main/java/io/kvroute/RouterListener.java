package io.kvroute;

/**
 * Receives notifications about routing decisions, workers and the KV index, for metrics and logging; implementations
 * must be thread-safe, and every method must execute fast, without external locking, and must not throw.
 *
 * <p>Methods may run on the caller of {@link Router#select}, on event-source threads, or on threads that close
 * routing handles. The index callbacks, inherited from {@link IndexListener}, may run while the index holds its
 * write lock: do not call back into the router. All methods default to doing nothing; {@link #NONE} is the no-op
 * instance. A router may have several listeners (see {@link Router.Builder#listener}); one that throws is logged and
 * skipped, never breaking the router or the others.
 */
public interface RouterListener extends IndexListener {
  /** A listener that ignores everything. */
  RouterListener NONE = new RouterListener() {};

  /**
   * A request was routed.
   *
   * @param routing the request's handle: the chosen worker, the policy, the predicted cached tokens
   */
  default void onRouted(Routing routing) {}

  /**
   * The routed request's first output token arrived ({@link Routing#firstToken()} was called for the first time).
   * With {@link Routing#worker()}, {@link Routing#policy()} and {@link Routing#predictedCachedTokens()} this is all
   * a time-to-first-token histogram needs.
   *
   * @param routing the request's handle
   * @param elapsedNanos nanoseconds from its selection to the first token, by the router's ticker
   */
  default void onFirstToken(Routing routing, long elapsedNanos) {}

  /**
   * The routed request's handle was closed for the first time by {@link Routing#close()}: it completed, failed or
   * was cancelled. A booking that expires because its handle was never closed is counted by
   * {@link #onBookingsExpired} instead, and closing its handle later reports nothing.
   *
   * @param routing the request's handle
   * @param elapsedNanos nanoseconds from its selection to the close, by the router's ticker
   */
  default void onClosed(Routing routing, long elapsedNanos) {}

  /**
   * A request found no eligible worker.
   *
   * @param request the request that could not be routed
   */
  default void onNoWorker(RouteRequest request) {}

  /**
   * A worker was added to the registry.
   *
   * @param worker the worker as added
   */
  default void onWorkerAdded(Worker worker) {}

  /**
   * A worker was removed from the registry; its index entries are purged.
   *
   * @param worker the worker as it was registered
   */
  default void onWorkerRemoved(Worker worker) {}

  /**
   * A worker's endpoints, labels or engine load changed.
   *
   * @param worker the worker as it is now
   */
  default void onWorkerUpdated(Worker worker) {}

  /** Stale load bookings (requests never closed) expired; called after the admission lock is released. */
  default void onBookingsExpired(int count) {}

  /**
   * A worker's health changed, for example after failures ejected it or a probe readmitted it; called on the
   * reporting thread, outside the admission lock.
   *
   * @param worker the worker
   * @param from its previous state
   * @param to its new state
   * @param reason a human-readable cause, such as {@code "3 consecutive failures, last CONNECT_FAILED"}
   */
  default void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {}
}
