package io.kvroute.events.zmq;

import io.kvroute.KvEvent;
import io.kvroute.KvEventSink;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A sink that records, per worker, the events applied since its last reset; thread-safe. */
final class RecordingSink implements KvEventSink {
  private final Map<WorkerId, List<KvEvent>> events = new HashMap<>();
  private final Map<WorkerId, Integer> resets = new HashMap<>();
  private final KvEventSink delegate;

  RecordingSink() {
    this(new KvEventSink() {
      @Override
      public void apply(WorkerId worker, KvEvent event) {}

      @Override
      public void resetWorker(WorkerId worker) {}
    });
  }

  /** Records and forwards to {@code delegate}. */
  RecordingSink(KvEventSink delegate) {
    this.delegate = delegate;
  }

  @Override
  public synchronized void apply(WorkerId worker, KvEvent event) {
    events.computeIfAbsent(worker, w -> new ArrayList<>()).add(event);
    delegate.apply(worker, event);
  }

  @Override
  public synchronized void resetWorker(WorkerId worker) {
    events.remove(worker);
    resets.merge(worker, 1, Integer::sum);
    delegate.resetWorker(worker);
  }

  synchronized List<KvEvent> events(WorkerId worker) {
    return List.copyOf(events.getOrDefault(worker, List.of()));
  }

  synchronized int resets(WorkerId worker) {
    return resets.getOrDefault(worker, 0);
  }

  /** Every worker an event or reset was delivered for. */
  synchronized java.util.Set<WorkerId> workersSeen() {
    java.util.Set<WorkerId> seen = new java.util.TreeSet<>(events.keySet());
    seen.addAll(resets.keySet());
    return seen;
  }

  synchronized int workers() {
    return events.size();
  }
}
