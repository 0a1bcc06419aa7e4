package io.kvroute;

import java.util.List;

/**
 * Receives KV cache events from an event source (the ZeroMQ subscriber, a test, a custom adapter); implementations
 * must be thread-safe, since sources call from their own threads.
 *
 * <p>Events of one worker must be delivered in the order the engine produced them. Implementations never throw on
 * bad events: they count them and report them through {@link RouterListener}.
 */
public interface KvEventSink {
  /**
   * Applies one event of {@code worker}.
   *
   * @param worker the worker the event came from
   * @param event the event
   */
  void apply(WorkerId worker, KvEvent event);

  /**
   * Applies a batch of events of {@code worker}, in order.
   *
   * @param worker the worker the events came from
   * @param events the events, in the order the engine emitted them
   */
  default void applyAll(WorkerId worker, List<? extends KvEvent> events) {
    for (KvEvent event : events) {
      apply(worker, event);
    }
  }

  /**
   * Applies a batch of events of {@code worker} held in reusable primitive columns, in order; sources that decode
   * into columns call this to skip building event objects. The default applies {@link KvEventColumns#toEvents()}
   * with {@link #applyAll}; {@link KvIndexer} and a router's {@link Router#eventSink()} apply the columns without
   * allocating. Implementations only read the columns, and the caller may reuse them once this returns.
   *
   * @param worker the worker the events come from
   * @param batch the events
   */
  default void applyColumns(WorkerId worker, KvEventColumns batch) {
    applyAll(worker, batch.toEvents());
  }

  /**
   * Whether events of {@code worker} would be applied now; sources hold (or report and drop) events of workers the
   * sink does not accept instead of sending them to be discarded. The default accepts every worker; a router's
   * {@link Router#eventSink()} accepts only registered workers. Must be cheap and thread-safe.
   *
   * @param worker the worker (name and data-parallel rank)
   * @return whether {@link #apply} would apply its events
   */
  default boolean accepts(WorkerId worker) {
    return true;
  }

  /**
   * Forgets everything known about {@code worker}'s cache, as when its engine restarted or its event stream lost
   * events that cannot be replayed. The worker stays known and rebuilds from new events.
   *
   * @param worker the worker whose cache state to forget
   */
  default void resetWorker(WorkerId worker) {
    apply(worker, KvEvent.AllBlocksCleared.INSTANCE);
  }
}
