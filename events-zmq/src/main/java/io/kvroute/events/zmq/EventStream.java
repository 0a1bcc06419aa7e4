package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.EventStreamState;
import io.kvroute.KvEventSink;
import io.kvroute.Router;
import io.kvroute.Ticker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZEvent;
import org.zeromq.ZMQ;
import org.zeromq.ZMonitor;

/**
 * One data-parallel rank of an event source: its SUB, DEALER and monitor sockets, its {@link StreamCursor} and its
 * {@link BatchApplier}; confined to the subscriber's I/O thread (health and state reads excepted, which read
 * volatile fields).
 */
final class EventStream implements StreamCursor.Output {
  private static final System.Logger logger = System.getLogger(KvEventSubscriber.class.getName());
  private static final AtomicInteger MONITORS = new AtomicInteger();

  /** What every stream of one subscriber shares; immutable apart from the poller flag. */
  static final class Shared {
    final ZContext context;
    final KvEventSink sink;
    final EventSourceListener listener;
    final StreamCursor.Settings cursorSettings;
    final Ticker ticker;
    final long maxMessageSize;
    final int handshakeMillis;
    final long unacceptedHoldNanos;
    final long silentAfterNanos;
    final @Nullable Router reportTo;
    final @Nullable CurveKeyPair clientKeys;
    final @Nullable CurveKeyPair serverKeys;
    private @Nullable CurveKeyPair ephemeral;
    boolean pollerDirty = true;

    Shared(ZContext context, KvEventSink sink, EventSourceListener listener, StreamCursor.Settings cursorSettings,
        Ticker ticker, long maxMessageSize, int handshakeMillis, long unacceptedHoldNanos, long silentAfterNanos,
        @Nullable Router reportTo, @Nullable CurveKeyPair clientKeys, @Nullable CurveKeyPair serverKeys) {
      this.context = context;
      this.sink = sink;
      this.listener = listener;
      this.cursorSettings = cursorSettings;
      this.ticker = ticker;
      this.maxMessageSize = maxMessageSize;
      this.handshakeMillis = handshakeMillis;
      this.unacceptedHoldNanos = unacceptedHoldNanos;
      this.silentAfterNanos = silentAfterNanos;
      this.reportTo = reportTo;
      this.clientKeys = clientKeys;
      this.serverKeys = serverKeys;
    }

    void configure(ZMQ.Socket socket, EventSourceConfig config, boolean server) {
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
      if (server) {
        if (serverKeys != null) {
          socket.setCurveServer(true);
          socket.setCurvePublicKey(ZMQ.Curve.z85Decode(serverKeys.publicKey()));
          socket.setCurveSecretKey(ZMQ.Curve.z85Decode(serverKeys.secretKey()));
        }
      } else if (config.serverPublicKey() != null) {
        CurveKeyPair keys = clientKeys != null ? clientKeys : ephemeralKeys();
        socket.setCurveServerKey(ZMQ.Curve.z85Decode(config.serverPublicKey()));
        socket.setCurvePublicKey(ZMQ.Curve.z85Decode(keys.publicKey()));
        socket.setCurveSecretKey(ZMQ.Curve.z85Decode(keys.secretKey()));
      }
    }

    private CurveKeyPair ephemeralKeys() {
      if (ephemeral == null) {
        ephemeral = CurveKeyPair.generate();
      }
      return ephemeral;
    }
  }

  final EventSource source;
  final WorkerId id;
  final String endpoint;
  final @Nullable String replayEndpoint;
  final StreamCursor cursor;
  final BatchApplier applier;
  private final Shared shared;
  ZMQ.@Nullable Socket sub;
  ZMQ.@Nullable Socket dealer;
  ZMQ.@Nullable Socket monitor;
  volatile boolean closed;
  private EventStreamState reported = EventStreamState.UNKNOWN;

  EventStream(EventSource source, int offset, Shared shared) {
    EventSourceConfig config = source.config;
    this.source = source;
    this.shared = shared;
    this.id = config.workerOf(offset);
    this.endpoint = config.endpointOf(offset);
    this.replayEndpoint = config.replayEndpointOf(offset);
    StreamCursor.Settings settings = shared.cursorSettings;
    if (replayEndpoint == null) {
      settings = new StreamCursor.Settings(false, settings.replayTimeoutNanos(), settings.cooldownNanos(),
          settings.maxBufferedBatches(), settings.maxBufferedBytes(), settings.staleAfterNanos(),
          settings.purgeAfterNanos());
    }
    this.cursor = new StreamCursor(settings, shared.ticker, this);
    // A stream applies only its own rank: other ranks have their own sockets.
    this.applier = new BatchApplier(id, id.dataParallelRank(), 1, shared.sink, shared.listener, source.counters,
        shared.ticker, shared.unacceptedHoldNanos, shared.maxMessageSize, cursor::forget);
  }

  // ---------------------------------------------------------------- health

