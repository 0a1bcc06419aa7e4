package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.KvEventSink;
import io.kvroute.Router;
import io.kvroute.RouterListener;
import io.kvroute.Ticker;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.WorkerRegistry;
import io.kvroute.internal.Checks;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Subscribes to the KV event streams of many engine workers over ZeroMQ and feeds their events into a {@link
 * KvEventSink}, recovering lost batches through the engines' replay endpoints; thread-safe.
 *
 * <p><b>Threads.</b> One I/O thread serves every worker: it polls all SUB (live) and DEALER (replay) sockets with one
 * ZeroMQ poller, decodes, and calls the sink and the {@link EventSourceListener}. {@link #addWorker} and {@link
 * #removeWorker} may be called from any thread, before or after {@link #start()}; they take effect on the I/O thread
 * within one poll interval (100 ms). {@link #close()} sets a stop flag and waits; it never interrupts the thread,
 * since JeroMQ is not interrupt-safe.
 *
 * <p><b>Workers.</b> Either add sources by hand ({@link #addWorker(EventSourceConfig)}), or let the subscriber
 * {@linkplain Builder#follow follow a router's registry}: every registered {@link Worker} with a {@value
 * #EVENTS_ENDPOINT} endpoint is subscribed, with its {@value #REPLAY_ENDPOINT} endpoint for replays and the labels
 * {@value #TOPIC_LABEL}, {@value #SERVER_KEY_LABEL} and {@value #BIND_LABEL}; removing it from the registry
 * unsubscribes it. So a worker is registered once.
 *
 * <p><b>Streams.</b> Each source has one SUB socket per data-parallel rank (port offset by the rank). Messages are
 * {@code [topic, seq, payload]}; anything else is counted as a decode error and dropped. Each stream's recovery
 * (gaps, replays, duplicates, restarts, staleness) is decided by a {@code StreamCursor}; the README's table lists
 * what each fault leaves in the index. A SUB socket that reports a disconnection is replaced by a fresh one (see
 * {@link Builder#handshakeTimeout} for why).
 *
 * <p><b>Unregistered workers.</b> Events of a worker or rank the sink does not {@linkplain KvEventSink#accepts
 * accept} (for example published before {@code router.addWorker}) are held for {@link Builder#unacceptedHold} and
 * applied once it is accepted; after that they are dropped, reported through {@link
 * EventSourceListener#onEventsDropped} and a warning, and counted as dropped, and the stream replays from the
 * engine's start as soon as the worker is accepted. A batch naming a rank its source does not have is dropped at
 * once.
 *
 * <p><b>Bad input</b> (malformed msgpack, wrong types, wrong frame counts, huge declared lengths) is counted, reported
 * through {@link EventSourceListener#onDecodeError} and dropped; ZeroMQ's maximum message size bounds what a peer can
 * make the subscriber buffer, and replay buffers are bounded in batches and bytes. No exception from the sink, the
 * listener or a payload stops the I/O thread.
 */
public final class KvEventSubscriber implements AutoCloseable {
  /** The {@link Worker} endpoint naming an engine's KV event publisher, for example {@code tcp://10.0.0.5:5557}. */
  public static final String EVENTS_ENDPOINT = "kv-events";
  /** The {@link Worker} endpoint naming an engine's replay socket, for example {@code tcp://10.0.0.5:5558}. */
  public static final String REPLAY_ENDPOINT = "kv-replay";
  /** The {@link Worker} label holding the topic to subscribe to (default empty: all). */
  public static final String TOPIC_LABEL = "kv-events.topic";
  /** The {@link Worker} label holding the engine's CURVE public key (Z85). */
  public static final String SERVER_KEY_LABEL = "kv-events.curve-server-key";
  /** The {@link Worker} label {@code true} when the subscriber binds the events endpoint and the engine connects. */
  public static final String BIND_LABEL = "kv-events.bind";

  private static final System.Logger logger = System.getLogger(KvEventSubscriber.class.getName());
  private static final int POLL_MILLIS = 100;
  private static final int MAX_MESSAGES_PER_POLL = 1_000;
  private static final byte LIVE = 0;
  private static final byte REPLAY = 1;
  private static final byte MONITOR = 2;

  private final EventStream.Shared shared;
  private final ZContext context;
  private final @Nullable ZapAllowList allowList;
  private final Thread thread;
  private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
  private final Map<WorkerId, EventStream.EventSource> sources = new ConcurrentHashMap<>();
  private final Object lifecycle = new Object();
  private volatile boolean started;
  private volatile boolean stopping;
  private boolean closed; // guarded by lifecycle
  private @Nullable WorkerRegistry followed; // guarded by lifecycle
  private @Nullable RouterListener follower; // guarded by lifecycle

  // Owned by the I/O thread.
  private ZMQ.@Nullable Poller poller;
  private EventStream[] polledStreams = new EventStream[0];
  private byte[] polledKinds = new byte[0];

  private KvEventSubscriber(Builder b) {
    StreamCursor.Settings settings = new StreamCursor.Settings(true, b.replayTimeout.toNanos(),
        b.replayCooldown.toNanos(), b.maxBufferedBatches, b.maxBufferedBytes, b.staleAfter.toNanos(),
        b.purgeAfter.toNanos());
    this.context = new ZContext(1);
    this.context.setLinger(0);
    this.shared = new EventStream.Shared(context, Objects.requireNonNull(b.sink, "sink"), b.listener, settings,
        b.ticker, b.maxMessageSize, (int) b.handshakeTimeout.toMillis(), b.unacceptedHold.toNanos(),
        b.silentAfter.toNanos(), b.reportTo, b.clientKeys, b.serverKeys);
    this.allowList = b.allowedClients == null ? null : new ZapAllowList(context, b.allowedClients, "subscriber");
    this.thread = new Thread(this::run, "kvroute-zmq-subscriber");
    this.thread.setDaemon(true);
  }

  /**
   * A builder; {@link Builder#sink} is required.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Subscribes to a worker's events: the given ranks, topic and replay endpoint.
   *
   * @param worker the worker (name and first rank) events are reported under
   * @param endpoint the engine's PUB endpoint for the first rank
   * @param replayEndpoint the engine's replay endpoint for the first rank, or null
   * @param topic the topic prefix, empty for all
   * @param dataParallelRanks how many ranks the engine runs
   * @throws NullPointerException if a required argument is null
   * @throws IllegalArgumentException if an argument is invalid (see {@link EventSourceConfig}) or the worker is
   *     already added
   * @throws IllegalStateException if the subscriber is closed
   */
  public void addWorker(WorkerId worker, String endpoint, @Nullable String replayEndpoint, String topic,
      int dataParallelRanks) {
    addWorker(new EventSourceConfig(worker, endpoint, replayEndpoint, topic, dataParallelRanks, null, false));
  }

  /**
   * Subscribes to a worker's events.
   *
   * @param source where the worker publishes
   * @throws NullPointerException if {@code source} is null
   * @throws IllegalArgumentException if a worker with that id is already added
   * @throws IllegalStateException if the subscriber is closed
   */
  public void addWorker(EventSourceConfig source) {
    Objects.requireNonNull(source, "source");
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("subscriber is closed");
      }
      EventStream.EventSource s = new EventStream.EventSource(source, shared);
      if (sources.putIfAbsent(source.worker(), s) != null) {
        throw new IllegalArgumentException("worker " + source.worker() + " is already added");
      }
      commands.add(() -> openSource(s));
    }
    LockSupport.unpark(thread);
  }

  /**
   * Unsubscribes from a worker and purges its entries from the sink.
   *
   * @param worker the worker id the source was added under
   * @return whether it was added
   * @throws NullPointerException if {@code worker} is null
   */
  public boolean removeWorker(WorkerId worker) {
    Objects.requireNonNull(worker, "worker");
    synchronized (lifecycle) {
      EventStream.EventSource s = closed ? null : sources.remove(worker);
      if (s == null) {
        return false;
      }
      commands.add(() -> closeSource(s, true));
    }
    LockSupport.unpark(thread);
    return true;
  }

  /**
   * The workers added and not removed.
   *
   * @return their ids, sorted
   */
  public List<WorkerId> workers() {
    List<WorkerId> ids = new ArrayList<>(sources.keySet());
    ids.sort(null);
    return ids;
  }

  /**
   * The counters of one worker, if it is added.
   *
   * @param worker the worker id the source was added under
   * @return its counters, all ranks together
   */
  public Optional<EventSourceStats> stats(WorkerId worker) {
    EventStream.EventSource s = sources.get(Objects.requireNonNull(worker, "worker"));
    return s == null ? Optional.empty() : Optional.of(s.snapshot());
  }

  /**
   * The counters of every worker.
   *
   * @return counters by worker id, sorted
   */
  public Map<WorkerId, EventSourceStats> stats() {
    Map<WorkerId, EventSourceStats> out = new LinkedHashMap<>();
    for (WorkerId id : workers()) {
      stats(id).ifPresent(s -> out.put(id, s));
    }
    return out;
  }

  /**
   * The state of every stream (one per worker and rank) that is open, for health checks.
   *
   * @return one snapshot per stream, sorted by worker id
   */
  public List<StreamHealth> health() {
    List<StreamHealth> out = new ArrayList<>();
    for (WorkerId id : workers()) {
      EventStream.EventSource s = sources.get(id);
      if (s != null) {
        for (EventStream stream : s.streams) {
          out.add(stream.health());
        }
      }
    }
    return out;
  }

  /**
   * Starts the I/O thread; idempotent.
   *
   * @throws IllegalStateException if the subscriber is closed
   */
  public void start() {
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("subscriber is closed");
      }
      if (!started) {
        started = true;
        thread.start();
      }
    }
  }

  /**
   * Stops the I/O thread, waits for it, and closes every socket; stops following the registry it was built to
   * follow (its listener is removed from it); idempotent. Does not purge the sink.
   */
  @Override
  public void close() {
    WorkerRegistry registry;
    RouterListener listener;
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
      stopping = true;
      registry = followed;
      listener = follower;
      followed = null;
      follower = null;
    }
    if (registry != null && listener != null) {
      registry.removeListener(listener);
    }
    if (started) {
      LockSupport.unpark(thread);
      boolean interrupted = false;
      while (thread.isAlive()) {
        try {
          thread.join();
        } catch (InterruptedException e) {
          interrupted = true; // keep waiting: the thread stops on the flag within one poll interval
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    } else {
      if (allowList != null) {
        allowList.close();
      }
      context.close();
    }
  }

  // ---------------------------------------------------------------- registry

  /** The source a registered worker describes, or null when it has no events endpoint. */
  static @Nullable EventSourceConfig sourceOf(Worker worker) {
    URI events = worker.endpoint(EVENTS_ENDPOINT);
    if (events == null) {
      return null;
    }
    URI replay = worker.endpoint(REPLAY_ENDPOINT);
    Map<String, String> labels = worker.labels();
    return new EventSourceConfig(worker.id(), events.toString(), replay == null ? null : replay.toString(),
        labels.getOrDefault(TOPIC_LABEL, ""), 1, labels.get(SERVER_KEY_LABEL),
        Boolean.parseBoolean(labels.getOrDefault(BIND_LABEL, "false")));
  }

  private void follow(WorkerRegistry registry) {
    RouterListener follower = new RouterListener() {
      @Override
      public void onWorkerAdded(Worker worker) {
        followAdded(worker);
      }

      @Override
      public void onWorkerRemoved(Worker worker) {
        removeWorker(worker.id());
      }

      @Override
      public void onWorkerUpdated(Worker worker) {
        EventSourceConfig next = safeSourceOf(worker);
        EventStream.EventSource current = sources.get(worker.id());
        EventSourceConfig now = current == null ? null : current.config;
        if (!Objects.equals(next, now)) {
          removeWorker(worker.id());
          followAdded(worker);
        }
      }
    };
    synchronized (lifecycle) {
      followed = registry;
      this.follower = follower;
    }
    registry.addListener(follower);
    for (Worker worker : registry.snapshot()) {
      followAdded(worker);
    }
  }

  private void followAdded(Worker worker) {
    EventSourceConfig source = safeSourceOf(worker);
    if (source == null || sources.containsKey(worker.id())) {
      return; // no events endpoint, or seen both by the listener and in the snapshot
    }
    try {
      addWorker(source);
    } catch (IllegalArgumentException | IllegalStateException e) {
      logger.log(WARNING, "not subscribing to " + worker.id() + ": " + e.getMessage());
    }
  }

  private static @Nullable EventSourceConfig safeSourceOf(Worker worker) {
    try {
      return sourceOf(worker);
    } catch (RuntimeException e) {
      logger.log(WARNING, "worker " + worker.id() + " has an invalid KV events endpoint or label: " + e.getMessage());
      return null;
    }
  }

  // ---------------------------------------------------------------- I/O thread

  private void run() {
    try {
      while (!stopping) {
        try {
          runCommands();
          if (shared.pollerDirty) {
            rebuildPoller();
          }
          pollOnce();
          tickAll();
        } catch (Throwable t) {
          if (stopping) {
            break;
          }
          logger.log(ERROR, "unexpected error in the KV event subscriber loop; continuing", t);
          LockSupport.parkNanos(Duration.ofMillis(POLL_MILLIS).toNanos());
        }
      }
    } finally {
      runCommands(); // removals still queued close their sockets (and purge)
      for (EventStream.EventSource source : sources.values()) {
        closeSource(source, false);
      }
      if (poller != null) {
        poller.close();
      }
      if (allowList != null) {
        allowList.close();
      }
      context.close();
    }
  }

  private void runCommands() {
    Runnable command;
    while ((command = commands.poll()) != null) {
      try {
        command.run();
      } catch (Throwable t) {
        logger.log(WARNING, "worker command failed", t);
      }
    }
  }

  private void tickAll() {
    for (EventStream.EventSource source : sources.values()) {
      if (!source.open) {
        continue;
      }
      for (EventStream s : source.streams) {
        guarded(s, () -> {
          s.cursor.tick();
          s.applier.tick();
          s.reportState();
        });
      }
    }
  }

  private void rebuildPoller() {
    if (poller != null) {
      poller.close();
      poller = null;
    }
    List<EventStream> streams = new ArrayList<>();
    List<Byte> kinds = new ArrayList<>();
    List<ZMQ.Socket> sockets = new ArrayList<>();
    for (EventStream.EventSource source : sources.values()) {
      if (!source.open) {
        continue;
      }
      for (EventStream s : source.streams) {
        if (s.sub != null) {
          streams.add(s);
          kinds.add(LIVE);
          sockets.add(s.sub);
        }
        if (s.monitor != null) {
          streams.add(s);
          kinds.add(MONITOR);
          sockets.add(s.monitor);
        }
        if (s.dealer != null) {
          streams.add(s);
          kinds.add(REPLAY);
          sockets.add(s.dealer);
        }
      }
    }
    polledStreams = streams.toArray(new EventStream[0]);
    polledKinds = new byte[kinds.size()];
    for (int i = 0; i < polledKinds.length; i++) {
      polledKinds[i] = kinds.get(i);
    }
    if (!streams.isEmpty()) {
      ZMQ.Poller p = context.createPoller(streams.size());
      for (ZMQ.Socket socket : sockets) {
        p.register(socket, ZMQ.Poller.POLLIN);
      }
      poller = p;
    }
    shared.pollerDirty = false;
  }

  private void pollOnce() {
    ZMQ.Poller p = poller;
    if (p == null) {
      LockSupport.parkNanos(Duration.ofMillis(POLL_MILLIS).toNanos());
      return;
    }
    // A timed-out poll sweeps every socket anyway: ZeroMQ descriptors are edge-triggered, and a missed wake-up
    // must cost one poll interval, not a stalled stream.
    boolean sweep = p.poll(POLL_MILLIS) <= 0;
    EventStream[] streams = polledStreams;
    byte[] kinds = polledKinds;
    for (int i = 0; i < streams.length && !stopping; i++) {
      if (!sweep && !p.pollin(i)) {
        continue;
      }
      EventStream s = streams[i];
      if (s.closed) {
        continue;
      }
      if (kinds[i] == REPLAY) {
        ZMQ.Socket dealer = s.dealer;
        for (int m = 0; m < MAX_MESSAGES_PER_POLL && dealer != null && s.dealer == dealer && !s.closed; m++) {
          List<byte[]> frames = receive(dealer);
          if (frames == null) {
            break;
          }
          guarded(s, () -> s.onReplayMessage(frames));
        }
      } else if (kinds[i] == MONITOR) {
        guarded(s, s::onMonitorEvents);
      } else {
        ZMQ.Socket sub = s.sub;
        for (int m = 0; m < MAX_MESSAGES_PER_POLL && sub != null && s.sub == sub && !s.closed; m++) {
          List<byte[]> frames = receive(sub);
          if (frames == null) {
            break;
          }
          guarded(s, () -> s.onLiveMessage(frames));
        }
      }
    }
  }

  private void guarded(EventStream s, Runnable action) {
    try {
      action.run();
    } catch (Throwable t) {
      logger.log(WARNING, "failed to process a message of " + s.id, t);
      s.applier.decodeError("processing failed: " + t);
    }
  }

  /** Receives one multipart message, keeping at most 6 frames; null when nothing is waiting. */
  private static @Nullable List<byte[]> receive(ZMQ.Socket socket) {
    byte[] first = socket.recv(ZMQ.DONTWAIT);
    if (first == null) {
      return null;
    }
    List<byte[]> frames = new ArrayList<>(4);
    frames.add(first);
    while (socket.hasReceiveMore()) {
      byte[] frame = socket.recv(0);
      if (frame == null) {
        break;
      }
      if (frames.size() < 6) {
        frames.add(frame);
      } else if (frames.size() == 6) {
        frames.add(new byte[0]); // marks "too many frames" without keeping them
      }
    }
    return frames;
  }

  // ---------------------------------------------------------------- sockets

  private void openSource(EventStream.EventSource source) {
    if (sources.get(source.config.worker()) != source) {
      return; // removed before it was opened
    }
    source.open = true;
    for (EventStream s : source.streams) {
      s.openSub();
    }
    shared.pollerDirty = true;
    logger.log(DEBUG, "subscribed to " + source.config);
  }

  private void closeSource(EventStream.EventSource source, boolean purge) {
    if (!source.open) {
      return;
    }
    source.open = false;
    for (EventStream s : source.streams) {
      s.close(purge);
    }
    shared.pollerDirty = true;
  }

  /** Configures a {@link KvEventSubscriber}; not thread-safe. */
  public static final class Builder {
    private @Nullable KvEventSink sink;
    private EventSourceListener listener = EventSourceListener.NONE;
    private Duration replayTimeout = Duration.ofSeconds(3);
    private Duration replayCooldown = Duration.ofSeconds(30);
    private int maxBufferedBatches = 10_000;
    private long maxBufferedBytes = 64L << 20;
    private long maxMessageSize = 16L << 20;
    private Duration handshakeTimeout = Duration.ofSeconds(1);
    private Duration staleAfter = Duration.ofSeconds(30);
    private Duration purgeAfter = Duration.ofMinutes(5);
    private Duration unacceptedHold = Duration.ofSeconds(10);
    private Duration silentAfter = Duration.ofMinutes(5);
    private @Nullable Router reportTo;
    private @Nullable CurveKeyPair clientKeys;
    private @Nullable CurveKeyPair serverKeys;
    private @Nullable Set<String> allowedClients;
    private @Nullable WorkerRegistry registry;
    private Ticker ticker = Ticker.systemTicker();

    private Builder() {}

    /**
     * Where events go (required): a {@code KvIndexer}, a router's {@code eventSink()}, or any sink.
     *
     * @param sink the sink
     * @return this builder
     * @throws NullPointerException if {@code sink} is null
     */
    public Builder sink(KvEventSink sink) {
      this.sink = Objects.requireNonNull(sink, "sink");
      return this;
    }

    /**
     * Wires the subscriber to a router: its {@linkplain Router#eventSink() event sink}, its {@linkplain
     * Router#workers() registry} to {@linkplain #follow follow}, and {@linkplain #reportTo health reports}.
     *
     * @param router the router
     * @return this builder
     */
    public Builder router(Router router) {
      Objects.requireNonNull(router, "router");
      return sink(router.eventSink()).follow(router.workers()).reportTo(router);
    }

    /**
     * Reports each stream's state to {@link Router#reportEventStream} when it changes (checked every poll interval,
     * 100 ms): {@code REPLAYING} while a replay is in flight; {@code BROKEN} when the engine has been disconnected
     * longer than {@link #staleAfter}, or its entries were purged and nothing was applied since; {@code SILENT} when
     * connected but no batch came for {@link #silentAfter}; {@code LIVE} once a batch was applied otherwise. The
     * same changes reach {@link EventSourceListener#onStreamState}.
     *
     * @param router the router whose health model consumes the states
     * @return this builder
     */
    public Builder reportTo(Router router) {
      this.reportTo = Objects.requireNonNull(router, "router");
      return this;
    }

    /**
     * How long a connected stream may go without a batch before it is reported {@code SILENT} (default 5 minutes).
     * vLLM publishes only when its cache changes, so an idle engine is silent too; the router then scores it by its
     * own predictions until the next batch.
     *
     * @param after the time
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder silentAfter(Duration after) {
      this.silentAfter = Checks.positive("silentAfter", after);
      return this;
    }

    /**
     * Subscribes to every worker of {@code registry} that has a {@value #EVENTS_ENDPOINT} endpoint, as it is
     * registered, updated and removed (see the class documentation for the endpoints and labels read).
     *
     * @param registry the router's registry ({@code router.workers()})
     * @return this builder
     * @throws NullPointerException if {@code registry} is null
     */
    public Builder follow(WorkerRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /**
     * Receives counters and stream events (default none).
     *
     * @param listener the listener
     * @return this builder
     * @throws NullPointerException if {@code listener} is null
     */
    public Builder listener(EventSourceListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * How long a replay may go without a valid reply (default 3 s). A request with no answer at all is sent once
     * more over a new connection; a replay that stalls after valid replies is asked again from where it stopped.
     *
     * @param timeout the timeout
     * @return this builder
     * @throws IllegalArgumentException if the timeout is not positive
     */
    public Builder replayTimeout(Duration timeout) {
      this.replayTimeout = Checks.positive("replayTimeout", timeout);
      return this;
    }

    /**
     * How long after a failed replay a worker's gaps are handled by purging instead of replaying (default 30 s,
     * as llm-d).
     *
     * @param cooldown the cooldown
     * @return this builder
     * @throws IllegalArgumentException if the cooldown is negative
     */
    public Builder replayCooldown(Duration cooldown) {
      this.replayCooldown = Checks.notNegative("replayCooldown", cooldown);
      return this;
    }

    /**
     * How many live batches of one stream are held while its replay is in flight (default 10,000); beyond it (or
     * beyond {@link #maxBufferedBytes}) live batches are dropped, counted, and fetched by another replay.
     *
     * @param batches the bound
     * @return this builder
     * @throws IllegalArgumentException if {@code batches} is not positive
     */
    public Builder maxBufferedBatches(int batches) {
      this.maxBufferedBatches = Checks.positive("maxBufferedBatches", batches);
      return this;
    }

    /**
     * How many payload bytes of live batches one stream holds while its replay is in flight (default 64 MiB).
     *
     * @param bytes the bound
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public Builder maxBufferedBytes(long bytes) {
      this.maxBufferedBytes = Checks.positive("maxBufferedBytes", bytes);
      return this;
    }

    /**
     * The largest message a peer may send, in bytes (default 16 MiB, far above what one engine step produces); a
     * peer sending more is disconnected by ZeroMQ before the message is buffered. Decoding a payload allocates at
     * most a small multiple of its size.
     *
     * @param bytes the bound
     * @return this builder
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public Builder maxMessageSize(long bytes) {
      this.maxMessageSize = Checks.positive("maxMessageSize", bytes);
      return this;
    }

    /**
     * How long a new connection may take to complete its ZeroMQ handshake before it is dropped and retried (default
     * 1 s). Kept short because JeroMQ 0.6.0 occasionally stalls a fresh connection's handshake (zeromq/jeromq#1022);
     * the retry is what recovers it. Raise it for links with very high latency.
     *
     * @param timeout the timeout
     * @return this builder
     * @throws IllegalArgumentException if the timeout is not between 1 ms and 1 hour
     */
    public Builder handshakeTimeout(Duration timeout) {
      this.handshakeTimeout = Checks.inRange("handshakeTimeout", timeout, Duration.ofMillis(1),
          Duration.ofHours(1));
      return this;
    }

    /**
     * How long an engine may stay disconnected before its stream is reported {@linkplain StreamHealth#stale() stale}
     * (default 30 s: twice ZeroMQ's 15 s heartbeat timeout).
     *
     * @param after the time
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder staleAfter(Duration after) {
      this.staleAfter = Checks.positive("staleAfter", after);
      return this;
    }

    /**
     * How long a stale stream keeps its entries before they are purged (default 5 minutes). A restarted engine
     * starts with an empty cache, so an engine gone this long holds none of what the index says.
     *
     * @param after the time
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder purgeAfter(Duration after) {
      this.purgeAfter = Checks.positive("purgeAfter", after);
      return this;
    }

    /**
     * How long events of a worker the sink does not accept (not registered yet) are held before they are dropped
     * (default 10 s). The held bytes per stream are bounded by {@link #maxMessageSize}.
     *
     * @param hold the time
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder unacceptedHold(Duration hold) {
      this.unacceptedHold = Checks.notNegative("unacceptedHold", hold);
      return this;
    }

    /**
     * The subscriber's CURVE key pair, used toward sources with a {@linkplain EventSourceConfig#serverPublicKey()
     * server key}; by default an ephemeral pair is generated (enough unless engines authenticate clients).
     *
     * @param keys the key pair, or null for an ephemeral one
     * @return this builder
     */
    public Builder curveClientKeys(@Nullable CurveKeyPair keys) {
      this.clientKeys = keys;
      return this;
    }

    /**
     * The subscriber's CURVE server key pair for sources in {@linkplain EventSourceConfig#bind() bind mode}: the
     * engines connect as CURVE clients knowing its public key.
     *
     * @param keys the key pair, or null for plain bound sockets
     * @return this builder
     */
    public Builder curveServerKeys(@Nullable CurveKeyPair keys) {
      this.serverKeys = keys;
      return this;
    }

    /**
     * Admits only CURVE clients with these public keys (Z85) on the subscriber's bound sockets; others fail the
     * handshake, so an engine that is not listed cannot inject events. Requires {@link #curveServerKeys}.
     *
     * @param z85PublicKeys the engines' public keys
     * @return this builder
     * @throws IllegalArgumentException if a key is not Z85
     */
    public Builder curveAllowedClients(Collection<String> z85PublicKeys) {
      Objects.requireNonNull(z85PublicKeys, "z85PublicKeys");
      for (String key : z85PublicKeys) {
        CurveKeyPair.checkKey(key, "curveAllowedClients");
      }
      this.allowedClients = Set.copyOf(z85PublicKeys);
      return this;
    }

    /**
     * The clock for replay deadlines, staleness and held events (default {@link Ticker#systemTicker()}).
     *
     * @param ticker the clock
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Creates the subscriber; call {@link KvEventSubscriber#start()} to begin.
     *
     * @return the subscriber
     * @throws IllegalStateException if no sink was set, or an allow-list was set without server keys
     */
    public KvEventSubscriber build() {
      if (sink == null) {
        throw new IllegalStateException("a sink is required");
      }
      if (allowedClients != null && serverKeys == null) {
        throw new IllegalStateException("curveAllowedClients requires curveServerKeys");
      }
      KvEventSubscriber subscriber = new KvEventSubscriber(this);
      if (registry != null) {
        subscriber.follow(registry);
      }
      return subscriber;
    }
  }
}
