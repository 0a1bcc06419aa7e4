package io.kvroute;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/**
 * The router's set of workers; thread-safe: changes are serialized and published as an immutable snapshot that
 * {@link Router#select} reads without locking.
 *
 * <p>Removing a worker purges its KV index entries and its load bookings. Listeners added with
 * {@link #addListener} hear of every addition, removal and update, on the thread that made the change, until
 * {@link #removeListener} removes them.
 */
public final class WorkerRegistry {
  private final Hooks hooks;
  private final List<RouterListener> listeners = new CopyOnWriteArrayList<>();
  private final ConcurrentHashMap<WorkerId, WorkerState> byId = new ConcurrentHashMap<>();
  private final Object changeLock = new Object();
  private volatile WorkerState[] snapshot = new WorkerState[0];

  WorkerRegistry(Hooks hooks, RouterListener listener) {
    this.hooks = hooks;
    this.listeners.add(listener);
  }

  /**
   * Adds a worker.
   *
   * @param worker the worker to add, not null
   * @throws IllegalStateException if a worker with the same id is registered, or the worker bound is reached
   */
  public void add(Worker worker) {
    Objects.requireNonNull(worker, "worker");
    synchronized (changeLock) {
      if (byId.containsKey(worker.id())) {
        throw new IllegalStateException("worker " + worker.id() + " is already registered");
      }
      WorkerState state = hooks.added(worker);
      byId.put(worker.id(), state);
      WorkerState[] next = Arrays.copyOf(snapshot, snapshot.length + 1);
      next[next.length - 1] = state;
      snapshot = next;
    }
    listeners.forEach(l -> l.onWorkerAdded(worker));
  }

  /**
   * Removes a worker, purging its index entries and bookings.
   *
   * @param id the worker's id
   * @return whether it was registered
   */
  public boolean remove(WorkerId id) {
    Objects.requireNonNull(id, "id");
    WorkerState removed;
    synchronized (changeLock) {
      removed = byId.remove(id);
      if (removed == null) {
        return false;
      }
      snapshot = Arrays.stream(snapshot).filter(s -> s != removed).toArray(WorkerState[]::new);
      removed.registered = false;
      hooks.removed(removed);
    }
    listeners.forEach(l -> l.onWorkerRemoved(removed.worker));
    return true;
  }

  /**
   * Replaces a registered worker's endpoints and labels, keeping its index entries and bookings.
   *
   * @param worker the worker's new description, with the id of a registered worker
   * @throws IllegalStateException if no worker with that id is registered
   */
  public void update(Worker worker) {
    Objects.requireNonNull(worker, "worker");
    synchronized (changeLock) {
      WorkerState state = byId.get(worker.id());
      if (state == null) {
        throw new IllegalStateException("worker " + worker.id() + " is not registered");
      }
      state.worker = worker;
    }
    listeners.forEach(l -> l.onWorkerUpdated(worker));
  }

  /**
   * Attaches the load an engine reported (for example scraped metrics) to a worker; policies see it as
   * {@link Candidates#engineLoad}; listeners hear of it through {@link RouterListener#onWorkerUpdated}.
   *
   * @param id the worker
   * @param load the load it reported
   * @return whether the worker is registered
   */
  public boolean updateLoad(WorkerId id, EngineLoad load) {
    Objects.requireNonNull(load, "load");
    WorkerState state = byId.get(Objects.requireNonNull(id, "id"));
    if (state == null) {
      return false;
    }
    state.engineLoad = load;
    hooks.loadUpdated(state, load);
    Worker worker = state.worker;
    for (RouterListener l : listeners) {
      l.onWorkerUpdated(worker);
    }
    return true;
  }

  /**
   * The registered worker with this id.
   *
   * @param id the worker's id
   * @return the worker as last added or updated, or empty if none with this id is registered
   */
  public Optional<Worker> find(WorkerId id) {
    WorkerState state = byId.get(id);
    return state == null ? Optional.empty() : Optional.of(state.worker);
  }

