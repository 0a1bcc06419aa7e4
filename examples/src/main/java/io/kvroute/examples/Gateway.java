package io.kvroute.examples;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.RoutingException;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.micrometer.EventSourceMetrics;
import io.kvroute.micrometer.ForwardMetrics;
import io.kvroute.micrometer.RouterMetrics;
import io.kvroute.micrometer.ScrapeMetrics;
import io.kvroute.openai.JsonException;
import io.kvroute.openai.OpenAiRequest;
import io.kvroute.openai.OpenAiRequestException;
import io.kvroute.tokenizers.HfTokenizer;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.kvroute.transport.okhttp.FallbackTokenizer;
import io.kvroute.transport.okhttp.ForwardRequest;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.HttpServerRelay;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import io.kvroute.transport.okhttp.RoutingForwarder;
import io.kvroute.transport.okhttp.TokenizeException;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A runnable OpenAI-compatible gateway: {@code POST /v1/completions} and {@code /v1/chat/completions} are routed by
 * KV-cache overlap and load to vLLM (or simulated) workers and relayed back, streamed or not; thread-safe (one
 * instance serves any number of clients).
 *
 * <pre>{@code
 * java -cp examples/target/kvroute-examples.jar io.kvroute.examples.Gateway \
 *     --tokenizer /models/Qwen3-8B \
 *     --worker vllm-0=http://10.0.0.5:8000,events=tcp://10.0.0.5:5557 \
 *     --worker vllm-1=http://10.0.0.6:8000,events=tcp://10.0.0.6:5557 \
 *     --policy kvAware --port 8080 --metrics-port 9090
 * }</pre>
 *
 * <p>Per request: the body is parsed once ({@link OpenAiRequest}), the prompt tokenized in this JVM with the model's
 * {@code tokenizer.json} and chat template ({@code --tokenizer DIR}, kvroute-tokenizers' {@link HfTokenizer}; with
 * {@code --tokenizer-fallback worker} a worker's {@code /tokenize} counts what it cannot, such as image parts), or
 * on a worker's {@code /tokenize} ({@code --tokenizer worker}, the default when no directory is given), or taken as
 * given token ids ({@code --tokenizer ids}), the worker chosen by the router, the
 * body forwarded unchanged, and the answer relayed by {@link HttpServerRelay} (an error event if the worker dies
 * mid-stream; the upstream cancelled if the client goes away). The router learns what each worker caches from its
 * KV events ({@code events=}) and its load from its {@code /metrics}; {@code --metrics-port} serves the gateway's
 * own figures (kvroute-micrometer) in Prometheus' text format.
 */
public final class Gateway implements AutoCloseable {
  /** Request bodies above this size are refused with 413. */
  static final int MAX_BODY_BYTES = 32 << 20;
  /** The most requests served at once; more are refused by the HTTP server. */
  static final int MAX_CONCURRENT_REQUESTS = 1024;
  /**
   * How long a client may take to send its request, headers and body, by default: one that sends slower holds a
   * request thread, and {@value #MAX_CONCURRENT_REQUESTS} of them (or one client whose body stops short of its
   * Content-Length) would stop the gateway serving anyone; the JDK server has no limit unless one is set.
   */
  static final int DEFAULT_REQUEST_READ_SECONDS = 60;

  private static final Set<String> NOT_FORWARDED = Set.of("host", "content-length", "content-type", "connection",
      "accept-encoding", "transfer-encoding", "keep-alive", "upgrade", "te", "trailer", "proxy-connection",
      "expect");

  static {
    HttpServerRelay.enableNoDelay(); // before the first HttpServer: 40 ms per non-streamed response otherwise
  }

  /** How prompts become token ids. */
  enum TokenizerMode {
    /** The model's files in this JVM ({@link HfTokenizer}): {@code --tokenizer DIR}. */
    LOCAL,
    /** The engine's own tokenizer: {@code POST /tokenize} on a worker (vLLM and the simulator both serve it). */
    WORKER,
    /** Only requests whose prompt is token ids are routed; text prompts and chats are refused. */
    IDS
  }

  /** One {@code --worker} flag. */
  record WorkerSpec(String name, URI http, @Nullable String events, @Nullable String replay, String topic,
      int ranks, @Nullable String model) {
    Worker toWorker(int rank) {
      Worker.Builder b = Worker.newBuilder(new WorkerId(name, rank)).endpoint(Worker.HTTP, http).model(model);
      if (events != null) { // the names kvroute-events-zmq gives a worker's event endpoints
        b.endpoint("kv-events", URI.create(events));
      }
      if (replay != null) {
        b.endpoint("kv-replay", URI.create(replay));
      }
      if (!topic.isEmpty()) {
        b.label("kv-events.topic", topic);
      }
      return b.build();
    }
  }

  /** The parsed command line. */
  record Options(List<WorkerSpec> workers, String policy, TokenizerMode tokenizer, @Nullable Path tokenizerDir,
      boolean tokenizerFallback, String host, int port, int metricsPort, int blockSize, Duration scrapeInterval,
      int requestReadSeconds, long bufferedBodyBytes) {}

  private final Options options;
  private final Router router;
  private final RoutingForwarder forwarder;
  private final @Nullable HfTokenizer localTokenizer;
  private final @Nullable KvEventSubscriber subscriber;
  private final @Nullable EngineMetricsScraper scraper;
  private final PrometheusMeterRegistry registry;
  private final ForwardMetrics forwardMetrics;
  private final HttpServer server;
  private final @Nullable HttpServer metricsServer;
  private final ExecutorService executor;
  /** Request-body bytes held by requests being served; at most {@link Options#bufferedBodyBytes()}. */
  private final AtomicLong bufferedBodyBytes = new AtomicLong();

  private Gateway(Options options) throws IOException {
    this.options = options;
    // The ports are bound first, so that a port in use fails before any thread or socket is started.
    limitRequestTime(options.requestReadSeconds());
    this.server = HttpServer.create(new InetSocketAddress(options.host(), options.port()), 0);
    HttpServer metrics = null;
    KvEventSubscriber events = null;
    EngineMetricsScraper scrapes = null;
    HfTokenizer tokenizer = null;
    try {
      if (options.metricsPort() >= 0) {
        metrics = HttpServer.create(new InetSocketAddress(options.host(), options.metricsPort()), 0);
      }
      this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
      RouterMetrics routerMetrics = new RouterMetrics();
      this.router = Router.newBuilder().policy(policy(options.policy())).blockSize(options.blockSize())
          .listener(routerMetrics).build();
      routerMetrics.monitor(router).bindTo(registry);
      EventSourceMetrics eventMetrics = new EventSourceMetrics();
      eventMetrics.bindTo(registry);
      ScrapeMetrics scrapeMetrics = new ScrapeMetrics();
      scrapeMetrics.bindTo(registry);
      this.forwardMetrics = new ForwardMetrics().follow(router.workers());
      forwardMetrics.bindTo(registry);

      boolean anyEvents = false;
      for (WorkerSpec w : options.workers()) {
        for (int rank = 0; rank < w.ranks(); rank++) {
          router.addWorker(w.toWorker(rank));
        }
        anyEvents |= w.events() != null;
      }
      if (anyEvents) {
        events = KvEventSubscriber.newBuilder().sink(router.eventSink()).listener(eventMetrics).build();
        for (WorkerSpec w : options.workers()) {
          if (w.events() != null) {
            events.addWorker(WorkerId.of(w.name()), w.events(), w.replay(), w.topic(), w.ranks());
          }
        }
        events.start();
      }
      if (!options.scrapeInterval().isZero()) {
        scrapes = EngineMetricsScraper.newBuilder(router).interval(options.scrapeInterval()).listener(scrapeMetrics)
            .build();
        scrapes.start();
      }
      RoutingForwarder.Builder fb = RoutingForwarder.newBuilder(router);
      if (options.tokenizer() == TokenizerMode.LOCAL) {
        tokenizer = HfTokenizer.load(Objects.requireNonNull(options.tokenizerDir()));
        fb.tokenizer(options.tokenizerFallback()
            ? FallbackTokenizer.of(tokenizer, OkHttpTokenizer.newBuilder().router(router).build())
            : tokenizer);
      }
      if (options.tokenizer() == TokenizerMode.WORKER) {
        fb.tokenizer(OkHttpTokenizer.newBuilder().router(router).build()); // healthy workers, hedged, 2 s budget
      }
      this.forwarder = fb.build();
    } catch (IOException | RuntimeException | Error e) {
      // Nothing started is left running: a caller that retries (another port, a fixed tokenizer path) leaks nothing.
      release(server);
      if (metrics != null) {
        release(metrics);
      }
      if (scrapes != null) {
        scrapes.close();
      }
      if (events != null) {
        events.close();
      }
      if (tokenizer != null) {
        tokenizer.close();
      }
      throw e;
    }
    this.metricsServer = metrics;
    this.subscriber = events;
    this.scraper = scrapes;
    this.localTokenizer = tokenizer;

    AtomicInteger threads = new AtomicInteger();
    this.executor = new ThreadPoolExecutor(0, MAX_CONCURRENT_REQUESTS, 60, TimeUnit.SECONDS,
        new SynchronousQueue<>(), r -> {
          Thread t = new Thread(r, "kvroute-gateway-" + threads.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    if (metricsServer != null) {
      metricsServer.createContext("/metrics", this::metrics);
      metricsServer.start();
    }
    server.start();
  }

  /**
   * Unbinds a server that was never started. The JDK closes a listening channel registered with a selector only at
   * that selector's next select, which only the dispatcher thread {@code start()} launches does; {@code stop} alone
   * would leave the port bound until the process exits.
   */
  private static void release(HttpServer unstarted) {
    unstarted.start();
    unstarted.stop(0);
  }

  /**
   * Sets the JDK server's {@code sun.net.httpserver.maxReqTime} (a connection still sending its request after this
   * many seconds is closed) unless it was set with {@code -D}. The JDK reads it once, when its first HTTP server is
   * created in the process, so this takes effect only if none was created before (true of {@link #main}).
   */
  private static void limitRequestTime(int seconds) {
    if (seconds > 0 && System.getProperty("sun.net.httpserver.maxReqTime") == null) {
      System.setProperty("sun.net.httpserver.maxReqTime", Integer.toString(seconds));
    }
  }

  /**
   * Starts a gateway.
   *
   * @param options what to serve and where
   * @return the running gateway
   * @throws IOException if a port cannot be bound
   */
  static Gateway start(Options options) throws IOException {
    return new Gateway(options);
  }

  /** The port the gateway listens on. */
  int port() {
    return server.getAddress().getPort();
  }

  /** The port of {@code /metrics}, or -1. */
  int metricsPort() {
    return metricsServer == null ? -1 : metricsServer.getAddress().getPort();
  }

  Router router() {
    return router;
  }

  /** Request-body bytes held now by requests being served (each byte counted twice while it is read). */
  long bufferedBodyBytes() {
    return bufferedBodyBytes.get();
  }

  @Nullable KvEventSubscriber subscriber() {
    return subscriber;
  }

  // ---- HTTP ----

  private void handle(HttpExchange exchange) {
    try {
      String path = exchange.getRequestURI().getPath();
      String method = exchange.getRequestMethod().toUpperCase(Locale.ROOT);
      if (path.equals("/health") && method.equals("GET")) {
        sendText(exchange, router.workers().size() > 0 ? 200 : 503, router.workers().size() + " workers\n");
      } else if (path.equals("/v1/completions") || path.equals("/v1/chat/completions")) {
        if (!method.equals("POST")) {
          exchange.getResponseHeaders().set("Allow", "POST");
          HttpServerRelay.sendError(exchange, 405, "Use POST for " + path + ".", "invalid_request_error");
        } else {
          route(exchange);
        }
      } else {
        HttpServerRelay.sendError(exchange, 404, "Not found: " + method + " " + path
            + " (this gateway serves POST /v1/completions and POST /v1/chat/completions).", "not_found_error");
      }
    } catch (IOException e) {
      // the client went away
    } catch (RuntimeException e) {
      System.getLogger(Gateway.class.getName()).log(System.Logger.Level.WARNING, "request failed", e);
      try {
        HttpServerRelay.sendError(exchange, 500, "Internal error: " + e, "internal_error");
      } catch (IOException | RuntimeException ignored) {
        // headers already sent, or the client went away
      }
    } finally {
      exchange.close();
    }
  }

  private void route(HttpExchange exchange) throws IOException {
    long[] reserved = {0};
    try {
      byte[] body = readBody(exchange, reserved);
      if (body != null) {
        route(exchange, body);
      }
    } finally {
      bufferedBodyBytes.addAndGet(-reserved[0]);
    }
  }

  /**
   * Reads a request body, reserving its bytes in the gateway's budget as they arrive (twice: the chunks and the
   * final array), or answers 413 (over {@value #MAX_BODY_BYTES} bytes) or 503 (the budget is spent) and returns
   * null. Without the budget, {@value #MAX_CONCURRENT_REQUESTS} requests of 32 MiB, each several times larger once
   * parsed, could exhaust the heap; with it, a burst of large bodies is refused with a retryable status instead.
   */
  private byte @Nullable [] readBody(HttpExchange exchange, long[] reserved) throws IOException {
    java.io.ByteArrayOutputStream buffer = new java.io.ByteArrayOutputStream(8192);
    byte[] chunk = new byte[64 << 10];
    try (InputStream in = exchange.getRequestBody()) {
      for (int n = in.read(chunk); n >= 0; n = in.read(chunk)) {
        if (!reserve(2L * n, reserved)) {
          // read the rest without keeping it (a client still sending would not see the answer), then refuse
          long drained = n;
          while (n >= 0 && drained <= MAX_BODY_BYTES) {
            n = in.read(chunk);
            drained += Math.max(n, 0);
          }
          exchange.getResponseHeaders().set("Retry-After", "1");
          HttpServerRelay.sendError(exchange, 503, "The gateway is buffering as many request bytes as it may ("
              + options.bufferedBodyBytes() + "); retry shortly.", "service_unavailable");
          return null;
        }
        buffer.write(chunk, 0, n);
        if (buffer.size() > MAX_BODY_BYTES) {
          HttpServerRelay.sendError(exchange, 413, "The request body exceeds " + MAX_BODY_BYTES + " bytes.",
              "invalid_request_error");
          return null;
        }
      }
    }
    return buffer.toByteArray();
  }

  private boolean reserve(long bytes, long[] reserved) {
    for (long held = bufferedBodyBytes.get(); ; held = bufferedBodyBytes.get()) {
      if (held + bytes > options.bufferedBodyBytes()) {
        return false;
      }
      if (bufferedBodyBytes.compareAndSet(held, held + bytes)) {
        reserved[0] += bytes;
        return true;
      }
    }
  }

  private void route(HttpExchange exchange, byte[] body) throws IOException {
    OpenAiRequest parsed;
    ForwardRequest.Builder request;
    try {
      parsed = OpenAiRequest.parse(body);
      request = ForwardRequest.newBuilder(exchange.getRequestURI().getRawPath(), body).parsedBody(parsed)
          .model(parsed.model());
      boolean chat = exchange.getRequestURI().getPath().endsWith("/chat/completions");
      if (chat && !parsed.has("messages")) {
        throw new OpenAiRequestException("messages is required and must be a non-empty list.", "messages");
      }
      if (!chat) {
        parsed.completionPrompt(); // checks the prompt's shape before anything is routed
      }
      if (options.tokenizer() == TokenizerMode.IDS) {
        int[] tokens = chat ? null : parsed.completionPrompt().tokens();
        if (tokens == null) {
          throw new OpenAiRequestException("This gateway routes token-id prompts only (--tokenizer ids); send"
              + " prompt as a list of token ids.", "prompt");
        }
        request.tokens(tokens);
      }
    } catch (JsonException e) {
      HttpServerRelay.sendError(exchange, 400, "The request body is not valid JSON: " + e.getMessage(),
          "invalid_request_error");
      return;
    } catch (OpenAiRequestException e) {
      HttpServerRelay.sendError(exchange, 400, e.getMessage(), "invalid_request_error", e.param());
      return;
    }
    for (Map.Entry<String, List<String>> h : exchange.getRequestHeaders().entrySet()) {
      if (!NOT_FORWARDED.contains(h.getKey().toLowerCase(Locale.ROOT))) {
        for (String value : h.getValue()) {
          try {
            request.header(h.getKey(), value);
          } catch (IllegalArgumentException notAValidHeader) {
            // dropped: OkHttp refuses what could not be sent on
          }
        }
      }
    }
    ForwardedResponse upstream;
    try {
      upstream = forwarder.forward(request.build());
    } catch (RuntimeException | IOException e) {
      forwardMetrics.failed(e);
      answerFailure(exchange, e);
      return;
    }
    exchange.getResponseHeaders().set("X-Kvroute-Worker", upstream.workerId().toString());
    forwardMetrics.relayed(upstream, HttpServerRelay.relay(upstream, exchange));
  }

  /** Answers a request that could not be forwarded, in OpenAI's error shape. */
  private static void answerFailure(HttpExchange exchange, Exception failure) throws IOException {
    if (failure instanceof RoutingException e) { // no worker (503; 404: unknown model), invalid request (400), …
      HttpServerRelay.sendError(exchange, e.httpStatus(), e.getMessage(), errorType(e.httpStatus()));
    } else if (failure instanceof TokenizeException e) {
      int status = e.statusCode() >= 400 && e.statusCode() < 500 ? e.statusCode() : 502;
      HttpServerRelay.sendError(exchange, status, "Tokenizing the prompt failed: " + e.getMessage(),
          errorType(status));
    } else if (failure instanceof IllegalArgumentException) {
      HttpServerRelay.sendError(exchange, 400, failure.getMessage(), "invalid_request_error");
    } else if (failure instanceof UnsupportedOperationException) { // local tokenization, no fallback: images, …
      HttpServerRelay.sendError(exchange, 400, "This gateway tokenizes locally and cannot count this prompt ("
          + failure.getMessage() + "); start it with --tokenizer-fallback worker to ask a worker's /tokenize.",
          "invalid_request_error");
    } else if (failure instanceof IOException) {
      HttpServerRelay.sendError(exchange, 502, "No worker could be reached: " + failure, "upstream_error");
    } else {
      throw (RuntimeException) failure; // a bug: the handler answers 500
    }
  }

  /** An eighth of the heap: a parsed body takes several times its bytes, and the router and caches need room. */
  static long defaultBufferedBodyBytes() {
    return Math.max(2L * MAX_BODY_BYTES, Runtime.getRuntime().maxMemory() / 8);
  }

  private static String errorType(int status) {
    return switch (status) {
      case 400 -> "invalid_request_error";
      case 404 -> "not_found_error";
      case 503 -> "service_unavailable";
      default -> "upstream_error";
    };
  }

  private void metrics(HttpExchange exchange) {
    try {
      byte[] text = registry.scrape().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(200, text.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(text);
      }
    } catch (IOException e) {
      // the scraper went away
    } finally {
      exchange.close();
    }
  }

  private static void sendText(HttpExchange exchange, int status, String text) throws IOException {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    if (metricsServer != null) {
      metricsServer.stop(0);
    }
    if (scraper != null) {
      scraper.close();
    }
    if (subscriber != null) {
      subscriber.close();
    }
    executor.shutdownNow();
    registry.close();
    if (localTokenizer != null) {
      localTokenizer.close();
    }
  }

  // ---- command line ----

  static RouterPolicy policy(String name) {
    var factory = ArticleExperiment.POLICIES.get(name);
    if (factory == null) {
      throw new IllegalArgumentException("--policy must be one of " + ArticleExperiment.POLICIES.keySet()
          + " but was " + name);
    }
    return factory.get();
  }

  /**
   * Parses one {@code --worker} value: {@code name=http://host:port} then optional comma-separated
   * {@code events=tcp://host:port}, {@code replay=tcp://host:port}, {@code topic=…}, {@code ranks=N},
   * {@code model=…}.
   */
  static WorkerSpec parseWorker(String spec) {
    String[] parts = spec.split(",");
    int eq = parts[0].indexOf('=');
    if (eq <= 0) {
      throw new IllegalArgumentException("--worker must start with name=http://host:port but was " + spec);
    }
    String name = parts[0].substring(0, eq);
    URI http = httpUri(parts[0].substring(eq + 1), spec);
    String events = null;
    String replay = null;
    String topic = "";
    int ranks = 1;
    String model = null;
    for (int i = 1; i < parts.length; i++) {
      int e = parts[i].indexOf('=');
      if (e <= 0) {
        throw new IllegalArgumentException("--worker option " + parts[i] + " must be key=value, in " + spec);
      }
      String key = parts[i].substring(0, e);
      String value = parts[i].substring(e + 1);
      switch (key) {
        case "events" -> events = zmqEndpoint(value, spec);
        case "replay" -> replay = zmqEndpoint(value, spec);
        case "topic" -> topic = value;
        case "model" -> model = value.isEmpty() ? null : value;
        case "ranks" -> {
          try {
            ranks = Integer.parseInt(value);
          } catch (NumberFormatException ex) {
            ranks = -1;
          }
          if (ranks < 1) {
            throw new IllegalArgumentException("--worker ranks must be a positive integer but was " + value);
          }
        }
        default -> throw new IllegalArgumentException("--worker has no option " + key
            + " (known: events, replay, topic, ranks, model), in " + spec);
      }
    }
    return new WorkerSpec(name, http, events, replay, topic, ranks, model);
  }

  private static URI httpUri(String value, String spec) {
    URI uri;
    try {
      uri = URI.create(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--worker endpoint " + value + " is not a URI, in " + spec, e);
    }
    if (!("http".equals(uri.getScheme()) || "https".equals(uri.getScheme())) || uri.getHost() == null) {
      throw new IllegalArgumentException("--worker endpoint must be http://host:port but was " + value);
    }
    return uri;
  }

  private static String zmqEndpoint(String value, String spec) {
    if (!value.startsWith("tcp://") && !value.startsWith("ipc://") && !value.startsWith("inproc://")) {
      throw new IllegalArgumentException("--worker events and replay must be tcp://host:port but was " + value
          + ", in " + spec);
    }
    return value;
  }

  static Options parse(String[] args) {
    List<WorkerSpec> workers = new ArrayList<>();
    String policy = "kvAware";
    TokenizerMode tokenizer = TokenizerMode.WORKER;
    Path tokenizerDir = null;
    boolean tokenizerFallback = false;
    String host = "127.0.0.1";
    int port = 8080;
    int metricsPort = -1;
    int blockSize = 16;
    Duration scrape = Duration.ofSeconds(1);
    int requestReadSeconds = DEFAULT_REQUEST_READ_SECONDS;
    long bufferedBodyBytes = defaultBufferedBodyBytes();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(flag + " needs a value");
      }
      String value = args[++i];
      switch (flag) {
        case "--worker" -> workers.add(parseWorker(value));
        case "--policy" -> {
          policy(value); // validates
          policy = value;
        }
        case "--tokenizer" -> {
          switch (value) {
            case "worker", "remote" -> tokenizer = TokenizerMode.WORKER;
            case "ids" -> tokenizer = TokenizerMode.IDS;
            default -> {
              Path dir = Path.of(value);
              if (!Files.isDirectory(dir)) {
                throw new IllegalArgumentException("--tokenizer must be a model directory (tokenizer.json and "
                    + "tokenizer_config.json), worker or ids, but " + value + " is none of these");
              }
              tokenizer = TokenizerMode.LOCAL;
              tokenizerDir = dir;
            }
          }
        }
        case "--tokenizer-fallback" -> {
          if (!value.equals("worker") && !value.equals("none")) {
            throw new IllegalArgumentException("--tokenizer-fallback must be worker or none but was " + value);
          }
          tokenizerFallback = value.equals("worker");
        }
        case "--host" -> host = value;
        case "--port" -> port = intFlag(flag, value, 0, 65535);
        case "--metrics-port" -> metricsPort = intFlag(flag, value, 0, 65535);
        case "--block-size" -> blockSize = intFlag(flag, value, 1, 1 << 16);
        case "--scrape-interval-ms" -> scrape = Duration.ofMillis(intFlag(flag, value, 0, Integer.MAX_VALUE));
        case "--request-read-timeout-s" -> requestReadSeconds = intFlag(flag, value, 0, Integer.MAX_VALUE);
        case "--max-buffered-body-mb" -> bufferedBodyBytes = (long) intFlag(flag, value, 1, Integer.MAX_VALUE) << 20;
        default -> throw new IllegalArgumentException("unknown option " + flag + "; see --help");
      }
    }
    if (workers.isEmpty()) {
      throw new IllegalArgumentException("at least one --worker name=http://host:port is required");
    }
    if (workers.stream().map(WorkerSpec::name).distinct().count() != workers.size()) {
      throw new IllegalArgumentException("--worker names must be distinct");
    }
    if (tokenizerFallback && tokenizer != TokenizerMode.LOCAL) {
      throw new IllegalArgumentException("--tokenizer-fallback worker needs --tokenizer DIR");
    }
    return new Options(List.copyOf(workers), policy, tokenizer, tokenizerDir, tokenizerFallback, host, port,
        metricsPort, blockSize, scrape, requestReadSeconds, bufferedBodyBytes);
  }

  private static int intFlag(String flag, String value, int min, int max) {
    try {
      int v = Integer.parseInt(value);
      if (v >= min && v <= max) {
        return v;
      }
    } catch (NumberFormatException ignored) {
      // below
    }
    throw new IllegalArgumentException(flag + " must be an integer in [" + min + ", " + max + "] but was " + value);
  }

  static void usage(PrintStream out) {
    out.println(String.join("\n",
        "usage: Gateway --worker name=http://host:port[,events=tcp://host:port][,replay=tcp://host:port]",
        "               [,topic=T][,ranks=N][,model=M] [--worker ...] [options]",
        "  --worker ...             a worker (repeat): its OpenAI HTTP endpoint; events= its KV event publisher",
        "                           (vLLM --kv-events-config endpoint), replay= its replay endpoint, topic= its",
        "                           topic (default: all), ranks= data-parallel ranks, model= the model it serves",
        "  --policy kvAware         one of " + String.join(", ", ArticleExperiment.POLICIES.keySet()),
        "                           (workers without events= are seen only through approximate's predictions)",
        "  --tokenizer DIR          tokenize in the gateway with the model's tokenizer.json and chat template (the",
        "                           directory vLLM serves); worker (the default): the engines' POST /tokenize;",
        "                           ids: token-id prompts only",
        "  --tokenizer-fallback none  worker: with --tokenizer DIR, a worker's /tokenize counts what the gateway",
        "                           cannot (image parts, a request's own chat_template)",
        "  --host 127.0.0.1         address to bind (0.0.0.0 for all interfaces)",
        "  --port 8080              the OpenAI-compatible port (0: any free port)",
        "  --metrics-port N         serve Prometheus text at http://host:N/metrics (default: off)",
        "  --block-size 16          tokens per KV block; must equal the engines' --block-size",
        "  --scrape-interval-ms 1000  how often each worker's /metrics is read for its load (0: never)",
        "  --request-read-timeout-s 60  close a connection still sending its request (headers and body) after",
        "                           this long (0: never), so that slow clients cannot hold every request thread",
        "  --max-buffered-body-mb N  request-body MiB buffered at once, over all requests; beyond it, 503 with",
        "                           Retry-After (default: an eighth of the heap, which leaves room for parsed bodies)"));
  }

  /**
   * Runs the gateway until the process is stopped.
   *
   * @param args see {@link #usage}
   * @throws Exception if it cannot start
   */
  public static void main(String[] args) throws Exception {
    if (args.length == 0 || List.of(args).contains("--help") || List.of(args).contains("-h")) {
      usage(System.out);
      return;
    }
    Options options;
    try {
      options = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      usage(System.err);
      System.exit(2);
      return;
    }
    Gateway gateway = start(options);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      gateway.close();
      stopped.countDown();
    }, "kvroute-gateway-shutdown"));
    for (WorkerSpec w : options.workers()) {
      System.out.println("worker " + w.name() + ": " + w.http() + (w.events() == null ? ", no KV events"
          : ", KV events " + w.events()));
    }
    System.out.println("tokenizer: " + switch (options.tokenizer()) {
      case LOCAL -> gateway.localTokenizer + (options.tokenizerFallback() ? ", a worker's /tokenize for what it "
          + "cannot count" : "");
      case WORKER -> "the workers' POST /tokenize";
      case IDS -> "token-id prompts only";
    });
    System.out.println("kvroute gateway (" + options.policy() + ") listening on http://" + options.host() + ":"
        + gateway.port() + "/v1" + (gateway.metricsPort() < 0 ? ""
        : ", metrics on http://" + options.host() + ":" + gateway.metricsPort() + "/metrics"));
    stopped.await();
  }

  @Override
  public String toString() {
    return "Gateway{port=" + port() + ", " + router + "}";
  }
}
