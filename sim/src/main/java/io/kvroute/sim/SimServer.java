package io.kvroute.sim;

import static java.lang.System.Logger.Level.WARNING;

import com.sun.net.httpserver.HttpServer;
import io.kvroute.KvEvent;
import io.kvroute.events.zmq.KvEventPublisher;
import io.kvroute.events.zmq.WireFormat;
import io.kvroute.internal.Checks;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A simulated vLLM server: one {@link SimEngine} behind an OpenAI-compatible HTTP API on loopback, publishing its
 * KV events over ZeroMQ as vLLM does; thread-safe.
 *
 * <p>Endpoints: {@code POST /v1/completions}, {@code POST /v1/chat/completions} (streaming as server-sent events
 * ending in {@code data: [DONE]}, or not), {@code GET /v1/models}, {@code POST /tokenize}, {@code GET /metrics}
 * (vLLM's metric names), {@code GET /health} and {@code POST /reset_prefix_cache}. Responses always carry
 * {@code usage.prompt_tokens_details.cached_tokens}, as vLLM does with {@code --enable-prompt-tokens-details}.
 * Bad requests get OpenAI-style JSON errors: 400 for malformed input or requests longer than the cache can hold,
 * 404 for an unknown model or path, 405 for a wrong method.
 *
 * <p>One engine thread runs steps in real time: each step sleeps its {@link TimingModel} duration divided by the
 * {@linkplain Builder#speedup speed-up factor}. Text prompts are tokenized with the configured
 * {@link SimTokenizer}; generated tokens are rendered with {@link SimTokenizer#word}.
 *
 * <pre>{@code
 * try (SimServer server = SimServer.newBuilder().speedup(10).build()) {
 *   URI base = server.baseUri();                      // http://127.0.0.1:<port>
 *   String events = server.kvEventsEndpoint();        // tcp://127.0.0.1:<port>, topic "kv-events"
 * }
 * }</pre>
 */
public final class SimServer implements AutoCloseable {
  private static final System.Logger logger = System.getLogger(SimServer.class.getName());

  private final SimEngineConfig config;
  private final SimEngine engine;
  private final double speedup;
  private final HttpServer http;
  private final ExecutorService executor;
  private final @Nullable KvEventPublisher publisher;
  private final Consumer<List<KvEvent>> eventListener;
  private final Thread engineThread;
  private final Object lock = new Object();
  private final Set<EngineRequest> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicLong requestCounter = new AtomicLong();
  private volatile boolean closed;

  static {
    // The JDK server otherwise writes headers and body in separate packets, and Nagle's algorithm then holds each
    // non-streamed body back by about 40 ms. The JDK reads this once, when the JVM's first HttpServer is created.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
  }

  private SimServer(Builder b) throws IOException {
    this.config = b.engine;
    this.speedup = b.speedup;
    this.eventListener = b.eventListener;
    this.publisher = b.kvEvents
        ? KvEventPublisher.newBuilder()
            .endpoint(b.kvEventsEndpoint)
            .replayEndpoint(b.kvEventsReplayEndpoint)
            .topic(b.kvEventsTopic)
            .dataParallelRank(b.dataParallelRank)
            .bufferSteps(10_000)
            .format(b.wireFormat)
            .build()
        : null;
    this.engine = new SimEngine(config, this::publish);
    try {
      this.http = HttpServer.create(new InetSocketAddress(b.host, b.port), 0);
    } catch (IOException | RuntimeException e) {
      if (publisher != null) {
        publisher.close();
      }
      throw e;
    }
    AtomicInteger threads = new AtomicInteger();
    this.executor = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "kvroute-sim-http-" + threads.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    http.setExecutor(executor);
    http.createContext("/", new SimHttpHandler(this, config, b.requestListener, b.requestTokenizer));
    this.engineThread = new Thread(this::engineLoop, "kvroute-sim-engine");
    engineThread.setDaemon(true);
  }

  /**
   * A builder with the defaults: {@link SimEngineConfig#DEFAULT}, loopback, an ephemeral port, real time.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  private void startThreads() {
    engineThread.start();
    http.start();
  }

  /**
   * The server's base URI, for example {@code http://127.0.0.1:41234}.
   *
   * @return the URI with the bound address and port, without a trailing slash
   */
  public URI baseUri() {
    InetSocketAddress address = http.getAddress();
    return URI.create("http://" + hostLiteral(address.getAddress().getHostAddress()) + ":" + address.getPort());
  }

  private static String hostLiteral(String host) {
    return host.contains(":") ? "[" + host + "]" : host;
  }

  /**
   * The bound HTTP port.
   *
   * @return the port, from 1 to 65535
   */
  public int port() {
    return http.getAddress().getPort();
  }

  /**
   * The ZeroMQ endpoint KV events are published on, or null if publishing is off.
   *
   * @return the endpoint URI, such as {@code tcp://127.0.0.1:40123}, or null
   */
  public @Nullable String kvEventsEndpoint() {
    return publisher == null ? null : publisher.endpoint();
  }

  /**
   * The ZeroMQ replay endpoint, or null if publishing or replay is off.
   *
   * @return the endpoint URI, or null
   */
  public @Nullable String kvEventsReplayEndpoint() {
    return publisher == null ? null : publisher.replayEndpoint();
  }

  /**
   * The publisher of KV events, or null if publishing is off (tests use it to wait for subscribers).
   *
   * @return the publisher, or null
   */
  public @Nullable KvEventPublisher kvEventPublisher() {
    return publisher;
  }

  /**
   * The engine's configuration.
   *
   * @return the configuration the server was built with
   */
  public SimEngineConfig config() {
    return config;
  }

  /**
   * The engine's current state and counters.
   *
   * @return a consistent snapshot, taken under the engine's lock
   */
  public Snapshot snapshot() {
    synchronized (lock) {
      return new Snapshot(engine.numRunning(), engine.numWaiting(), engine.kvCacheUsage(), engine.cachedBlocks(),
          engine.prefixCacheQueries(), engine.prefixCacheHits(), engine.finishedRequests(), engine.preemptions());
    }
  }

  /**
   * Drops the prefix cache, as {@code POST /reset_prefix_cache}.
   *
   * @return false if requests hold blocks
   */
  public boolean resetPrefixCache() {
    synchronized (lock) {
      return engine.resetPrefixCache();
    }
  }

  /** Stops the HTTP server and the engine, aborting requests in flight, and closes the KV event publisher. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    synchronized (lock) {
      for (EngineRequest r : List.copyOf(inFlight)) {
        engine.abort(r);
      }
      lock.notifyAll();
    }
    http.stop(0);
    executor.shutdownNow();
    boolean interrupted = false;
    while (engineThread.isAlive()) {
      try {
        engineThread.join(1000);
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (publisher != null) {
      publisher.close();
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "SimServer{" + baseUri() + ", model=" + config.modelName() + ", events=" + kvEventsEndpoint() + "}";
  }

  // ---- engine loop (the HTTP side is SimHttpHandler) ----

  /**
   * Queues a generation request on the engine, for the HTTP handler; {@link #release} it when its response ends.
   *
   * @throws SimHttpHandler.BadRequest 503 while shutting down, 400 if the engine cannot take it
   */
  EngineRequest submit(int[] prompt, int maxTokens, EngineRequest.Observer observer) {
    synchronized (lock) {
      if (closed) {
        throw new SimHttpHandler.BadRequest(503, "The server is shutting down.", null);
      }
      String invalid = engine.validate(prompt.length, maxTokens);
      if (invalid != null) {
        throw new SimHttpHandler.BadRequest(400, invalid, prompt.length == 0 ? "prompt" : "max_tokens");
      }
      long n = requestCounter.incrementAndGet();
      EngineRequest request = engine.submit(prompt, maxTokens, Mix.splitMix64(n), observer);
      inFlight.add(request);
      lock.notifyAll();
      return request;
    }
  }

  /** Ends a submitted request: a no-op when it finished; frees its blocks if the client went away. */
  void release(EngineRequest request) {
    inFlight.remove(request);
    synchronized (lock) {
      engine.abort(request);
    }
  }

  private void publish(List<KvEvent> events) {
    try {
      if (publisher != null) {
        publisher.publish(events);
      }
    } catch (RuntimeException e) {
      logger.log(WARNING, "publishing KV events failed", e);
    }
    try {
      eventListener.accept(events);
    } catch (RuntimeException e) {
      logger.log(WARNING, "KV event listener failed", e);
    }
  }

  private void engineLoop() {
    while (!closed) {
      try {
        SimEngine.Step step;
        synchronized (lock) {
          while (!closed && !engine.hasWork()) {
            lock.wait();
          }
          if (closed) {
            return;
          }
          step = engine.schedule();
        }
        if (step.isEmpty()) {
          sleepNanos(1_000_000); // nothing schedulable yet (cannot happen with validated requests); do not spin
          continue;
        }
        sleepNanos((long) (step.nanos() / speedup));
        synchronized (lock) {
          engine.complete(step);
        }
      } catch (InterruptedException e) {
        if (closed) {
          return;
        }
      } catch (Throwable t) {
        logger.log(WARNING, "engine step failed; continuing", t);
      }
    }
  }

  private void sleepNanos(long nanos) {
    long deadline = System.nanoTime() + nanos;
    for (long left = nanos; left > 0 && !closed; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(this, left);
    }
  }

  /**
   * The engine's state at one moment; an immutable value.
   *
   * @param running requests running
   * @param waiting requests waiting
   * @param kvCacheUsage share of blocks not in the free queue
   * @param cachedBlocks blocks holding a hash (hittable)
   * @param prefixCacheQueries prompt tokens looked up in the prefix cache
   * @param prefixCacheHits prompt tokens found in the prefix cache
   * @param finishedRequests requests completed
   * @param preemptions requests preempted
   */
  public record Snapshot(int running, int waiting, double kvCacheUsage, int cachedBlocks, long prefixCacheQueries,
      long prefixCacheHits, long finishedRequests, long preemptions) {}

  /** Configures and starts a {@link SimServer}; not thread-safe. */
  public static final class Builder {
    private SimEngineConfig engine = SimEngineConfig.DEFAULT;
    private String host = "127.0.0.1";
    private int port;
    private double speedup = 1.0;
    private boolean kvEvents = true;
    private String kvEventsEndpoint = "tcp://127.0.0.1:0";
    private @Nullable String kvEventsReplayEndpoint = "tcp://127.0.0.1:0";
    private String kvEventsTopic = "kv-events";
    private int dataParallelRank;
    private WireFormat wireFormat = WireFormat.MAP;
    private Consumer<List<KvEvent>> eventListener = events -> {};
    private BiConsumer<String, @Nullable String> requestListener = (path, requestId) -> {};
    private @Nullable RequestTokenizer requestTokenizer;

    private Builder() {}

    /**
     * The engine's configuration (default {@link SimEngineConfig#DEFAULT}).
     *
     * @param engine the engine configuration: cache size, step budget, timing, tokenizer, model name
     * @return this builder
     */
    public Builder engine(SimEngineConfig engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
      return this;
    }

    /**
     * The address to bind (default {@code 127.0.0.1}).
     *
     * @param host a host name or IP literal to bind the HTTP server to
     * @return this builder
     */
    public Builder host(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /**
     * @param port the HTTP port, from 0 to 65535
     * @return this builder
     * @throws IllegalArgumentException if {@code port} is outside [0, 65535]; 0 (default) picks a free port
     */
    public Builder port(int port) {
      this.port = Checks.inRange("port", port, 0, 65_535);
      return this;
    }

    /**
     * Runs model time this many times faster than real time (default 1.0).
     *
     * @param speedup the speed-up factor, positive and finite (above 1 runs faster than real hardware)
     * @return this builder
     * @throws IllegalArgumentException if not a positive finite number
     */
    public Builder speedup(double speedup) {
      this.speedup = Checks.finitePositive("speedup", speedup);
      return this;
    }

    /**
     * Whether to publish KV events over ZeroMQ (default true).
     *
     * @param kvEvents true to publish, false for an engine without KV events
     * @return this builder
     */
    public Builder kvEvents(boolean kvEvents) {
      this.kvEvents = kvEvents;
      return this;
    }

    /**
     * The ZeroMQ endpoint to bind for live events (default {@code tcp://127.0.0.1:0}, an ephemeral port).
     *
     * @param endpoint a ZeroMQ endpoint to bind, such as {@code tcp://0.0.0.0:5557}
     * @return this builder
     */
    public Builder kvEventsEndpoint(String endpoint) {
      this.kvEventsEndpoint = Objects.requireNonNull(endpoint, "endpoint");
      return this;
    }

    /**
     * The ZeroMQ replay endpoint to bind, or null for none (default {@code tcp://127.0.0.1:0}).
     *
     * @param endpoint a ZeroMQ endpoint to bind, or null for no replay socket
     * @return this builder
     */
    public Builder kvEventsReplayEndpoint(@Nullable String endpoint) {
      this.kvEventsReplayEndpoint = endpoint;
      return this;
    }

    /**
     * The topic of every event message (default {@code kv-events}, as in the article's deployment).
     *
     * @param topic the topic, possibly empty
     * @return this builder
     */
    public Builder kvEventsTopic(String topic) {
      this.kvEventsTopic = Objects.requireNonNull(topic, "topic");
      return this;
    }

    /**
     * The data-parallel rank written in every batch (default 0).
     *
     * @param rank the rank, zero or more
     * @return this builder
     */
    public Builder dataParallelRank(int rank) {
      this.dataParallelRank = Checks.notNegative("dataParallelRank", rank);
      return this;
    }

    /**
     * The event batch layout (default {@link WireFormat#MAP}, current vLLM).
     *
     * @param format the layout of the events in a batch
     * @return this builder
     */
    public Builder wireFormat(WireFormat format) {
      this.wireFormat = Objects.requireNonNull(format, "format");
      return this;
    }

    /**
     * Also hands every step's KV events to {@code listener}, on the engine thread (it must be fast and must not
     * call back into the server).
     *
     * @param listener receives each step's events, in order
     * @return this builder
     */
    public Builder eventListener(Consumer<List<KvEvent>> listener) {
      this.eventListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Also tells {@code listener} of every generation request ({@code /v1/completions},
     * {@code /v1/chat/completions}) as it arrives, before its body is read: its path and its {@code X-Request-Id}
     * header (or null). Called on the HTTP thread; it must be fast. Fault tests count requests with it.
     *
     * @param listener receives the request path and its {@code X-Request-Id}, or null
     * @return this builder
     */
    public Builder requestListener(BiConsumer<String, @Nullable String> listener) {
      this.requestListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Tokenizes text prompts and chats with {@code tokenizer} instead of the engine's {@link SimTokenizer}
     * (default: none), for example with the real tokenizer the gateway uses, so that block hashes, KV events and
     * {@code /tokenize} agree with the gateway's; prompts given as token ids are taken as they are.
     *
     * @param tokenizer the tokenizer
     * @return this builder
     */
    public Builder requestTokenizer(RequestTokenizer tokenizer) {
      this.requestTokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
      return this;
    }

    /**
     * Binds the sockets and starts the engine and the HTTP server.
     *
     * @return the running server; {@link SimServer#close} stops it
     * @throws IOException if the HTTP port cannot be bound
     */
    public SimServer build() throws IOException {
      SimServer server = new SimServer(this);
      server.startThreads();
      return server;
    }
  }
}
