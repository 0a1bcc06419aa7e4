package io.kvroute.sim;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.kvroute.KvEvent;
import io.kvroute.events.zmq.KvEventPublisher;
import io.kvroute.events.zmq.WireFormat;
import io.kvroute.openai.ChatMessage;
import io.kvroute.openai.internal.Json;
import io.kvroute.openai.JsonException;
import io.kvroute.openai.OpenAiRequest;
import io.kvroute.openai.OpenAiRequestException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
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
 * try (SimServer server = SimServer.newBuilder().speedup(10).start()) {
 *   URI base = server.baseUri();                      // http://127.0.0.1:<port>
 *   String events = server.kvEventsEndpoint();        // tcp://127.0.0.1:<port>, topic "kv-events"
 * }
 * }</pre>
 */
public final class SimServer implements AutoCloseable {
  private static final System.Logger logger = System.getLogger(SimServer.class.getName());
  private static final int MAX_BODY_BYTES = 32 << 20;
  private static final Object END = new Object();

  private final SimEngineConfig config;
  private final SimEngine engine;
  private final double speedup;
  private final HttpServer http;
  private final ExecutorService executor;
  private final @Nullable KvEventPublisher publisher;
  private final Consumer<List<KvEvent>> eventListener;
  private final BiConsumer<String, @Nullable String> requestListener;
  private final Thread engineThread;
  private final Object lock = new Object();
  private final Set<EngineRequest> inFlight = ConcurrentHashMap.newKeySet();
  private final AtomicLong requestCounter = new AtomicLong();
  private final long startedAtSeconds = System.currentTimeMillis() / 1000;
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
    this.requestListener = b.requestListener;
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
    http.createContext("/", this::handle);
    this.engineThread = new Thread(this::engineLoop, "kvroute-sim-engine");
    engineThread.setDaemon(true);
  }

  /** A builder with the defaults: {@link SimEngineConfig#ofDefaults()}, loopback, an ephemeral port, real time. */
  public static Builder newBuilder() {
    return new Builder();
  }

  private void startThreads() {
    engineThread.start();
    http.start();
  }

  /** The server's base URI, for example {@code http://127.0.0.1:41234}. */
  public URI baseUri() {
    InetSocketAddress address = http.getAddress();
    return URI.create("http://" + hostLiteral(address.getAddress().getHostAddress()) + ":" + address.getPort());
  }

  private static String hostLiteral(String host) {
    return host.contains(":") ? "[" + host + "]" : host;
  }

  /** The bound HTTP port. */
  public int port() {
    return http.getAddress().getPort();
  }

  /** The ZeroMQ endpoint KV events are published on, or null if publishing is off. */
  public @Nullable String kvEventsEndpoint() {
    return publisher == null ? null : publisher.endpoint();
  }

  /** The ZeroMQ replay endpoint, or null if publishing or replay is off. */
  public @Nullable String kvEventsReplayEndpoint() {
    return publisher == null ? null : publisher.replayEndpoint();
  }

  /** The publisher of KV events, or null if publishing is off (tests use it to wait for subscribers). */
  public @Nullable KvEventPublisher kvEventPublisher() {
    return publisher;
  }

  /** The engine's configuration. */
  public SimEngineConfig config() {
    return config;
  }

  /** The engine's current state and counters. */
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

  // ---- engine loop ----

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

  // ---- HTTP ----

  private void handle(HttpExchange exchange) throws IOException {
    boolean abort = false;
    try {
      String path = exchange.getRequestURI().getPath();
      String method = exchange.getRequestMethod();
      switch (path) {
        case "/v1/completions" -> {
          if (requireMethod(exchange, method, "POST")) {
            generate(exchange, false);
          }
        }
        case "/v1/chat/completions" -> {
          if (requireMethod(exchange, method, "POST")) {
            generate(exchange, true);
          }
        }
        case "/v1/models" -> {
          if (requireMethod(exchange, method, "GET")) {
            models(exchange);
          }
        }
        case "/tokenize" -> {
          if (requireMethod(exchange, method, "POST")) {
            tokenize(exchange);
          }
        }
        case "/metrics" -> {
          if (requireMethod(exchange, method, "GET")) {
            send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", metrics());
          }
        }
        case "/health" -> {
          if (requireMethod(exchange, method, "GET")) {
            send(exchange, 200, "text/plain", "");
          }
        }
        case "/reset_prefix_cache" -> {
          if (requireMethod(exchange, method, "POST")) {
            if (resetPrefixCache()) {
              send(exchange, 200, "text/plain", "");
            } else {
              error(exchange, 503, "The prefix cache cannot be reset while requests hold blocks.", null);
            }
          }
        }
        default -> error(exchange, 404, "Not found: " + path, null);
      }
    } catch (AbortConnection e) {
      abort = true;
      throw e; // the JDK server closes the connection without ending the response (no last chunk)
    } catch (BadRequest e) {
      try {
        error(exchange, e.status, e.getMessage(), e.param);
      } catch (IOException | RuntimeException ignored) {
        // the client went away
      }
    } catch (IOException e) {
      logger.log(DEBUG, "HTTP exchange failed", e);
    } catch (Throwable t) {
      logger.log(WARNING, "HTTP handler failed", t);
      try {
        error(exchange, 500, "Internal error: " + t, null);
      } catch (IOException | RuntimeException ignored) {
        // headers already sent or the client went away
      }
    } finally {
      if (!abort) {
        exchange.close();
      }
    }
  }

  private boolean requireMethod(HttpExchange exchange, String method, String expected) throws IOException {
    if (!method.equalsIgnoreCase(expected)) {
      exchange.getResponseHeaders().set("Allow", expected);
      error(exchange, 405, "Method " + method + " not allowed; use " + expected + ".", null);
      return false;
    }
    return true;
  }

  private void generate(HttpExchange exchange, boolean chat) throws IOException {
    try {
      requestListener.accept(exchange.getRequestURI().getPath(), exchange.getRequestHeaders().getFirst("X-Request-Id"));
    } catch (RuntimeException e) {
      logger.log(WARNING, "request listener failed", e);
    }
    OpenAiRequest body = readRequest(exchange);
    checkModel(body);
    int[] prompt = chat ? chatTokens(body) : promptTokens(body);
    int maxTokens;
    boolean stream;
    boolean includeUsage;
    try {
      Integer max = body.maxTokens(); // max_completion_tokens when given, else max_tokens, as vLLM reads them
      maxTokens = max == null ? config.defaultMaxTokens() : max;
      stream = body.stream();
      includeUsage = body.includeUsage();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }

    Pending pending = new Pending();
    EngineRequest request;
    synchronized (lock) {
      if (closed) {
        throw new BadRequest(503, "The server is shutting down.", null);
      }
      String invalid = engine.validate(prompt.length, maxTokens);
      if (invalid != null) {
        throw new BadRequest(400, invalid, prompt.length == 0 ? "prompt" : "max_tokens");
      }
      long n = requestCounter.incrementAndGet();
      request = engine.submit(prompt, maxTokens, Mix.splitMix64(n), pending);
      inFlight.add(request);
      lock.notifyAll();
    }
    String id = (chat ? "chatcmpl-" : "cmpl-") + Long.toHexString(Mix.splitMix64(request.id ^ startedAtSeconds));
    try {
      if (stream) {
        stream(exchange, chat, id, request, pending, includeUsage);
      } else {
        complete(exchange, chat, id, request, pending);
      }
    } finally {
      inFlight.remove(request);
      synchronized (lock) {
        engine.abort(request); // no-op when finished; frees the blocks if the client went away
      }
    }
  }

  private void complete(HttpExchange exchange, boolean chat, String id, EngineRequest request, Pending pending)
      throws IOException {
    StringBuilder text = new StringBuilder();
    while (true) {
      Object next = pending.take();
      if (next == END) {
        break;
      }
      text.append(' ').append(config.tokenizer().word((Integer) next));
    }
    if (request.state == EngineRequest.State.ABORTED) {
      throw new BadRequest(503, "The request was aborted (server shutting down).", null);
    }
    Map<String, Object> choice = new LinkedHashMap<>();
    choice.put("index", 0);
    if (chat) {
      choice.put("message", Map.of("role", "assistant", "content", text.toString()));
      choice.put("logprobs", null);
    } else {
      choice.put("text", text.toString());
      choice.put("logprobs", null);
    }
    choice.put("finish_reason", "length");
    choice.put("stop_reason", null);
    Map<String, Object> response = envelope(chat ? "chat.completion" : "text_completion", id);
    response.put("choices", List.of(choice));
    response.put("usage", usage(request));
    send(exchange, 200, "application/json", Json.write(response));
  }

  private void stream(HttpExchange exchange, boolean chat, String id, EngineRequest request, Pending pending,
      boolean includeUsage) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache");
    exchange.sendResponseHeaders(200, 0);
    OutputStream out = exchange.getResponseBody();
    String object = chat ? "chat.completion.chunk" : "text_completion";
    if (chat) {
      Map<String, Object> delta = new LinkedHashMap<>();
      delta.put("role", "assistant");
      delta.put("content", "");
      writeEvent(out, chunk(object, id, chat, delta, null));
    }
    int taken = 0;
    try {
      while (true) {
        Object next = pending.take();
        if (next == END) {
          break;
        }
        String word = " " + config.tokenizer().word((Integer) next);
        boolean last = ++taken == request.maxTokens;
        writeEvent(out, chunk(object, id, chat, chat ? Map.of("content", word) : word, last ? "length" : null));
      }
    } catch (IOException e) {
      throw new AbortConnection("the stream failed after " + taken + " tokens: " + e, e);
    }
    if (request.state == EngineRequest.State.ABORTED) {
      // Shutting down mid-stream: vLLM's server dies with its connections, so the client sees the stream break,
      // never a "data: [DONE]" that would make a truncated answer look complete.
      throw new AbortConnection("the server is shutting down; aborting a stream after " + taken + " tokens", null);
    }
    if (includeUsage) {
      Map<String, Object> usageChunk = envelope(object, id);
      usageChunk.put("choices", List.of());
      usageChunk.put("usage", usage(request));
      writeEvent(out, Json.write(usageChunk));
    }
    out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private String chunk(String object, String id, boolean chat, Object content, @Nullable String finishReason) {
    Map<String, Object> choice = new LinkedHashMap<>();
    choice.put("index", 0);
    if (chat) {
      choice.put("delta", content);
    } else {
      choice.put("text", content);
    }
    choice.put("logprobs", null);
    choice.put("finish_reason", finishReason);
    Map<String, Object> chunk = envelope(object, id);
    chunk.put("choices", List.of(choice));
    return Json.write(chunk);
  }

  private static void writeEvent(OutputStream out, String json) throws IOException {
    out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private Map<String, Object> envelope(String object, String id) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("id", id);
    m.put("object", object);
    m.put("created", System.currentTimeMillis() / 1000);
    m.put("model", config.modelName());
    return m;
  }

  private static Map<String, Object> usage(EngineRequest request) {
    Map<String, Object> usage = new LinkedHashMap<>();
    usage.put("prompt_tokens", request.numPromptTokens);
    usage.put("total_tokens", request.numPromptTokens + request.numOutputs());
    usage.put("completion_tokens", request.numOutputs());
    usage.put("prompt_tokens_details", Map.of("cached_tokens", Math.max(0, request.cachedPromptTokens)));
    return usage;
  }

  private void models(HttpExchange exchange) throws IOException {
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("id", config.modelName());
    model.put("object", "model");
    model.put("created", startedAtSeconds);
    model.put("owned_by", "kvroute-sim");
    model.put("root", config.modelName());
    model.put("parent", null);
    model.put("max_model_len", config.maxModelLen());
    Map<String, Object> response = new LinkedHashMap<>();
    response.put("object", "list");
    response.put("data", List.of(model));
    send(exchange, 200, "application/json", Json.write(response));
  }

  private void tokenize(HttpExchange exchange) throws IOException {
    OpenAiRequest body = readRequest(exchange);
    checkModel(body);
    int[] tokens;
    if (body.has("messages")) {
      tokens = chatTokens(body);
    } else if (body.has("prompt")) {
      tokens = promptTokens(body);
    } else {
      throw new BadRequest(400, "Either prompt or messages is required.", "prompt");
    }
    Map<String, Object> response = new LinkedHashMap<>();
    response.put("count", tokens.length);
    response.put("max_model_len", config.maxModelLen());
    response.put("tokens", tokens);
    response.put("token_strs", null);
    send(exchange, 200, "application/json", Json.write(response));
  }

  private String metrics() {
    Snapshot s = snapshot();
    String labels = "{engine=\"0\",model_name=\"" + config.modelName().replace("\\", "\\\\").replace("\"", "\\\"")
        + "\"}";
    StringBuilder sb = new StringBuilder(2048);
    metric(sb, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", labels,
        s.running());
    metric(sb, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", labels,
        s.waiting());
    metric(sb, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", labels,
        s.kvCacheUsage());
    metric(sb, "vllm:prefix_cache_queries_total", "counter",
        "Prefix cache queries, in terms of number of queried tokens.", labels, s.prefixCacheQueries());
    metric(sb, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
        labels, s.prefixCacheHits());
    metric(sb, "vllm:num_preemptions_total", "counter", "Cumulative number of preemptions from the engine.", labels,
        s.preemptions());
    metric(sb, "vllm:request_success_total", "counter", "Count of successfully processed requests.", labels,
        s.finishedRequests());
    return sb.toString();
  }

  private static void metric(StringBuilder sb, String name, String type, String help, String labels, double value) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    sb.append(name).append(labels).append(' ').append(String.format(Locale.ROOT, "%s", value)).append('\n');
  }

  // ---- request parsing ----

  private OpenAiRequest readRequest(HttpExchange exchange) throws IOException {
    byte[] bytes;
    try (InputStream in = exchange.getRequestBody()) {
      bytes = in.readNBytes(MAX_BODY_BYTES + 1);
    }
    if (bytes.length > MAX_BODY_BYTES) {
      throw new BadRequest(400, "The request body exceeds " + MAX_BODY_BYTES + " bytes.", null);
    }
    try {
      return OpenAiRequest.parse(bytes);
    } catch (JsonException e) {
      throw new BadRequest(400, "Malformed JSON body: " + e.getMessage(), null);
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
  }

  private void checkModel(OpenAiRequest body) {
    String name = body.model();
    if (name != null && !name.equals(config.modelName())) {
      throw new BadRequest(404, "The model `" + name + "` does not exist.", "model");
    }
  }

  private int[] promptTokens(OpenAiRequest body) {
    OpenAiRequest.Prompt prompt;
    try {
      prompt = body.completionPrompt();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
    if (prompt.text() != null) {
      return config.tokenizer().encode(prompt.text());
    }
    int[] tokens = prompt.tokens();
    int vocabulary = config.tokenizer().vocabularySize();
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i] >= vocabulary) {
        throw new BadRequest(400, "prompt[" + i + "] must be a token id in [0, " + vocabulary + ") but was "
            + tokens[i], "prompt");
      }
    }
    return tokens;
  }

  private int[] chatTokens(OpenAiRequest body) {
    List<ChatMessage> messages;
    try {
      messages = body.chatMessages();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
    List<SimTokenizer.ChatMessage> parsed = new ArrayList<>(messages.size());
    for (ChatMessage m : messages) {
      parsed.add(new SimTokenizer.ChatMessage(m.role(), m.content()));
    }
    return config.tokenizer().encodeChat(parsed);
  }

  private static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    if (bytes.length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  private static void error(HttpExchange exchange, int status, String message, @Nullable String param)
      throws IOException {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", switch (status) {
      case 400 -> "BadRequestError";
      case 404 -> "NotFoundError";
      case 405 -> "MethodNotAllowedError";
      case 503 -> "ServiceUnavailableError";
      default -> "InternalServerError";
    });
    error.put("param", param);
    error.put("code", status);
    send(exchange, status, "application/json", Json.write(Map.of("error", error)));
  }

  /**
   * A response that must not end normally: thrown out of the handler without closing the exchange, so that the
   * JDK server closes the connection and the client sees the stream break (for chunked bodies, no last chunk).
   */
  private static final class AbortConnection extends IOException {
    private static final long serialVersionUID = 1L;

    AbortConnection(String message, @Nullable Throwable cause) {
      super(message, cause);
    }
  }

  /** A client error, answered with an OpenAI-style JSON error body. */
  private static final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;
    final @Nullable String param;

    BadRequest(int status, String message, @Nullable String param) {
      super(message, null, false, false);
      this.status = status;
      this.param = param;
    }
  }

  /** Hands a request's tokens from the engine thread to its HTTP thread. */
  private static final class Pending implements EngineRequest.Observer {
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();

    @Override
    public void onToken(EngineRequest request, int token) {
      queue.add(token);
    }

    @Override
    public void onFinished(EngineRequest request) {
      queue.add(END);
    }

    Object take() throws IOException {
      try {
        return queue.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for tokens", e);
      }
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
    private SimEngineConfig engine = SimEngineConfig.ofDefaults();
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

    private Builder() {}

    /** The engine's configuration (default {@link SimEngineConfig#ofDefaults()}). */
    public Builder engine(SimEngineConfig engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
      return this;
    }

    /** The address to bind (default {@code 127.0.0.1}). */
    public Builder host(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /** @throws IllegalArgumentException if {@code port} is outside [0, 65535]; 0 (default) picks a free port */
    public Builder port(int port) {
      if (port < 0 || port > 65_535) {
        throw new IllegalArgumentException("port must be in [0, 65535] but was " + port);
      }
      this.port = port;
      return this;
    }

    /**
     * Runs model time this many times faster than real time (default 1.0).
     *
     * @throws IllegalArgumentException if not a positive finite number
     */
    public Builder speedup(double speedup) {
      if (!(speedup > 0) || Double.isInfinite(speedup)) {
        throw new IllegalArgumentException("speedup must be a positive finite number but was " + speedup);
      }
      this.speedup = speedup;
      return this;
    }

    /** Whether to publish KV events over ZeroMQ (default true). */
    public Builder kvEvents(boolean kvEvents) {
      this.kvEvents = kvEvents;
      return this;
    }

    /** The ZeroMQ endpoint to bind for live events (default {@code tcp://127.0.0.1:0}, an ephemeral port). */
    public Builder kvEventsEndpoint(String endpoint) {
      this.kvEventsEndpoint = Objects.requireNonNull(endpoint, "endpoint");
      return this;
    }

    /** The ZeroMQ replay endpoint to bind, or null for none (default {@code tcp://127.0.0.1:0}). */
    public Builder kvEventsReplayEndpoint(@Nullable String endpoint) {
      this.kvEventsReplayEndpoint = endpoint;
      return this;
    }

    /** The topic of every event message (default {@code kv-events}, as in the article's deployment). */
    public Builder kvEventsTopic(String topic) {
      this.kvEventsTopic = Objects.requireNonNull(topic, "topic");
      return this;
    }

    /** The data-parallel rank written in every batch (default 0). */
    public Builder dataParallelRank(int rank) {
      if (rank < 0) {
        throw new IllegalArgumentException("dataParallelRank must not be negative but was " + rank);
      }
      this.dataParallelRank = rank;
      return this;
    }

    /** The event batch layout (default {@link WireFormat#MAP}, current vLLM). */
    public Builder wireFormat(WireFormat format) {
      this.wireFormat = Objects.requireNonNull(format, "format");
      return this;
    }

    /**
     * Also hands every step's KV events to {@code listener}, on the engine thread (it must be fast and must not
     * call back into the server).
     */
    public Builder eventListener(Consumer<List<KvEvent>> listener) {
      this.eventListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Also tells {@code listener} of every generation request ({@code /v1/completions},
     * {@code /v1/chat/completions}) as it arrives, before its body is read: its path and its {@code X-Request-Id}
     * header (or null). Called on the HTTP thread; it must be fast. Fault tests count requests with it.
     */
    public Builder requestListener(BiConsumer<String, @Nullable String> listener) {
      this.requestListener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Binds the sockets and starts the engine.
     *
     * @throws IOException if the HTTP port cannot be bound
     */
    public SimServer start() throws IOException {
      SimServer server = new SimServer(this);
      server.startThreads();
      return server;
    }
  }
}
