package io.kvroute;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Calls several {@link RouterListener}s in order, isolating each from the others and from the caller; thread-safe
 * (immutable). A listener that throws is logged (at {@code WARNING} the first time, then at {@code DEBUG}) and the
 * remaining listeners still run; the router never sees the exception.
 */
final class CompositeRouterListener implements RouterListener {
  private static final System.Logger LOG = System.getLogger(CompositeRouterListener.class.getName());

  private final RouterListener[] listeners;
  private final AtomicBoolean[] warned;

  private CompositeRouterListener(List<RouterListener> listeners) {
    this.listeners = listeners.toArray(new RouterListener[0]);
    this.warned = new AtomicBoolean[this.listeners.length];
    for (int i = 0; i < warned.length; i++) {
      warned[i] = new AtomicBoolean();
    }
  }

  /** {@link RouterListener#NONE} for no listeners, else a composite that isolates each of them. */
  static RouterListener of(List<RouterListener> listeners) {
    return listeners.isEmpty() ? RouterListener.NONE : new CompositeRouterListener(List.copyOf(listeners));
  }

  private void each(String callback, Consumer<RouterListener> call) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        call.accept(listeners[i]);
      } catch (RuntimeException | Error e) {
        if (e instanceof VirtualMachineError) {
          throw e;
        }
        Level level = warned[i].compareAndSet(false, true) ? Level.WARNING : Level.DEBUG;
        LOG.log(level, "router listener " + listeners[i].getClass().getName() + " threw from " + callback
            + "; ignored", e);
      }
    }
  }

  @Override
  public void onRouted(Routing routing) {
    each("onRouted", l -> l.onRouted(routing));
  }

  @Override
  public void onFirstToken(Routing routing, long elapsedNanos) {
    each("onFirstToken", l -> l.onFirstToken(routing, elapsedNanos));
  }

  @Override
  public void onClosed(Routing routing, long elapsedNanos) {
    each("onClosed", l -> l.onClosed(routing, elapsedNanos));
  }

  @Override
  public void onNoWorker(RouteRequest request) {
    each("onNoWorker", l -> l.onNoWorker(request));
  }

  @Override
  public void onWorkerAdded(Worker worker) {
    each("onWorkerAdded", l -> l.onWorkerAdded(worker));
  }

  @Override
  public void onWorkerRemoved(Worker worker) {
    each("onWorkerRemoved", l -> l.onWorkerRemoved(worker));
  }

  @Override
  public void onWorkerUpdated(Worker worker) {
    each("onWorkerUpdated", l -> l.onWorkerUpdated(worker));
  }

  @Override
  public void onOrphanBlocks(WorkerId worker, int blocks) {
    each("onOrphanBlocks", l -> l.onOrphanBlocks(worker, blocks));
  }

  @Override
  public void onBlockSizeMismatch(WorkerId worker, int expected, int actual, int blocks) {
    each("onBlockSizeMismatch", l -> l.onBlockSizeMismatch(worker, expected, actual, blocks));
  }

  @Override
  public void onInvalidEvent(WorkerId worker, KvEvent event, String reason) {
    each("onInvalidEvent", l -> l.onInvalidEvent(worker, event, reason));
  }

  @Override
  public void onUnknownRemoval(WorkerId worker, int blocks) {
    each("onUnknownRemoval", l -> l.onUnknownRemoval(worker, blocks));
  }

  @Override
  public void onEventForUnknownWorker(WorkerId worker, KvEvent event) {
    each("onEventForUnknownWorker", l -> l.onEventForUnknownWorker(worker, event));
  }

  @Override
  public void onIndexEviction(int entries) {
    each("onIndexEviction", l -> l.onIndexEviction(entries));
  }

  @Override
  public void onBookingsExpired(int count) {
    each("onBookingsExpired", l -> l.onBookingsExpired(count));
  }

  @Override
  public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
    each("onHealthChanged", l -> l.onHealthChanged(worker, from, to, reason));
  }

  @Override
  public String toString() {
    return "CompositeRouterListener" + List.of(listeners);
  }
}