  /**
   * The last load reported for this worker, or null.
   *
   * @param id the worker's id
   * @return the load, or null if none was reported or the worker is not registered
   */
  public @Nullable EngineLoad engineLoad(WorkerId id) {
    WorkerState state = byId.get(id);
    return state == null ? null : state.engineLoad;
  }

  /**
   * The registered workers, in registration order.
   *
   * @return an immutable list of the workers registered at the time of the call
   */
  public List<Worker> snapshot() {
    WorkerState[] states = snapshot;
    List<Worker> workers = new ArrayList<>(states.length);
    for (WorkerState s : states) {
      workers.add(s.worker);
    }
    return List.copyOf(workers);
  }

  /**
   * The number of registered workers.
   *
   * @return the count of registered workers, zero or more
   */
  public int size() {
    return snapshot.length;
  }

  /**
   * Adds a listener for additions, removals and updates.
   *
   * @param listener called after each change, on the changing thread; it must not block. An exception it throws
   *     is logged and ignored: the change stands, the caller does not see it, and later listeners still hear it
   */
  public void addListener(RouterListener listener) {
    // Isolated as the builder's listeners are: a throw would reach addWorker's or removeWorker's caller after the
    // change was made, and the listeners after it (an event subscriber following the registry) would miss it.
    listeners.add(CompositeRouterListener.of(List.of(Objects.requireNonNull(listener, "listener"))));
  }

  /**
   * Removes a listener added with {@link #addListener}, so that it hears of no later change and the registry no
   * longer holds it (a closed component that followed the registry is then free to be collected).
   *
   * @param listener the listener, as passed to {@link #addListener}; compared by identity. If it was added more
   *     than once, one registration is removed
   * @return whether it was registered
   */
  public boolean removeListener(RouterListener listener) {
    Objects.requireNonNull(listener, "listener");
    for (RouterListener l : listeners) {
      if (l instanceof CompositeRouterListener c && c.isOnly(listener) && listeners.remove(c)) {
        return true;
      }
    }
    return false;
  }

  boolean contains(WorkerId id) {
    return byId.containsKey(id);
  }

  /** The registered worker's state, or null. */
  @Nullable WorkerState state(WorkerId id) {
    return byId.get(id);
  }

  WorkerState[] states() {
    return snapshot;
  }

  /** What the router does when workers come and go; called under the registry's change lock. */
  interface Hooks {
    WorkerState added(Worker worker);

    void removed(WorkerState state);

    /** The worker's engine reported {@code load} (already stored in {@code state}). */
    void loadUpdated(WorkerState state, EngineLoad load);
  }

  /**
   * A registered worker and the router's slots for it; the slots, generation and health object are fixed at
   * registration. A worker removed and added again gets a new state (and generation), so bookings made for the old
   * registration can never land on, or be released from, the new one.
   */
  static final class WorkerState {
    volatile Worker worker;
    volatile @Nullable EngineLoad engineLoad;
    volatile boolean registered = true;
    final int slot;
    final int predictedSlot;
    final long generation;
    final WorkerHealth health;
    volatile EventStreamState eventStream = EventStreamState.UNKNOWN;
    volatile boolean eventSeen;
    // Whether the router scores this worker by its own predictions rather than the KV index.
    volatile boolean approximate = true;
    boolean approximateLogged; // racy: at worst the approximate-mode notice is logged twice

    WorkerState(Worker worker, int slot, int predictedSlot, long generation, WorkerHealth health) {
      this.worker = worker;
      this.slot = slot;
      this.predictedSlot = predictedSlot;
      this.generation = generation;
      this.health = health;
    }

    /**
     * Re-derives {@link #approximate} from the stream state and whether an event arrived; synchronized so that the
     * last of two racing updates (a first event, a stream report) writes what both wrote before it.
     */
    synchronized void updateMode() {
      approximate = !eventStream.trustsIndex(eventSeen);
    }
  }
}
