package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.KvEventSink;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZEvent;
import org.zeromq.ZMQ;
import org.zeromq.ZMonitor;

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
 * <p><b>Streams.</b> Each worker has one SUB socket per data-parallel rank, connected to the worker's endpoint with
 * its port offset by the rank. Messages are {@code [topic, seq, payload]}; anything else is counted as a decode error
 * and dropped. Events are reported under the worker name and the rank the batch names (the socket's rank when the
 * batch has none). ZeroMQ reconnects on its own (100 ms, backing off to 5 s; heartbeats detect dead peers), and a
 * SUB socket that reports a disconnection is replaced by a fresh one (see {@link Builder#handshakeTimeout} for why).
 *
 * <p><b>Sequence cursor.</b> Per stream the subscriber tracks the last applied sequence number:
 *
 * <ul>
 *   <li>the next number: the batch is applied;
 *   <li>a jump ahead (a <em>gap</em>): with a replay endpoint, a replay from the first missing number is requested
 *       over a DEALER socket; live batches arriving meanwhile are buffered (up to {@link
 *       Builder#maxBufferedBatches}) and applied after the replay in sequence order, duplicates discarded. Without a
 *       replay endpoint, or when the replay fails, times out, or starts later than asked (the engine's ring buffer,
 *       10,000 batches in vLLM, no longer holds the lost batches), the worker's entries are purged with {@link
 *       KvEventSink#resetWorker} and the worker rebuilds from new events: stale blocks are worse than missing ones.
 *       After a failed replay the subscriber waits {@link Builder#replayCooldown} before trying that worker again;
 *   <li>a number at or below the last one: the engine restarted (vLLM's sequence starts at 0 per process); its
 *       entries are purged;
 *   <li>the first batch of a stream, numbered above 0, with a replay endpoint: a replay from 0 recovers what the
 *       engine cached before the subscriber connected (as far as its ring buffer reaches).
 * </ul>
 *
 * <p><b>Cache groups.</b> Stored blocks of KV cache groups that do not count toward prefix matches (sliding window,
 * Mamba, …; see {@link BlockStored#countsTowardPrefix()}) are dropped, and so are removals naming such a group.
 *
 * <p><b>Bad input</b> (malformed msgpack, wrong types, wrong frame counts, huge declared lengths) is counted, reported
 * through {@link EventSourceListener#onDecodeError} and dropped; ZeroMQ's maximum message size bounds what a peer can
 * make the subscriber buffer. No exception from the sink, the listener or a payload stops the I/O thread.
 */
public final class KvEventSubscriber implements AutoCloseable {
  private static final System.Logger logger = System.getLogger(KvEventSubscriber.class.getName());
  private static final long NONE = -1;
  private static final int POLL_MILLIS = 100;
  private static final int MAX_MESSAGES_PER_POLL = 1_000;
  private static final int MAX_REPLAY_ATTEMPTS = 2;
  private static final byte LIVE = 0;
  private static final byte REPLAY = 1;
  private static final byte MONITOR = 2;
  private static final AtomicInteger MONITORS = new AtomicInteger();

  private final KvEventSink sink;
  private final EventSourceListener listener;
  private final long replayTimeoutNanos;
  private final long replayCooldownNanos;
  private final int maxBufferedBatches;
  private final long maxMessageSize;
  private final int handshakeMillis;
  private final @Nullable CurveKeyPair clientKeys;
  private final ZContext context;
  private final Thread thread;
  private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
  private final Map<String, Counters> counters = new ConcurrentHashMap<>();
  private final Object lifecycle = new Object();
  private volatile boolean started;
  private volatile boolean stopping;
  private boolean closed; // guarded by lifecycle

  // Owned by the I/O thread.
  private final Map<String, Worker> workers = new LinkedHashMap<>();
  private boolean pollerDirty = true;
  private ZMQ.@Nullable Poller poller;
  private Stream[] polledStreams = new Stream[0];
  private byte[] polledKinds = new byte[0];

  private KvEventSubscriber(Builder b) {
    this.sink = Objects.requireNonNull(b.sink, "sink");
    this.listener = b.listener;
    this.replayTimeoutNanos = b.replayTimeout.toNanos();
    this.replayCooldownNanos = b.replayCooldown.toNanos();
    this.maxBufferedBatches = b.maxBufferedBatches;
    this.maxMessageSize = b.maxMessageSize;
    this.handshakeMillis = (int) b.handshakeTimeout.toMillis();
    this.clientKeys = b.clientKeys;
    this.context = new ZContext(1);
    this.context.setLinger(0);
    this.thread = new Thread(this::run, "kvroute-zmq-subscriber");
    this.thread.setDaemon(true);
  }

  /** A builder; {@link Builder#sink} is required. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Subscribes to a worker's events: one rank, the given topic and replay endpoint.
   *
   * @throws NullPointerException if a required argument is null
   * @throws IllegalArgumentException if an argument is invalid (see {@link EventSourceConfig}) or a worker of that
   *     name is already added
   * @throws IllegalStateException if the subscriber is closed
   */
  public void addWorker(String workerName, String endpoint, @Nullable String replayEndpoint, String topic,
      int dataParallelRanks) {
    addWorker(new EventSourceConfig(workerName, endpoint, replayEndpoint, topic, dataParallelRanks, null));
  }

  /**
   * Subscribes to a worker's events.
   *
   * @throws NullPointerException if {@code source} is null
   * @throws IllegalArgumentException if a worker of that name is already added
   * @throws IllegalStateException if the subscriber is closed
   */
  public void addWorker(EventSourceConfig source) {
    Objects.requireNonNull(source, "source");
    synchronized (lifecycle) {
      if (closed) {
        throw new IllegalStateException("subscriber is closed");
      }
      if (counters.putIfAbsent(source.workerName(), new Counters()) != null) {
        throw new IllegalArgumentException("worker " + source.workerName() + " is already added");
      }
      commands.add(() -> openWorker(source));
    }
    LockSupport.unpark(thread);
  }

  /**
   * Unsubscribes from a worker and purges its entries from the sink; returns whether it was added.
   *
   * @throws NullPointerException if {@code workerName} is null
   */
  public boolean removeWorker(String workerName) {
    Objects.requireNonNull(workerName, "workerName");
    synchronized (lifecycle) {
      if (closed || counters.remove(workerName) == null) {
        return false;
      }
      commands.add(() -> closeWorker(workerName, true));
    }
    LockSupport.unpark(thread);
    return true;
  }

  /** The names of the workers added and not removed. */
  public List<String> workers() {
    List<String> names = new ArrayList<>(counters.keySet());
    Collections.sort(names);
    return names;
  }

  /** The counters of one worker, if it is added. */
  public Optional<EventSourceStats> stats(String workerName) {
    Counters c = counters.get(Objects.requireNonNull(workerName, "workerName"));
    return c == null ? Optional.empty() : Optional.of(c.snapshot());
  }

  /** The counters of every worker, by name. */
  public Map<String, EventSourceStats> stats() {
    Map<String, EventSourceStats> out = new LinkedHashMap<>();
    for (String name : workers()) {
      stats(name).ifPresent(s -> out.put(name, s));
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

  /** Stops the I/O thread, waits for it, and closes every socket; idempotent. Does not purge the sink. */
  @Override
  public void close() {
    synchronized (lifecycle) {
      if (closed) {
        return;
      }
      closed = true;
      stopping = true;
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
      context.close();
    }
  }

  // ---------------------------------------------------------------- I/O thread

  private void run() {
    try {
      while (!stopping) {
        try {
          runCommands();
          if (pollerDirty) {
            rebuildPoller();
          }
          pollOnce();
          checkReplayDeadlines();
        } catch (Throwable t) {
          if (stopping) {
            break;
          }
          logger.log(ERROR, "unexpected error in the KV event subscriber loop; continuing", t);
          LockSupport.parkNanos(Duration.ofMillis(POLL_MILLIS).toNanos());
        }
      }
    } finally {
      for (String name : new ArrayList<>(workers.keySet())) {
        closeWorker(name, false);
      }
      if (poller != null) {
        poller.close();
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

  private void rebuildPoller() {
    if (poller != null) {
      poller.close();
      poller = null;
    }
    List<Stream> streams = new ArrayList<>();
    List<Byte> kinds = new ArrayList<>();
    List<ZMQ.Socket> sockets = new ArrayList<>();
    for (Worker w : workers.values()) {
      for (Stream s : w.streams) {
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
    polledStreams = streams.toArray(new Stream[0]);
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
    pollerDirty = false;
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
    Stream[] streams = polledStreams;
    byte[] kinds = polledKinds;
    for (int i = 0; i < streams.length && !stopping; i++) {
      if (!sweep && !p.pollin(i)) {
        continue;
      }
      Stream s = streams[i];
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
          guarded(s, () -> onReplayMessage(s, frames));
        }
      } else if (kinds[i] == MONITOR) {
        guarded(s, () -> onMonitorEvents(s));
      } else {
        ZMQ.Socket sub = s.sub;
        for (int m = 0; m < MAX_MESSAGES_PER_POLL && sub != null && s.sub == sub && !s.closed; m++) {
          List<byte[]> frames = receive(sub);
          if (frames == null) {
            break;
          }
          guarded(s, () -> onLiveMessage(s, frames));
        }
      }
    }
  }

  private void guarded(Stream s, Runnable action) {
    try {
      action.run();
    } catch (Throwable t) {
      logger.log(WARNING, "failed to process a message of " + s.id, t);
      s.worker.counters.decodeErrors.incrementAndGet();
      safeListener(() -> listener.onDecodeError(s.worker.config.workerName(), "processing failed: " + t));
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

  private void openWorker(EventSourceConfig config) {
    Counters c = counters.get(config.workerName());
    if (c == null || workers.containsKey(config.workerName())) {
      return; // removed before it was opened, or (impossible) opened twice
    }
    Worker w = new Worker(config, c);
    for (int rank = 0; rank < config.dataParallelRanks(); rank++) {
      Stream s = new Stream(w, rank, config.endpointOf(rank), config.replayEndpointOf(rank));
      w.streams.add(s);
      openSub(s);
    }
    workers.put(config.workerName(), w);
    pollerDirty = true;
    logger.log(DEBUG, "subscribed to " + config);
  }

  /**
   * Opens a stream's SUB socket with a monitor of its disconnections. A disconnected SUB is replaced by a new
   * socket rather than left to reconnect: with JeroMQ 0.6.0, a connection whose handshake stalled (see {@link
   * Builder#handshakeTimeout}) sometimes reconnects without resending its subscription, and then never receives
   * anything. Batches lost meanwhile show up as a sequence gap.
   */
  private void openSub(Stream s) {
    EventSourceConfig config = s.worker.config;
    ZMQ.Socket sub = null;
    ZMQ.Socket monitor = null;
    try {
      sub = context.createSocket(SocketType.SUB);
      configure(sub, config);
      sub.setRcvHWM(100_000);
      sub.subscribe(config.topic().getBytes(StandardCharsets.UTF_8));
      String address = "inproc://kvroute-subscriber-monitor-" + MONITORS.incrementAndGet();
      sub.monitor(address, ZMQ.EVENT_DISCONNECTED);
      monitor = context.createSocket(SocketType.PAIR);
      monitor.setLinger(0);
      monitor.connect(address);
      sub.connect(s.endpoint);
      s.sub = sub;
      s.monitor = monitor;
    } catch (RuntimeException e) {
      logger.log(WARNING, "cannot subscribe to " + s.endpoint + " for " + s.id, e);
      if (monitor != null) {
        monitor.close();
      }
      if (sub != null) {
        sub.close();
      }
    }
    pollerDirty = true;
  }

  private void closeSub(Stream s) {
    if (s.sub != null) {
      s.sub.monitor(null, 0);
      s.sub.close();
      s.sub = null;
    }
    if (s.monitor != null) {
      s.monitor.close();
      s.monitor = null;
    }
    pollerDirty = true;
  }

  private void onMonitorEvents(Stream s) {
    boolean disconnected = false;
    ZMQ.Socket monitor = s.monitor;
    for (int i = 0; i < 64 && monitor != null; i++) {
      ZEvent event = ZEvent.recv(monitor, ZMQ.DONTWAIT);
      if (event == null) {
        break;
      }
      disconnected |= event.getEvent() == ZMonitor.Event.DISCONNECTED;
    }
    if (disconnected && !s.closed) {
      s.worker.counters.reconnects.incrementAndGet();
      logger.log(DEBUG, () -> s.id + " disconnected from " + s.endpoint + "; resubscribing with a new socket");
      closeSub(s);
      openSub(s);
    }
  }

  private void configure(ZMQ.Socket socket, EventSourceConfig config) {
    socket.setLinger(0);
    socket.setReconnectIVL(100);
    socket.setReconnectIVLMax(5_000);
    socket.setHeartbeatIvl(5_000);
    socket.setHeartbeatTimeout(15_000);
    socket.setHeartbeatTtl(15_000);
    socket.setTCPKeepAlive(1);
    socket.setMaxMsgSize(maxMessageSize);
    // JeroMQ 0.6.0 sometimes leaves a freshly connected socket without its ZMTP handshake (zeromq/jeromq#1022,
    // a selection-key race on the connecting side, a few percent of connections, more under CPU load). The
    // handshake timer is what recovers it, by reconnecting: keep it short.
    socket.setHandshakeIvl(handshakeMillis);
    if (config.serverPublicKey() != null) {
      CurveKeyPair keys = clientKeys != null ? clientKeys : ephemeralKeys();
      socket.setCurveServerKey(ZMQ.Curve.z85Decode(config.serverPublicKey()));
      socket.setCurvePublicKey(ZMQ.Curve.z85Decode(keys.publicKey()));
      socket.setCurveSecretKey(ZMQ.Curve.z85Decode(keys.secretKey()));
    }
  }

  private @Nullable CurveKeyPair ephemeral;

  private CurveKeyPair ephemeralKeys() {
    if (ephemeral == null) {
      ephemeral = CurveKeyPair.generate();
    }
    return ephemeral;
  }

  private void closeWorker(String name, boolean purge) {
    Worker w = workers.remove(name);
    if (w == null) {
      return;
    }
    for (Stream s : w.streams) {
      s.closed = true;
      closeDealer(s);
      closeSub(s);
      if (purge) {
        purge(s, PurgeReason.REMOVED);
      }
    }
    pollerDirty = true;
  }

  // ---------------------------------------------------------------- live stream

  private void onLiveMessage(Stream s, List<byte[]> frames) {
    if (frames.size() != 3) {
      decodeError(s, "expected 3 frames [topic, seq, payload] but got " + (frames.size() > 6 ? "more than 6"
          : frames.size()));
      return;
    }
    byte[] seqFrame = frames.get(1);
    if (seqFrame.length != 8) {
      decodeError(s, "sequence frame has " + seqFrame.length + " bytes, not 8");
      return;
    }
    long seq = KvEventPublisher.readSeq(seqFrame);
    if (seq < 0) {
      decodeError(s, "sequence number " + Long.toUnsignedString(seq) + " out of range");
      return;
    }
    onLive(s, seq, frames.get(2));
  }

  private void onLive(Stream s, long seq, byte[] payload) {
    if (s.replayFrom != NONE) {
      if (s.buffered.size() < maxBufferedBatches) {
        s.buffered.add(new Pending(seq, payload));
      } // else: dropped; the next live batch after the replay shows the gap and recovers it
      return;
    }
    if (s.lastSeq == NONE) {
      if (seq > 0 && canReplay(s)) {
        s.buffered.add(new Pending(seq, payload));
        startReplay(s, 0);
        return;
      }
      apply(s, seq, payload, false);
      return;
    }
    long expected = s.lastSeq + 1;
    if (seq == expected) {
      apply(s, seq, payload, false);
    } else if (seq > expected) {
      s.worker.counters.gaps.incrementAndGet();
      safeListener(() -> listener.onGap(s.id, expected, seq));
      if (canReplay(s)) {
        s.buffered.add(new Pending(seq, payload));
        startReplay(s, expected);
      } else {
        purge(s, PurgeReason.GAP_NOT_RECOVERABLE);
        apply(s, seq, payload, false);
      }
    } else {
      long last = s.lastSeq;
      s.worker.counters.restarts.incrementAndGet();
      safeListener(() -> listener.onRestart(s.id, last, seq));
      logger.log(INFO, s.id + " restarted (sequence " + last + " -> " + seq + "); purging its entries");
      purge(s, PurgeReason.RESTART);
      s.lastSeq = NONE;
      s.clearGroups();
      onLive(s, seq, payload);
    }
  }

  private boolean canReplay(Stream s) {
    return s.replayEndpoint != null && !s.failing && System.nanoTime() - s.replayCooldownUntil >= 0;
  }

  private void apply(Stream s, long seq, byte[] payload, boolean replayed) {
    s.lastSeq = seq;
    DecodedBatch batch;
    try {
      batch = KvEventCodec.decode(payload);
    } catch (KvEventFormatException e) {
      decodeError(s, "batch " + seq + ": " + e.getMessage());
      return;
    }
    int rank = batch.dataParallelRank() == null ? s.rank : batch.dataParallelRank();
    WorkerId worker = rank == s.rank ? s.id : s.id.withRank(rank);
    s.ranksSeen.set(rank);
    List<KvEvent> events = batch.events();
    List<KvEvent> applied = events;
    boolean[] keep = null;
    int filtered = 0;
    for (int i = 0; i < events.size(); i++) {
      if (!s.admit(events.get(i), batch.groupIndex(i))) {
        if (keep == null) {
          keep = new boolean[events.size()];
          Arrays.fill(keep, true);
        }
        keep[i] = false;
        filtered++;
      }
    }
    if (keep != null) {
      applied = new ArrayList<>(events.size() - filtered);
      for (int i = 0; i < events.size(); i++) {
        if (keep[i]) {
          applied.add(events.get(i));
        }
      }
      int count = filtered;
      safeListener(() -> listener.onEventsDropped(worker, count, "cache group does not count toward prefixes"));
    }
    int dropped = batch.skippedEvents() + batch.invalidEvents();
    if (dropped > 0) {
      safeListener(() -> listener.onEventsDropped(worker, dropped, batch.skippedEvents() + " of unknown type, "
          + batch.invalidEvents() + " malformed"));
    }
    int blocks = 0;
    for (KvEvent e : applied) {
      if (e instanceof BlockStored stored) {
        blocks += stored.blockHashes().length;
      }
    }
    if (!applied.isEmpty()) {
      try {
        sink.applyAll(worker, applied);
      } catch (Throwable t) {
        logger.log(WARNING, "the KV event sink failed on a batch of " + worker, t);
      }
    }
    Counters c = s.worker.counters;
    c.batches.incrementAndGet();
    c.events.addAndGet(applied.size());
    c.storedBlocks.addAndGet(blocks);
    c.droppedEvents.addAndGet(filtered + dropped);
    if (replayed) {
      c.replayedBatches.incrementAndGet();
    }
    int eventCount = applied.size();
    int blockCount = blocks;
    safeListener(() -> listener.onBatch(worker, seq, eventCount, blockCount));
  }

  private void purge(Stream s, PurgeReason reason) {
    s.ranksSeen.set(s.rank);
    for (int rank = s.ranksSeen.nextSetBit(0); rank >= 0; rank = s.ranksSeen.nextSetBit(rank + 1)) {
      WorkerId worker = s.id.withRank(rank);
      try {
        sink.resetWorker(worker);
      } catch (Throwable t) {
        logger.log(WARNING, "the KV event sink failed to reset " + worker, t);
      }
      safeListener(() -> listener.onPurged(worker, reason));
    }
    s.worker.counters.purges.incrementAndGet();
  }

  private void decodeError(Stream s, String reason) {
    s.worker.counters.decodeErrors.incrementAndGet();
    logger.log(DEBUG, () -> "dropped a message of " + s.id + ": " + reason);
    safeListener(() -> listener.onDecodeError(s.worker.config.workerName(), reason));
  }

  private void safeListener(Runnable call) {
    try {
      call.run();
    } catch (Throwable t) {
      logger.log(WARNING, "EventSourceListener threw", t);
    }
  }

  // ---------------------------------------------------------------- replay

  private void startReplay(Stream s, long from) {
    s.worker.counters.replays.incrementAndGet();
    s.replayFrom = from;
    s.replayFirst = true;
    s.replayBatches = 0;
    s.replayAttempts = 1;
    safeListener(() -> listener.onReplayStarted(s.id, from));
    sendReplayRequest(s);
  }

  /** Sends the request of the replay in flight; a failure to send fails the replay. */
  private void sendReplayRequest(Stream s) {
    String endpoint = Objects.requireNonNull(s.replayEndpoint);
    s.replayDeadline = System.nanoTime() + replayTimeoutNanos;
    try {
      if (s.dealer == null) {
        ZMQ.Socket dealer = context.createSocket(SocketType.DEALER);
        configure(dealer, s.worker.config);
        dealer.setSndHWM(16);
        dealer.setRcvHWM(0);
        dealer.connect(endpoint);
        s.dealer = dealer;
        pollerDirty = true;
      }
      boolean sent = s.dealer.send(new byte[0], ZMQ.SNDMORE | ZMQ.DONTWAIT)
          && s.dealer.send(KvEventPublisher.seqBytes(s.replayFrom), ZMQ.DONTWAIT);
      if (!sent) {
        throw new IllegalStateException("replay request could not be queued");
      }
    } catch (RuntimeException e) {
      replayFailed(s, "cannot request a replay from " + endpoint + ": " + e.getMessage());
    }
  }

  private void onReplayMessage(Stream s, List<byte[]> frames) {
    if (s.replayFrom == NONE) {
      return; // a late reply to a replay we gave up on
    }
    s.replayDeadline = System.nanoTime() + replayTimeoutNanos;
    int first = frames.get(0).length == 0 ? 1 : 0; // DEALER receives the ROUTER's empty delimiter
    int n = frames.size() - first;
    byte[] seqFrame;
    byte[] payload;
    if (n == 3) { // vLLM >= 0.26: [topic, seq, payload]
      seqFrame = frames.get(first + 1);
      payload = frames.get(first + 2);
    } else if (n == 2) { // vLLM < 0.26 and SGLang: [seq, payload]
      seqFrame = frames.get(first);
      payload = frames.get(first + 1);
    } else {
      decodeError(s, "replay reply has " + frames.size() + " frames");
      return;
    }
    if (seqFrame.length != 8) {
      decodeError(s, "replay sequence frame has " + seqFrame.length + " bytes, not 8");
      return;
    }
    long seq = KvEventPublisher.readSeq(seqFrame);
    if (seq == -1 || payload.length == 0) {
      finishReplay(s);
      return;
    }
    if (seq < 0) {
      decodeError(s, "replay sequence number " + Long.toUnsignedString(seq) + " out of range");
      return;
    }
    long expected = s.lastSeq == NONE ? s.replayFrom : s.lastSeq + 1;
    boolean first0 = s.replayFirst;
    s.replayFirst = false;
    if (seq < expected) {
      return; // already applied
    }
    if (seq > expected) {
      // The ring buffer no longer holds the batches we lack: what we have is stale, rebuild from here.
      logger.log(INFO, s.id + ": replay from " + expected + " began at " + seq + "; purging and rebuilding");
      if (s.lastSeq != NONE || !first0) {
        purge(s, PurgeReason.REPLAY_INCOMPLETE);
      }
    }
    s.replayBatches++;
    apply(s, seq, payload, true);
  }

  private void finishReplay(Stream s) {
    int batches = s.replayBatches;
    safeListener(() -> listener.onReplayFinished(s.id, batches));
    s.replayFrom = NONE;
    drainBuffered(s);
  }

  private void replayFailed(Stream s, String reason) {
    s.worker.counters.replayFailures.incrementAndGet();
    logger.log(WARNING, s.id + ": " + reason);
    safeListener(() -> listener.onReplayFailed(s.id, reason));
    closeDealer(s); // late replies must not mix with a later replay
    s.replayCooldownUntil = System.nanoTime() + replayCooldownNanos;
    s.replayFrom = NONE;
    if (s.lastSeq != NONE) {
      purge(s, PurgeReason.REPLAY_FAILED);
      s.lastSeq = NONE;
    }
    s.failing = true; // no new replay while draining, even with a zero cooldown
    try {
      drainBuffered(s);
    } finally {
      s.failing = false;
    }
  }

  private void drainBuffered(Stream s) {
    List<Pending> pending = s.buffered;
    s.buffered = new ArrayList<>();
    pending.sort(Comparator.comparingLong(Pending::seq));
    for (Pending p : pending) {
      if (s.replayFrom != NONE) {
        onLive(s, p.seq, p.payload); // a new replay started: keep buffering
      } else if (s.lastSeq == NONE || p.seq > s.lastSeq) {
        onLive(s, p.seq, p.payload);
      } // else a duplicate of a replayed batch
    }
  }

  private void checkReplayDeadlines() {
    long now = System.nanoTime();
    for (Worker w : workers.values()) {
      for (Stream s : w.streams) {
        if (s.replayFrom != NONE && now - s.replayDeadline >= 0) {
          if (s.replayFirst && s.replayAttempts < MAX_REPLAY_ATTEMPTS) {
            // No answer at all: the request may have died with a stalled connection. Ask again on a new one.
            logger.log(DEBUG, () -> s.id + ": no answer to replay from " + s.replayFrom + "; asking again");
            s.replayAttempts++;
            closeDealer(s);
            sendReplayRequest(s);
          } else {
            replayFailed(s, "replay from " + s.replayFrom + " timed out at " + s.replayEndpoint);
          }
        }
      }
    }
  }

  private void closeDealer(Stream s) {
    if (s.dealer != null) {
      s.dealer.close();
      s.dealer = null;
      pollerDirty = true;
    }
  }

  // ---------------------------------------------------------------- state

  private record Pending(long seq, byte[] payload) {}

  private static final class Worker {
    final EventSourceConfig config;
    final Counters counters;
    final List<Stream> streams = new ArrayList<>();

    Worker(EventSourceConfig config, Counters counters) {
      this.config = config;
      this.counters = counters;
    }
  }

  /** One data-parallel rank of a worker: its sockets, cursor and replay state. Confined to the I/O thread. */
  private static final class Stream {
    final Worker worker;
    final int rank;
    final WorkerId id;
    final String endpoint;
    final @Nullable String replayEndpoint;
    ZMQ.@Nullable Socket sub;
    ZMQ.@Nullable Socket dealer;
    ZMQ.@Nullable Socket monitor;
    boolean closed;
    long lastSeq = NONE;
    long replayFrom = NONE;
    boolean replayFirst;
    int replayAttempts;
    boolean failing;
    int replayBatches;
    long replayDeadline;
    long replayCooldownUntil = System.nanoTime();
    List<Pending> buffered = new ArrayList<>();
    final BitSet ranksSeen = new BitSet();
    final BitSet prefixGroups = new BitSet();
    final BitSet otherGroups = new BitSet();

    Stream(Worker worker, int rank, String endpoint, @Nullable String replayEndpoint) {
      this.worker = worker;
      this.rank = rank;
      this.id = new WorkerId(worker.config.workerName(), rank);
      this.endpoint = endpoint;
      this.replayEndpoint = replayEndpoint;
    }

    /** Learns cache group kinds from stored events; returns whether the event is applied. */
    boolean admit(KvEvent event, int group) {
      if (event instanceof BlockStored stored && stored.cacheSpecKind() != null && group >= 0 && group < 4096) {
        (stored.countsTowardPrefix() ? prefixGroups : otherGroups).set(group);
      }
      return admitted(event, group);
    }

    boolean admitted(KvEvent event, int group) {
      if (event instanceof BlockStored stored) {
        return stored.countsTowardPrefix();
      }
      if (event instanceof BlockRemoved) {
        return group < 0 || group >= 4096 || !otherGroups.get(group) || prefixGroups.get(group);
      }
      return true;
    }

    void clearGroups() {
      prefixGroups.clear();
      otherGroups.clear();
    }
  }

  private static final class Counters {
    final AtomicLong batches = new AtomicLong();
    final AtomicLong events = new AtomicLong();
    final AtomicLong storedBlocks = new AtomicLong();
    final AtomicLong gaps = new AtomicLong();
    final AtomicLong replays = new AtomicLong();
    final AtomicLong replayedBatches = new AtomicLong();
    final AtomicLong replayFailures = new AtomicLong();
    final AtomicLong restarts = new AtomicLong();
    final AtomicLong purges = new AtomicLong();
    final AtomicLong decodeErrors = new AtomicLong();
    final AtomicLong droppedEvents = new AtomicLong();
    final AtomicLong reconnects = new AtomicLong();

    EventSourceStats snapshot() {
      return new EventSourceStats(batches.get(), events.get(), storedBlocks.get(), gaps.get(), replays.get(),
          replayedBatches.get(), replayFailures.get(), restarts.get(), purges.get(), decodeErrors.get(),
          droppedEvents.get(), reconnects.get());
    }
  }

  /** Configures a {@link KvEventSubscriber}; not thread-safe. */
  public static final class Builder {
    private @Nullable KvEventSink sink;
    private EventSourceListener listener = EventSourceListener.NONE;
    private Duration replayTimeout = Duration.ofSeconds(3);
    private Duration replayCooldown = Duration.ofSeconds(30);
    private int maxBufferedBatches = 10_000;
    private long maxMessageSize = 16L << 20;
    private Duration handshakeTimeout = Duration.ofSeconds(1);
    private @Nullable CurveKeyPair clientKeys;

    private Builder() {}

    /**
     * Where events go (required): a {@code KvIndexer}, a router's {@code eventSink()}, or any sink.
     *
     * @throws NullPointerException if {@code sink} is null
     */
    public Builder sink(KvEventSink sink) {
      this.sink = Objects.requireNonNull(sink, "sink");
      return this;
    }

    /**
     * Receives counters and stream events (default none).
     *
     * @throws NullPointerException if {@code listener} is null
     */
    public Builder listener(EventSourceListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * How long a replay may go without a reply (default 3 s). A request with no answer at all is sent once more
     * over a new connection; after that, or when a started reply stream stalls, the replay counts as failed.
     *
     * @throws IllegalArgumentException if the timeout is not positive
     */
    public Builder replayTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("replayTimeout must be positive but was " + timeout);
      }
      this.replayTimeout = timeout;
      return this;
    }

    /**
     * How long after a failed replay a worker's gaps are handled by purging instead of replaying (default 30 s,
     * as llm-d).
     *
     * @throws IllegalArgumentException if the cooldown is negative
     */
    public Builder replayCooldown(Duration cooldown) {
      Objects.requireNonNull(cooldown, "cooldown");
      if (cooldown.isNegative()) {
        throw new IllegalArgumentException("replayCooldown must not be negative but was " + cooldown);
      }
      this.replayCooldown = cooldown;
      return this;
    }

    /**
     * How many live batches of one stream are held while its replay is in flight (default 10,000); beyond it live
     * batches are dropped and recovered by a later replay.
     *
     * @throws IllegalArgumentException if {@code batches} is not positive
     */
    public Builder maxBufferedBatches(int batches) {
      if (batches <= 0) {
        throw new IllegalArgumentException("maxBufferedBatches must be positive but was " + batches);
      }
      this.maxBufferedBatches = batches;
      return this;
    }

    /**
     * The largest message a peer may send, in bytes (default 16 MiB, far above what one engine step produces); a
     * peer sending more is disconnected by ZeroMQ before the message is buffered. Decoding a payload allocates at
     * most a small multiple of its size.
     *
     * @throws IllegalArgumentException if {@code bytes} is not positive
     */
    public Builder maxMessageSize(long bytes) {
      if (bytes <= 0) {
        throw new IllegalArgumentException("maxMessageSize must be positive but was " + bytes);
      }
      this.maxMessageSize = bytes;
      return this;
    }

    /**
     * How long a new connection may take to complete its ZeroMQ handshake before it is dropped and retried (default
     * 1 s). Kept short because JeroMQ 0.6.0 occasionally stalls a fresh connection's handshake (zeromq/jeromq#1022);
     * the retry is what recovers it. Raise it for links with very high latency.
     *
     * @throws IllegalArgumentException if the timeout is not between 1 ms and 1 hour
     */
    public Builder handshakeTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.toMillis() < 1 || timeout.toMillis() > 3_600_000) {
        throw new IllegalArgumentException("handshakeTimeout must be between 1 ms and 1 hour but was " + timeout);
      }
      this.handshakeTimeout = timeout;
      return this;
    }

    /**
     * The subscriber's CURVE key pair, used toward sources with a {@linkplain EventSourceConfig#serverPublicKey()
     * server key}; by default an ephemeral pair is generated (enough unless engines authenticate clients).
     */
    public Builder curveClientKeys(@Nullable CurveKeyPair keys) {
      this.clientKeys = keys;
      return this;
    }

    /**
     * Creates the subscriber; call {@link KvEventSubscriber#start()} to begin.
     *
     * @throws IllegalStateException if no sink was set
     */
    public KvEventSubscriber build() {
      if (sink == null) {
        throw new IllegalStateException("a sink is required");
      }
      return new KvEventSubscriber(this);
    }
  }
}