  /** The stream's state for the router's health model. */
  EventStreamState state() {
    if (cursor.replaying()) {
      return EventStreamState.REPLAYING;
    }
    if (cursor.stale() || cursor.purgedSinceApplied()) {
      return EventStreamState.BROKEN;
    }
    long age = cursor.lastBatchAgeNanos();
    if (age < 0) {
      return EventStreamState.UNKNOWN;
    }
    return cursor.connected() && age > shared.silentAfterNanos ? EventStreamState.SILENT : EventStreamState.LIVE;
  }

  /** Reports the state when it changed; called every poll interval. */
  void reportState() {
    EventStreamState state = state();
    if (state == reported) {
      return;
    }
    reported = state;
    safeListener(() -> shared.listener.onStreamState(id, state));
    if (shared.reportTo != null) {
      try {
        shared.reportTo.reportEventStream(id, state);
      } catch (RuntimeException e) {
        logger.log(WARNING, "Router.reportEventStream failed for " + id, e);
      }
    }
  }

  StreamHealth health() {
    long age = cursor.lastBatchAgeNanos();
    StreamCursor.Phase phase = cursor.phase();
    return StreamHealth.of(id, state(), cursor.connected(), age < 0 ? null : Duration.ofNanos(age),
        cursor.lastSeq(), phase == StreamCursor.Phase.REPLAYING, phase == StreamCursor.Phase.COOLING,
        cursor.stale(), cursor.purges);
  }

  // ---------------------------------------------------------------- sockets

  /**
   * Opens the SUB socket with a monitor of its connections. A disconnected SUB is replaced by a new socket rather
   * than left to reconnect: with JeroMQ 0.6.0, a connection whose handshake stalled (see {@link
   * KvEventSubscriber.Builder#handshakeTimeout}) sometimes reconnects without resending its subscription, and then
   * never receives anything. Batches lost meanwhile show up as a sequence gap.
   */
  void openSub() {
    EventSourceConfig config = source.config;
    ZMQ.Socket s = null;
    ZMQ.Socket m = null;
    try {
      s = shared.context.createSocket(SocketType.SUB);
      shared.configure(s, config, config.bind());
      s.setRcvHWM(100_000);
      s.subscribe(config.topic().getBytes(StandardCharsets.UTF_8));
      String address = "inproc://kvroute-subscriber-monitor-" + MONITORS.incrementAndGet();
      s.monitor(address, ZMQ.EVENT_DISCONNECTED | ZMQ.EVENT_CONNECTED | ZMQ.EVENT_ACCEPTED);
      m = shared.context.createSocket(SocketType.PAIR);
      m.setLinger(0);
      m.connect(address);
      if (config.bind()) {
        s.bind(Endpoints.bindable(endpoint));
      } else {
        s.connect(endpoint);
      }
      sub = s;
      monitor = m;
    } catch (RuntimeException e) {
      logger.log(WARNING, "cannot subscribe to " + endpoint + " for " + id, e);
      if (m != null) {
        m.close();
      }
      if (s != null) {
        s.close();
      }
    }
    shared.pollerDirty = true;
  }

  void closeSub() {
    if (sub != null) {
      sub.monitor(null, 0);
      sub.close();
      sub = null;
    }
    if (monitor != null) {
      monitor.close();
      monitor = null;
    }
    shared.pollerDirty = true;
  }

  void close(boolean purge) {
    closed = true;
    closeDealer();
    closeSub();
    if (purge) {
      applier.purge(PurgeReason.REMOVED);
    }
  }

  void onMonitorEvents() {
    boolean disconnected = false;
    boolean connected = false;
    ZMQ.Socket m = monitor;
    for (int i = 0; i < 64 && m != null; i++) {
      ZEvent event = ZEvent.recv(m, ZMQ.DONTWAIT);
      if (event == null) {
        break;
      }
      ZMonitor.Event e = event.getEvent();
      if (e == ZMonitor.Event.DISCONNECTED) {
        disconnected = true;
        connected = false;
      } else if (e == ZMonitor.Event.CONNECTED || e == ZMonitor.Event.ACCEPTED) {
        connected = true;
      }
    }
    if (disconnected && !closed) {
      source.counters.reconnects.incrementAndGet();
      cursor.onDisconnected();
      if (!source.config.bind()) {
        logger.log(DEBUG, () -> id + " disconnected from " + endpoint + "; resubscribing with a new socket");
        closeSub();
        openSub();
      }
    }
    if (connected && !closed) {
      cursor.onConnected();
    }
  }

  private void openDealer() {
    ZMQ.Socket d = shared.context.createSocket(SocketType.DEALER);
    shared.configure(d, source.config, false);
    // A message over the socket's limit makes JeroMQ drop the connection, and with it the replies it decoded in the
    // same read: a replay would lose the batches before an oversized one and stall. The replay socket therefore
    // admits up to 4x the limit, and an oversized batch that arrives is skipped as unreceivable, by name.
    d.setMaxMsgSize(shared.maxMessageSize > Long.MAX_VALUE / 4 ? Long.MAX_VALUE : shared.maxMessageSize * 4);
    d.setSndHWM(16);
    d.setRcvHWM(0);
    d.connect(Objects.requireNonNull(replayEndpoint));
    dealer = d;
    shared.pollerDirty = true;
  }

