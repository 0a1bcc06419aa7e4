package io.kvroute;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import org.jspecify.annotations.Nullable;

/**
 * Applies health reports to a worker and tells the listener of state changes, outside every router lock;
 * thread-safe.
 */
final class HealthReports {
  private static final Logger LOG = System.getLogger(Router.class.getName());
  private final Ticker ticker;
  private final RouterListener listener;

  HealthReports(Ticker ticker, RouterListener listener) {
    this.ticker = ticker;
    this.listener = listener;
  }

  void success(WorkerRegistry.WorkerState state) {
    changed(state, state.health.success(ticker.read()));
  }

  void failure(WorkerRegistry.WorkerState state, FailureKind kind) {
    if (kind == FailureKind.SCRAPE_FAILED) {
      state.engineLoad = null; // a dead worker's last load must not make it look idle
    }
    changed(state, state.health.failure(kind, ticker.read()));
  }

  void drain(WorkerRegistry.WorkerState state, boolean on) {
    changed(state, state.health.drain(on));
  }

  private void changed(WorkerRegistry.WorkerState state, WorkerHealth.@Nullable Change change) {
    if (change == null || !state.registered) {
      return; // a removed worker's state, moved by the first token of a request it still held: nobody's news
    }
    WorkerId id = state.worker.id();
    LOG.log(change.to() == HealthState.EJECTED ? Level.WARNING : Level.INFO,
        () -> "worker " + id + " " + change.from() + " -> " + change.to() + ": " + change.reason());
    try {
      listener.onHealthChanged(id, change.from(), change.to(), change.reason());
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "RouterListener.onHealthChanged threw; ignored", e);
    }
  }

  /** Tells the listener of a handle's first token, with the time since its selection. */
  void firstTokenArrived(Routing routing) {
    if (listener != RouterListener.NONE) {
      listener.onFirstToken(routing, ticker.read() - routing.bookedAtNanos);
    }
  }

  /** Tells the listener of a handle's close, with the time since its selection. */
  void closed(Routing routing) {
    if (listener != RouterListener.NONE) {
      listener.onClosed(routing, ticker.read() - routing.bookedAtNanos);
    }
  }
}
