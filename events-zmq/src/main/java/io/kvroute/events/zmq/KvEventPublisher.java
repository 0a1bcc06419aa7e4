package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.KvEvent;
import io.kvroute.internal.Checks;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.DoubleSupplier;
import org.jspecify.annotations.Nullable;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A vLLM-compatible KV event publisher: a PUB socket sending {@code [topic, seq, payload]} and an optional ROUTER
 * replay socket served from a ring buffer of recent batches; thread-safe ({@link #publish} may be called from any
 * thread).
 *
 * <p>It speaks exactly what vLLM's {@code ZmqEventPublisher} speaks, so anything that consumes vLLM events consumes
 * it: sequence numbers start at 0 and grow by one per batch, the payload is a msgpack {@code [ts, events,
 * data_parallel_rank]} in the chosen {@link WireFormat}, and a replay request {@code [identity, "", start_seq]}
 * is answered with every buffered batch from {@code start_seq} on, then the end marker ({@code seq} = 2^64-1, empty
 * payload). Replies include the topic frame, as vLLM v0.26.0 and later do, unless {@link
 * Builder#replayWithTopic(boolean) replayWithTopic(false)} asks for the older layout.
 *
 * <p>Both sockets bind. As in vLLM, a data-parallel rank above 0 offsets an explicit TCP port by the rank; port 0
 * picks an ephemeral port, and {@link #endpoint()} tells which. The PUB socket is an XPUB, which behaves as a PUB
 * for subscribers and lets {@link #awaitSubscribers} tell when subscribers are connected (ZeroMQ drops what a PUB
 * sends before a subscriber has joined).
 *
 * <p>The simulator and the tests use it to stand in for an engine; {@link #dropNext(int)} injects loss.
 */
public final class KvEventPublisher implements AutoCloseable {
  private static final System.Logger logger = System.getLogger(KvEventPublisher.class.getName());
  static final byte[] END_SEQ = {-1, -1, -1, -1, -1, -1, -1, -1};
  private static final byte[] EMPTY = new byte[0];

  private final ZContext context;
  private final boolean ownsContext;
  private final Object lock = new Object();
  private final ZMQ.Socket pub; // guarded by lock
  private final String endpoint;
  private final @Nullable String replayEndpoint;
  private final byte[] topic;
  private final int rank;
  private final WireFormat format;
  private final int bufferSteps;
  private final boolean replayWithTopic;
  private final DoubleSupplier wallClock;
  private final ArrayDeque<Entry> ring; // guarded by lock
  private final @Nullable Thread replayThread;
  private final @Nullable ZapAllowList allowList;
  private long nextSeq; // guarded by lock
  private int dropNext; // guarded by lock
  private int subscriptions; // guarded by lock
  private volatile boolean closed;

  private record Entry(long seq, byte[] payload) {}

  private KvEventPublisher(Builder b) {
    this.rank = b.dataParallelRank;
    this.topic = b.topic.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    this.format = b.format;
    this.bufferSteps = b.bufferSteps;
    this.replayWithTopic = b.replayWithTopic;
    this.wallClock = b.wallClock;
    this.ring = new ArrayDeque<>(Math.min(bufferSteps, 1024));
    this.ownsContext = b.context == null;
    this.context = b.context == null ? new ZContext(1) : b.context;
    ZMQ.Socket router = null;
    ZapAllowList zap = null;
    try {
      if (b.allowedClients != null) {
        // The handler is bound before the sockets, so no client handshakes before it can be refused.
        zap = new ZapAllowList(context, b.allowedClients, "publisher");
      }
      pub = context.createSocket(SocketType.XPUB);
      pub.setLinger(0);
      pub.setSndHWM(b.highWaterMark);
      pub.setXpubVerbose(true);
      pub.setXpubVerboser(true);
      if (b.curve != null) {
        curveServer(pub, b.curve);
      }
      pub.bind(Endpoints.bindable(Endpoints.offset(b.endpoint, rank)));
      endpoint = pub.getLastEndpoint();
      if (b.replayEndpoint != null) {
        router = context.createSocket(SocketType.ROUTER);
        router.setLinger(0);
        router.setSndHWM(0); // a replay of the whole ring must not be dropped at the high-water mark
        if (b.curve != null) {
          curveServer(router, b.curve);
        }
        router.bind(Endpoints.bindable(Endpoints.offset(b.replayEndpoint, rank)));
        replayEndpoint = router.getLastEndpoint();
      } else {
        replayEndpoint = null;
      }
    } catch (RuntimeException e) {
      if (zap != null) {
        zap.close();
      }
      if (ownsContext) {
        context.close();
      }
      throw e;
    }
    this.allowList = zap;
    if (router != null) {
      ZMQ.Socket routerSocket = router;
      replayThread = new Thread(() -> serveReplays(routerSocket), "kvroute-zmq-replay-" + endpoint);
      replayThread.setDaemon(true);
      replayThread.start();
    } else {
      replayThread = null;
    }
  }

  private static void curveServer(ZMQ.Socket socket, CurveKeyPair keys) {
    socket.setCurveServer(true);
    socket.setCurvePublicKey(ZMQ.Curve.z85Decode(keys.publicKey()));
    socket.setCurveSecretKey(ZMQ.Curve.z85Decode(keys.secretKey()));
  }

  /**
   * A builder with vLLM's defaults: topic "", rank 0, 10,000 buffered batches, map format.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * Publishes one batch with the current wall-clock time and returns its sequence number.
   *
   * @param events the events of one engine step, in order; may be empty
   * @return the batch's sequence number, from 0
   * @throws NullPointerException if {@code events} or an element is null
   * @throws IllegalStateException if the publisher is closed
   */
  public long publish(List<? extends KvEvent> events) {
    Objects.requireNonNull(events, "events");
    byte[] payload = KvEventCodec.encode(wallClock.getAsDouble(), events, rank, format);
    return publishPayload(payload);
  }

  /** Publishes a raw payload, as is; for tests that need malformed input. */
  long publishPayload(byte[] payload) {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("publisher is closed");
      }
      long seq = nextSeq++;
      if (bufferSteps > 0) {
        if (ring.size() == bufferSteps) {
          ring.removeFirst();
        }
        ring.addLast(new Entry(seq, payload));
      }
      drainSubscriptions();
      if (dropNext > 0) {
        dropNext--;
        return seq;
      }
      pub.sendMore(topic);
      pub.sendMore(seqBytes(seq));
      pub.send(payload, 0);
      return seq;
    }
  }

  /**
   * Sends a buffered batch live again, as a copy delayed in flight arrives after its replay; for tests.
   *
   * @return whether the ring still held it
   */
  boolean resendLive(long seq) {
    synchronized (lock) {
      for (Entry e : ring) {
        if (e.seq == seq) {
          pub.sendMore(topic);
          pub.sendMore(seqBytes(seq));
          pub.send(e.payload, 0);
          return true;
        }
      }
      return false;
    }
  }

  /**
   * Fault injection for tests and simulations: the next {@code batches} batches get sequence numbers and enter the
   * replay buffer but are not sent live, as if the network or a high-water mark had dropped them.
   *
   * @param batches how many of the next batches to leave unsent, zero or more
   * @throws IllegalArgumentException if {@code batches} is negative
   */
  public void dropNext(int batches) {
    Checks.notNegative("batches", batches);
    synchronized (lock) {
      dropNext = batches;
    }
  }

  /**
   * The sequence number the next batch will get (the number of batches published so far).
   *
   * @return the next sequence number, zero or more
   */
  public long nextSequence() {
    synchronized (lock) {
      return nextSeq;
    }
  }

  /**
   * Waits until at least {@code subscribers} subscriptions are connected, or the timeout passes; returns whether
   * they are. Useful before the first publish, since ZeroMQ drops what a PUB sends before a subscriber joined.
   *
   * @param subscribers how many subscriptions to wait for
   * @param timeout the longest wait
   * @return true if that many are connected, false if the timeout passed first
   * @throws NullPointerException if {@code timeout} is null
   */
  public boolean awaitSubscribers(int subscribers, Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      synchronized (lock) {
        if (closed) {
          return false;
        }
        drainSubscriptions();
        if (subscriptions >= subscribers) {
          return true;
        }
      }
      if (System.nanoTime() - deadline >= 0) {
        return false;
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
  }

  /**
   * Subscriptions currently connected, as the XPUB socket reports them.
   *
   * @return the count, zero or more
   */
  public int subscriptions() {
    synchronized (lock) {
      drainSubscriptions();
      return subscriptions;
    }
  }

  private void drainSubscriptions() {
    byte[] message;
    while ((message = pub.recv(ZMQ.DONTWAIT)) != null) {
      if (message.length > 0 && message[0] == 1) {
        subscriptions++;
      } else if (message.length > 0 && message[0] == 0) {
        subscriptions = Math.max(0, subscriptions - 1);
      }
    }
  }

  /**
   * The bound live endpoint, with an ephemeral port resolved, for example {@code tcp://127.0.0.1:40123}.
   *
   * @return the endpoint URI, such as {@code tcp://127.0.0.1:40123}
   */
  public String endpoint() {
    return endpoint;
  }

  /**
   * The bound replay endpoint, or null when replay is off.
   *
   * @return the endpoint URI, or null
   */
  public @Nullable String replayEndpoint() {
    return replayEndpoint;
  }

  /**
   * The data-parallel rank written into every batch.
   *
   * @return the rank, from 0 to 65535
   */
  public int dataParallelRank() {
    return rank;
  }

  /** Stops serving replays, closes the sockets and, unless a context was supplied, the ZeroMQ context. */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    if (replayThread != null) {
      boolean interrupted = false;
      while (replayThread.isAlive()) {
        try {
          replayThread.join();
        } catch (InterruptedException e) {
          interrupted = true; // never interrupt a JeroMQ thread; wait for it to see the flag
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    synchronized (lock) {
      pub.close();
      ring.clear();
    }
    if (allowList != null) {
      allowList.close();
    }
    if (ownsContext) {
      context.close();
    }
  }

  private void serveReplays(ZMQ.Socket router) {
    try (ZMQ.Poller poller = context.createPoller(1)) {
      poller.register(router, ZMQ.Poller.POLLIN);
      while (!closed) {
        try {
          poller.poll(100);
          while (!closed && serveOne(router)) {
            // Drain every waiting request: ZeroMQ descriptors are edge-triggered.
          }
        } catch (Throwable t) {
          if (closed) {
            break;
          }
          logger.log(WARNING, "replay request failed on " + replayEndpoint, t);
        }
      }
    } finally {
      router.close();
    }
  }

  /** Serves one waiting request, if any; returns whether there was one. */
  private boolean serveOne(ZMQ.Socket router) {
    List<byte[]> frames = new ArrayList<>(3);
    do {
      byte[] frame = router.recv(ZMQ.DONTWAIT);
      if (frame == null) {
        if (frames.isEmpty()) {
          return false;
        }
        break;
      }
      if (frames.size() < 4) {
        frames.add(frame);
      }
    } while (router.hasReceiveMore());
    if (frames.size() != 3 || frames.get(1).length != 0 || frames.get(2).length != 8) {
      logger.log(DEBUG, "invalid replay request of " + frames.size() + " frames on " + replayEndpoint);
      return true;
    }
    byte[] identity = frames.get(0);
    long start = readSeq(frames.get(2));
    List<Entry> entries = new ArrayList<>();
    synchronized (lock) {
      for (Entry e : ring) {
        if (Long.compareUnsigned(e.seq, start) >= 0) {
          entries.add(e);
        }
      }
    }
    for (Entry e : entries) {
      router.sendMore(identity);
      router.sendMore(EMPTY);
      if (replayWithTopic) {
        router.sendMore(topic);
      }
      router.sendMore(seqBytes(e.seq));
      router.send(e.payload, 0);
    }
    router.sendMore(identity);
    router.sendMore(EMPTY);
    if (replayWithTopic) {
      router.sendMore(EMPTY);
    }
    router.sendMore(END_SEQ);
    router.send(EMPTY, 0);
    return true;
  }

  static byte[] seqBytes(long seq) {
    byte[] b = new byte[8];
    for (int i = 7; i >= 0; i--) {
      b[i] = (byte) seq;
      seq >>>= 8;
    }
    return b;
  }

  static long readSeq(byte[] b) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (b[i] & 0xFFL);
    }
    return v;
  }

  @Override
  public String toString() {
    return "KvEventPublisher{endpoint=" + endpoint + ", replay=" + replayEndpoint + ", rank=" + rank + "}";
  }

  /** Configures a {@link KvEventPublisher}; not thread-safe. */
  public static final class Builder {
    private String endpoint = "tcp://127.0.0.1:0";
    private @Nullable String replayEndpoint;
    private String topic = "";
    private int dataParallelRank;
    private int bufferSteps = 10_000;
    private int highWaterMark = 100_000;
    private WireFormat format = WireFormat.MAP;
    private boolean replayWithTopic = true;
    private DoubleSupplier wallClock = () -> System.currentTimeMillis() / 1000.0;
    private @Nullable ZContext context;
    private @Nullable CurveKeyPair curve;
    private java.util.@Nullable Set<String> allowedClients;

    private Builder() {}

    /**
     * The live endpoint to bind (default {@code tcp://127.0.0.1:0}: an ephemeral loopback port).
     *
     * @param endpoint a ZeroMQ endpoint, such as {@code tcp://0.0.0.0:5557}; port 0 picks a free port
     * @return this builder
     * @throws NullPointerException if {@code endpoint} is null
     * @throws IllegalArgumentException if it is not a tcp, ipc or inproc endpoint
     */
    public Builder endpoint(String endpoint) {
      this.endpoint = Endpoints.check(endpoint, "endpoint");
      return this;
    }

    /**
     * The replay endpoint to bind, or null (the default) for no replay socket.
     *
     * @param replayEndpoint a ZeroMQ endpoint, such as {@code tcp://0.0.0.0:5558}, or null
     * @return this builder
     * @throws IllegalArgumentException if it is not a tcp, ipc or inproc endpoint
     */
    public Builder replayEndpoint(@Nullable String replayEndpoint) {
      this.replayEndpoint = replayEndpoint == null ? null : Endpoints.check(replayEndpoint, "replayEndpoint");
      return this;
    }

    /**
     * The topic frame of every message (default empty).
     *
     * @param topic the topic, possibly empty
     * @return this builder
     * @throws NullPointerException if {@code topic} is null
     */
    public Builder topic(String topic) {
      this.topic = Objects.requireNonNull(topic, "topic");
      return this;
    }

    /**
     * The data-parallel rank written into batches; offsets explicit TCP ports as vLLM does (default 0).
     *
     * @param rank the rank, from 0 to 65535
     * @return this builder
     * @throws IllegalArgumentException if {@code rank} is negative or above 65535
     */
    public Builder dataParallelRank(int rank) {
      this.dataParallelRank = Checks.inRange("dataParallelRank", rank, 0, KvEventCodec.MAX_DATA_PARALLEL_RANK);
      return this;
    }

    /**
     * How many recent batches the replay buffer keeps (default 10,000, as vLLM).
     *
     * @param steps the batch count, zero or more (zero keeps none: replays end at once)
     * @return this builder
     * @throws IllegalArgumentException if {@code steps} is negative
     */
    public Builder bufferSteps(int steps) {
      this.bufferSteps = Checks.notNegative("bufferSteps", steps);
      return this;
    }

    /**
     * The PUB send high-water mark in messages (default 100,000, as vLLM); beyond it ZeroMQ drops batches.
     *
     * @param messages the message count, zero or more (zero: no limit, as in ZeroMQ)
     * @return this builder
     * @throws IllegalArgumentException if {@code messages} is negative
     */
    public Builder highWaterMark(int messages) {
      this.highWaterMark = Checks.notNegative("highWaterMark", messages);
      return this;
    }

    /**
     * The event layout (default {@link WireFormat#MAP}, as vLLM v0.26.0 and later).
     *
     * @param format the layout to encode events in
     * @return this builder
     * @throws NullPointerException if {@code format} is null
     */
    public Builder format(WireFormat format) {
      this.format = Objects.requireNonNull(format, "format");
      return this;
    }

    /**
     * Whether replay replies carry the topic frame, as vLLM v0.26.0 and later (default true).
     *
     * @param withTopic true to send the topic frame in replay replies, false for older vLLM's layout
     * @return this builder
     */
    public Builder replayWithTopic(boolean withTopic) {
      this.replayWithTopic = withTopic;
      return this;
    }

    /**
     * The source of batch timestamps, in seconds since the epoch (default the system clock); a simulation may
     * supply simulated time.
     *
     * @param wallClock returns seconds since the epoch
     * @return this builder
     * @throws NullPointerException if {@code wallClock} is null
     */
    public Builder wallClock(DoubleSupplier wallClock) {
      this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
      return this;
    }

    /**
     * A ZeroMQ context to create the sockets in, shared with other publishers, which the publisher does not close;
     * by default each publisher has its own context (and its own ZeroMQ I/O thread).
     *
     * @param context the shared context, or null for the publisher's own
     * @return this builder
     */
    public Builder context(@Nullable ZContext context) {
      this.context = context;
      return this;
    }

    /**
     * Makes both sockets CURVE servers with this key pair; subscribers must then know its public key.
     *
     * @param keys the server's key pair, or null for plain sockets (the default)
     * @return this builder
     */
    public Builder curveServerKeys(@Nullable CurveKeyPair keys) {
      this.curve = keys;
      return this;
    }

    /**
     * Admits only subscribers whose CURVE public key (Z85) is listed, on both the event and the replay socket;
     * others fail the handshake and receive nothing, so knowing the publisher's public key is not enough to read the
     * token-id stream. Requires {@link #curveServerKeys} and the publisher's own context (a ZeroMQ context has one
     * authentication handler).
     *
     * @param z85PublicKeys the subscribers' public keys
     * @return this builder
     * @throws IllegalArgumentException if a key is not Z85
     */
    public Builder curveAllowedClients(java.util.Collection<String> z85PublicKeys) {
      java.util.Objects.requireNonNull(z85PublicKeys, "z85PublicKeys");
      for (String key : z85PublicKeys) {
        CurveKeyPair.checkKey(key, "curveAllowedClients");
      }
      this.allowedClients = java.util.Set.copyOf(z85PublicKeys);
      return this;
    }

    /**
     * Binds the sockets and starts serving replays.
     *
     * @return the publisher
     * @throws org.zeromq.ZMQException if an endpoint cannot be bound
     * @throws IllegalStateException if an allow-list is set without server keys, or with a shared context
     */
    public KvEventPublisher build() {
      if (allowedClients != null && (curve == null || context != null)) {
        throw new IllegalStateException("curveAllowedClients requires curveServerKeys and the publisher's own context");
      }
      return new KvEventPublisher(this);
    }
  }
}
