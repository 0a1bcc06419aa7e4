package io.kvroute;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Calls several {@link RouterListener}s in order, isolating each from the others and from the caller; thread-safe
 * (immutable). Each callback is a plain loop, so that calling it allocates nothing on the selecting thread. A listener that throws is logged (at {@code WARNING} the first time, then at {@code DEBUG}) and the
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

  /** Whether this composite wraps exactly the given listener (by identity), as {@link WorkerRegistry} adds one. */
  boolean isOnly(RouterListener listener) {
    return listeners.length == 1 && listeners[0] == listener;
  }

  /** Logs a listener's failure (a JVM error is rethrown); never throws otherwise. */
  private void failed(int i, String callback, Throwable e) {
    if (e instanceof VirtualMachineError error) {
      throw error;
    }
    Level level = warned[i].compareAndSet(false, true) ? Level.WARNING : Level.DEBUG;
    LOG.log(level, "router listener " + listeners[i].getClass().getName() + " threw from " + callback
        + "; ignored", e);
  }

  @Override
  public void onRouted(Routing routing) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onRouted(routing);
      } catch (RuntimeException | Error e) {
        failed(i, "onRouted", e);
      }
    }
  }

  @Override
  public void onFirstToken(Routing routing, long elapsedNanos) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onFirstToken(routing, elapsedNanos);
      } catch (RuntimeException | Error e) {
        failed(i, "onFirstToken", e);
      }
    }
  }

  @Override
  public void onClosed(Routing routing, long elapsedNanos) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onClosed(routing, elapsedNanos);
      } catch (RuntimeException | Error e) {
        failed(i, "onClosed", e);
      }
    }
  }

  @Override
  public void onNoWorker(RouteRequest request) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onNoWorker(request);
      } catch (RuntimeException | Error e) {
        failed(i, "onNoWorker", e);
      }
    }
  }

  @Override
  public void onWorkerAdded(Worker worker) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onWorkerAdded(worker);
      } catch (RuntimeException | Error e) {
        failed(i, "onWorkerAdded", e);
      }
    }
  }

  @Override
  public void onWorkerRemoved(Worker worker) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onWorkerRemoved(worker);
      } catch (RuntimeException | Error e) {
        failed(i, "onWorkerRemoved", e);
      }
    }
  }

  @Override
  public void onWorkerUpdated(Worker worker) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onWorkerUpdated(worker);
      } catch (RuntimeException | Error e) {
        failed(i, "onWorkerUpdated", e);
      }
    }
  }

  @Override
  public void onOrphanBlocks(WorkerId worker, int blocks) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onOrphanBlocks(worker, blocks);
      } catch (RuntimeException | Error e) {
        failed(i, "onOrphanBlocks", e);
      }
    }
  }

  @Override
  public void onBlockSizeMismatch(WorkerId worker, int expected, int actual, int blocks) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onBlockSizeMismatch(worker, expected, actual, blocks);
      } catch (RuntimeException | Error e) {
        failed(i, "onBlockSizeMismatch", e);
      }
    }
  }

  @Override
  public void onInvalidEvent(WorkerId worker, KvEvent event, String reason) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onInvalidEvent(worker, event, reason);
      } catch (RuntimeException | Error e) {
        failed(i, "onInvalidEvent", e);
      }
    }
  }

  @Override
  public void onUnknownRemoval(WorkerId worker, int blocks) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onUnknownRemoval(worker, blocks);
      } catch (RuntimeException | Error e) {
        failed(i, "onUnknownRemoval", e);
      }
    }
  }

  @Override
  public void onEventForUnknownWorker(WorkerId worker, KvEvent event) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onEventForUnknownWorker(worker, event);
      } catch (RuntimeException | Error e) {
        failed(i, "onEventForUnknownWorker", e);
      }
    }
  }

  @Override
  public void onIndexEviction(int entries) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onIndexEviction(entries);
      } catch (RuntimeException | Error e) {
        failed(i, "onIndexEviction", e);
      }
    }
  }

  @Override
  public void onBookingsExpired(int count) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onBookingsExpired(count);
      } catch (RuntimeException | Error e) {
        failed(i, "onBookingsExpired", e);
      }
    }
  }

  @Override
  public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
    for (int i = 0; i < listeners.length; i++) {
      try {
        listeners[i].onHealthChanged(worker, from, to, reason);
      } catch (RuntimeException | Error e) {
        failed(i, "onHealthChanged", e);
      }
    }
  }

  @Override
  public String toString() {
    return "CompositeRouterListener" + List.of(listeners);
  }
}