  private void closeDealer() {
    if (dealer != null) {
      dealer.close();
      dealer = null;
      shared.pollerDirty = true;
    }
  }

  // ---------------------------------------------------------------- messages

  void onLiveMessage(List<byte[]> frames) {
    if (frames.size() != 3) {
      applier.decodeError("expected 3 frames [topic, seq, payload] but got "
          + (frames.size() > 6 ? "more than 6" : frames.size()));
      return;
    }
    byte[] seqFrame = frames.get(1);
    if (seqFrame.length != 8) {
      applier.decodeError("sequence frame has " + seqFrame.length + " bytes, not 8");
      return;
    }
    long seq = KvEventPublisher.readSeq(seqFrame);
    if (seq < 0) {
      applier.decodeError("sequence number " + Long.toUnsignedString(seq) + " out of range");
      return;
    }
    cursor.onLive(seq, frames.get(2));
  }

  void onReplayMessage(List<byte[]> frames) {
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
      cursor.onReplayMalformed();
      applier.decodeError("replay reply has " + frames.size() + " frames");
      return;
    }
    if (seqFrame.length != 8) {
      cursor.onReplayMalformed();
      applier.decodeError("replay sequence frame has " + seqFrame.length + " bytes, not 8");
      return;
    }
    long seq = KvEventPublisher.readSeq(seqFrame);
    if (seq == -1 || payload.length == 0) {
      cursor.onReplayEnd();
      return;
    }
    if (seq < 0) {
      cursor.onReplayMalformed();
      applier.decodeError("replay sequence number " + Long.toUnsignedString(seq) + " out of range");
      return;
    }
    if (payload.length > shared.maxMessageSize) {
      cursor.onReplayOversized(seq);
      return;
    }
    cursor.onReplayReply(seq, payload);
  }

  // ---------------------------------------------------------------- StreamCursor.Output

  @Override
  public void apply(long seq, byte[] payload, boolean replayed) {
    applier.apply(seq, payload, replayed);
  }

  @Override
  public void purge(PurgeReason reason) {
    logger.log(reason == PurgeReason.REMOVED ? DEBUG : INFO, () -> id + ": purging its entries (" + reason + ")");
    applier.purge(reason);
  }

  @Override
  public void requestReplay(long fromSeq) {
    closeDealer(); // replies to an earlier request must not mix with this one
    try {
      openDealer();
      ZMQ.Socket d = Objects.requireNonNull(dealer);
      boolean sent = d.send(new byte[0], ZMQ.SNDMORE | ZMQ.DONTWAIT)
          && d.send(KvEventPublisher.seqBytes(fromSeq), ZMQ.DONTWAIT);
      if (!sent) {
        logger.log(DEBUG, () -> id + ": replay request could not be queued; it times out and is sent again");
      }
    } catch (RuntimeException e) {
      logger.log(WARNING, id + ": cannot request a replay from " + replayEndpoint + ": " + e.getMessage());
    }
  }

  @Override
  public void closeReplay() {
    closeDealer();
  }

  @Override
  public void gap(long expected, long received) {
    safeListener(() -> shared.listener.onGap(id, expected, received));
  }

  @Override
  public void restart(long lastSeq, long seq, String how) {
    logger.log(INFO, id + " restarted (" + how + "); purging its entries");
    safeListener(() -> shared.listener.onRestart(id, lastSeq, seq));
  }

  @Override
  public void replayStarted(long fromSeq) {
    safeListener(() -> shared.listener.onReplayStarted(id, fromSeq));
  }

  @Override
  public void replayFinished(int batches) {
    safeListener(() -> shared.listener.onReplayFinished(id, batches));
  }

  @Override
  public void replayFailed(String reason) {
    logger.log(WARNING, id + ": " + reason + " at " + replayEndpoint);
    safeListener(() -> shared.listener.onReplayFailed(id, reason));
  }

  static void safeListener(Runnable call) {
    try {
      call.run();
    } catch (Throwable t) {
      logger.log(WARNING, "EventSourceListener threw", t);
    }
  }

  /** One added source: its config, counters and streams; streams are opened and closed on the I/O thread. */
  static final class EventSource {
    final EventSourceConfig config;
    final SourceCounters counters = new SourceCounters();
    final List<EventStream> streams = new ArrayList<>();
    volatile boolean open;

    EventSource(EventSourceConfig config, Shared shared) {
      this.config = config;
      for (int r = 0; r < config.dataParallelRanks(); r++) {
        streams.add(new EventStream(this, r, shared));
      }
    }

    EventSourceStats snapshot() {
      List<StreamCursor> cursors = new ArrayList<>(streams.size());
      for (EventStream s : streams) {
        cursors.add(s.cursor);
      }
      return counters.snapshot(cursors);
    }
  }
}
