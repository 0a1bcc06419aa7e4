package io.kvroute.transport.okhttp;

import static java.lang.System.Logger.Level.DEBUG;

import io.kvroute.FailureKind;
import io.kvroute.HealthState;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.WorkerRegistry;
import io.kvroute.internal.Checks;
import io.kvroute.openai.ChatMessage;
import io.kvroute.openai.internal.Json;
import io.kvroute.openai.JsonException;
import io.kvroute.openai.OpenAiRequest;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.BufferedSource;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Tokenizer} that asks a vLLM server's {@code POST /tokenize}; thread-safe: calls from any number of
 * threads share one OkHttp client.
 *
 * <pre>{@code
 * Tokenizer tokenizer = OkHttpTokenizer.newBuilder()
 *     .endpoint(URI.create("http://10.0.0.5:8000"))   // a worker, or a dedicated tokenizer server
 *     .build();
 * int[] tokens = tokenizer.tokenizeChat("qwen3", List.of(ChatMessage.user("Hello")));
 * }</pre>
 *
 * <p>Completion prompts are sent as {@code {"model": ..., "prompt": ...}} and conversations as
 * {@code {"model": ..., "messages": [...]}}, which vLLM renders through the model's chat template with the
 * generation prompt, as its chat completions do. The response {@code {"tokens": [...], "count": N, ...}} is read
 * strictly: a body that is not JSON, ids that are not non-negative 32-bit integers, or a count that differs from
 * the ids' number throw {@link TokenizeException}, as does any non-2xx status (with the server's error message).
 *
 * <p>The server is either one {@linkplain Builder#endpoint endpoint} or, with {@link Builder#workers} or
 * {@link Builder#router}, any registered worker serving the request's model, taken in turn; a worker that cannot
 * be connected to, answers 5xx (a dead engine's server does), 404 or 405 (a server without the endpoint, in a mixed
 * fleet) or a malformed 200, or does not answer within the {@linkplain Builder#timeout timeout}, is skipped for the
 * next, and the call fails only when no worker answers (with the first failure)
 * (tokenizing has no side effect, so trying another worker duplicates nothing); one that has not answered within
 * the {@linkplain Builder#hedgeDelay hedge delay} is hedged: the next healthy worker is asked too, and the first
 * answer wins (hedged calls run on the client's dispatcher). With a router, only
 * {@linkplain HealthState#HEALTHY healthy} workers are asked while any serves the model (suspect ones only when
 * none is healthy, ejected and draining ones never), and a worker that cannot be connected to or times out is
 * reported to the router's health model: a hung worker costs one request one timeout, then is skipped. When
 * every worker is ejected, one of them is asked, in turn, so that requests still reach the router, whose half-open
 * probe readmits a worker that recovered.
 * When no registered worker serves the model at all, {@link NoWorkerAvailableException} (404,
 * {@link NoWorkerAvailableException.Reason#NO_WORKER_FOR_MODEL}) is thrown.
 */
public final class OkHttpTokenizer implements Tokenizer {
  /**
   * The default bound of one call, connecting included: 2 s. vLLM's {@code /tokenize} runs a fast tokenizer and
   * the chat template in its API server, tens of milliseconds even for a context-window-long prompt; a server
   * silent for 2 s is hung or overloaded, and the next worker is asked instead.
   */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
  /**
   * The default hedge delay: 100 ms. A {@code /tokenize} call of a chat prompt takes a few milliseconds; when the
   * worker asked has not answered after 100 ms, the next healthy worker is asked as well and the first answer wins,
   * so a worker that hangs before the health model knows costs a request 100 ms, not the timeout. Tokenizing has no
   * side effect: a hedge costs only a second tokenization.
   */
  public static final Duration DEFAULT_HEDGE_DELAY = Duration.ofMillis(100);
  /** The default response size bound: 16 MiB, far beyond a 128k-token prompt's ids. */
  public static final long DEFAULT_MAX_RESPONSE_BYTES = 16 << 20;
  /** The default path of the tokenize endpoint. */
  public static final String DEFAULT_PATH = "/tokenize";
  /** Members of a chat completion request that {@code /tokenize} understands and that change the tokens. */
  private static final List<String> CHAT_OPTIONS = List.of("add_generation_prompt", "continue_final_message",
      "add_special_tokens", "chat_template", "chat_template_kwargs", "tools", "mm_processor_kwargs");
  private static final MediaType JSON = MediaType.get("application/json; charset=utf-8");
  private static final int MAX_ERROR_BYTES = 64 << 10;
  private static final System.Logger logger = System.getLogger(OkHttpTokenizer.class.getName());

  private final OkHttpClient client;
  private final @Nullable URI endpoint;
  private final @Nullable WorkerRegistry workers;
  private final @Nullable Router router;
  private final String endpointName;
  private final String path;
  private final long maxResponseBytes;
  private final long hedgeDelayNanos;
  private final AtomicInteger next = new AtomicInteger();

  private OkHttpTokenizer(Builder b) {
    OkHttpClient base;
    if (b.client != null) {
      base = b.client;
    } else {
      Dispatcher dispatcher = new Dispatcher();
      dispatcher.setMaxRequests(256);
      dispatcher.setMaxRequestsPerHost(64); // a hung worker's calls must not queue the healthy ones' behind them
      base = new OkHttpClient.Builder().dispatcher(dispatcher).socketFactory(new NoDelaySocketFactory()).build();
    }
    this.client = base.newBuilder().callTimeout(b.timeout).build();
    this.hedgeDelayNanos = b.hedgeDelay.toNanos();
    this.endpoint = b.endpoint;
    this.router = b.router;
    this.workers = b.router != null ? b.router.workers() : b.workers;
    this.endpointName = b.endpointName;
    this.path = b.path;
    this.maxResponseBytes = b.maxResponseBytes;
  }

  /**
   * Returns a builder; set exactly one of {@link Builder#endpoint}, {@link Builder#workers} and {@link Builder#router}.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  @Override
  public int[] tokenize(@Nullable String model, String prompt) throws IOException {
    Objects.requireNonNull(prompt, "prompt");
    StringBuilder json = new StringBuilder(prompt.length() + 64).append('{');
    if (model != null) {
      json.append("\"model\":").append(Json.quote(model)).append(',');
    }
    json.append("\"prompt\":").append(Json.quote(prompt)).append('}');
    return call(model, json.toString());
  }

  @Override
  public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) throws IOException {
    Objects.requireNonNull(messages, "messages");
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("messages must not be empty");
    }
    StringBuilder json = new StringBuilder(256).append('{');
    if (model != null) {
      json.append("\"model\":").append(Json.quote(model)).append(',');
    }
    json.append("\"messages\":[");
    for (int i = 0; i < messages.size(); i++) {
      ChatMessage m = Objects.requireNonNull(messages.get(i), "messages[" + i + "]");
      json.append(i == 0 ? "" : ",").append("{\"role\":").append(Json.quote(m.role())).append(",\"content\":")
          .append(Json.quote(m.content())).append('}');
    }
    json.append("]}");
    return call(model, json.toString());
  }

  /**
   * {@inheritDoc}
   *
   * <p>This implementation copies the body's {@code model}, {@code prompt} or {@code messages}, and the chat
   * template options ({@code tools}, {@code add_generation_prompt}, {@code chat_template_kwargs}, …) into the
   * tokenize request as written, so that content parts and tools are tokenized as the server will see them; token
   * id prompts are returned without a call. A member whose value is JSON {@code null} counts as absent.
   */
  @Override
  public int[] tokenizeRequest(byte[] requestBody) throws IOException {
    Map<String, String> members;
    try {
      members = Json.rawMembers(Json.decodeUtf8(requestBody, 0, requestBody.length));
    } catch (JsonException e) {
      throw new IllegalArgumentException("the request body is not a valid JSON object: " + e.getMessage(), e);
    }
    // A JSON null counts as absent, as in OpenAiRequest and in OpenAI's and vLLM's servers: a chat body with
    // "prompt": null was refused for holding both prompt and messages.
    members.values().removeIf("null"::equals);
    String rawModel = members.get("model");
    String model = rawModel == null ? null : modelName(Json.parse(rawModel));
    String prompt = members.get("prompt");
    String messages = members.get("messages");
    if ((prompt == null) == (messages == null)) {
      throw new IllegalArgumentException("the request body must have exactly one of prompt and messages");
    }
    StringBuilder json = new StringBuilder(requestBody.length + 32).append('{');
    if (model != null) {
      json.append("\"model\":").append(rawModel).append(',');
    }
    if (prompt != null) {
      Object value = Json.parse(prompt);
      if (value instanceof List<?> list && list.size() == 1 && list.get(0) instanceof String) {
        prompt = Json.quote((String) list.get(0));
      } else if (!(value instanceof String)) {
        return OpenAiRequest.of(Collections.singletonMap("prompt", value)).completionPrompt().tokens();
      }
      json.append("\"prompt\":").append(prompt);
      String special = members.get("add_special_tokens");
      if (special != null) {
        json.append(",\"add_special_tokens\":").append(special);
      }
    } else {
      json.append("\"messages\":").append(messages);
      for (String option : CHAT_OPTIONS) {
        String raw = members.get(option);
        if (raw != null) {
          json.append(',').append(Json.quote(option)).append(':').append(raw);
        }
      }
    }
    return call(model, json.append('}').toString());
  }

  @Override
  public String toString() {
    return "OkHttpTokenizer{" + (endpoint != null ? endpoint : "workers") + path + "}";
  }

  private int[] call(@Nullable String model, String json) throws IOException {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    if (endpoint != null) {
      return call(endpoint, body);
    }
    List<Worker> serving = new ArrayList<>();
    List<Candidate> candidates = candidates(model, serving);
    int unroutable = 0;
    for (Worker w : serving) {
      HealthState h = router == null ? null : router.health(w.id());
      if (h != null && !h.routable() && w.endpoint(endpointName) != null) {
        unroutable++;
      }
    }
    if (candidates.isEmpty()) {
      if (serving.isEmpty()) {
        throw model != null
            ? new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL,
                "no registered worker serves model " + model + ", so its prompt cannot be tokenized")
            : new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKERS,
                "no worker is registered to tokenize on");
      }
      if (router != null && unroutable > 0) { // every worker serving it drains
        throw new NoWorkerAvailableException(NoWorkerAvailableException.Reason.ALL_DRAINING, "all "
            + serving.size() + " workers " + (model == null ? "" : "serving " + model + " ")
            + "are draining; none to tokenize on");
      }
      throw new IOException("no registered worker " + (model == null ? "" : "serving " + model + " ")
          + "has a '" + endpointName + "' endpoint to tokenize on");
    }
    int healthy = healthyCount(candidates);
    int start = Math.floorMod(next.getAndIncrement(), healthy);
    List<Candidate> order = new ArrayList<>(candidates.size());
    for (int i = 0; i < candidates.size(); i++) {
      // Healthy candidates first, in turn; suspect ones (listed after them) only when every healthy one failed.
      order.add(candidates.get(i < healthy ? (start + i) % healthy : i));
    }
    return hedged(order, healthy, body);
  }

  /** One finished tokenize call: tokens, or the failure. */
  private record Outcome(Candidate candidate, int @Nullable [] tokens, @Nullable IOException error) {}

  /**
   * Asks {@code order[0]}; when it has not answered within the hedge delay, also the next of the first
   * {@code hedgeable} candidates, and so on; a failure moves on to the next candidate at once. The first tokens
   * win. Calls still running when this returns go on to their end, so that a hung worker's timeout is reported.
   */
  private int[] hedged(List<Candidate> order, int hedgeable, byte[] body) throws IOException {
    LinkedBlockingQueue<Outcome> done = new LinkedBlockingQueue<>();
    int started = 0;
    int finished = 0;
    IOException failure = null;
    enqueue(order.get(started++), body, done);
    long hedgeAt = System.nanoTime() + hedgeDelayNanos;
    while (true) {
      Outcome o;
      try {
        o = started < hedgeable ? done.poll(Math.max(0, hedgeAt - System.nanoTime()), TimeUnit.NANOSECONDS)
            : done.take(); // every call ends within the timeout
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted while tokenizing");
      }
      if (o == null) { // late: ask the next healthy worker too (tokenizing has no side effect); the first wins
        Candidate c = order.get(started++);
        logger.log(DEBUG, () -> "tokenizing is slow; also asking " + c.uri);
        enqueue(c, body, done);
        hedgeAt = System.nanoTime() + hedgeDelayNanos;
        continue;
      }
      finished++;
      if (o.tokens != null) {
        return o.tokens;
      }
      IOException e = Objects.requireNonNull(o.error);
      if (e instanceof TokenizeException refused && isRefusal(refused.statusCode())) {
        throw refused; // the server refused the request: another one would answer alike
      }
      // Unreachable, hung, a 5xx (an engine that died answers its HTTP requests with 500), a 404/405 (a server
      // without the endpoint, in a mixed fleet) or a malformed 200: that worker's failure, the next one is asked.
      logger.log(DEBUG, () -> "tokenizing on " + o.candidate.uri + " failed; trying the next worker: " + e);
      if (failure == null) {
        failure = e instanceof TokenizeException serverError
            ? new TokenizeException(serverError.getMessage(), serverError.statusCode(), serverError)
            : new IOException("tokenizing failed on every worker asked: " + e, e);
      } else {
        failure.addSuppressed(e);
      }
      if (started < order.size()) {
        enqueue(order.get(started++), body, done);
        hedgeAt = System.nanoTime() + hedgeDelayNanos;
      } else if (finished == started) {
        throw failure;
      }
    }
  }

  /**
   * Whether a tokenize answer refuses the request itself (any server would answer alike): a 4xx other than 404 and
   * 405, which name a server without the endpoint (or the model); not a 5xx, nor a malformed 200 (-1).
   */
  static boolean isRefusal(int status) {
    return status >= 400 && status < 500 && status != 404 && status != 405;
  }

  private void enqueue(Candidate c, byte[] body, LinkedBlockingQueue<Outcome> done) {
    Call call;
    try {
      call = client.newCall(request(c.uri, body));
    } catch (IllegalArgumentException e) {
      done.add(new Outcome(c, null, new IOException("cannot call " + c.uri + ": " + e.getMessage(), e)));
      return;
    }
    call.enqueue(new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        report(c, e);
        done.add(new Outcome(c, null, e));
      }

      @Override
      public void onResponse(Call call, Response response) {
        try (response) {
          done.add(new Outcome(c, read(response), null));
        } catch (TokenizeException e) {
          done.add(new Outcome(c, null, e));
        } catch (IOException e) {
          report(c, e);
          done.add(new Outcome(c, null, e));
        } catch (RuntimeException e) {
          done.add(new Outcome(c, null, new IOException("reading the tokenize response failed: " + e, e)));
        }
      }
    });
  }

  private void report(Candidate c, IOException e) {
    Router r = router;
    if (r == null) {
      return;
    }
    for (WorkerId id : c.workers) {
      r.reportFailure(id, RoutingForwarder.isConnectFailure(e) ? FailureKind.CONNECT_FAILED : FailureKind.TIMEOUT);
    }
  }

  /** One tokenize endpoint and the workers registered with it; healthy ones are listed first. */
  private record Candidate(URI uri, List<WorkerId> workers, boolean healthy) {}

  private static int healthyCount(List<Candidate> candidates) {
    int n = 0;
    while (n < candidates.size() && candidates.get(n).healthy) {
      n++;
    }
    return n == 0 ? candidates.size() : n; // none healthy: the suspect ones in turn
  }

  private List<Candidate> candidates(@Nullable String model, List<Worker> serving) {
    List<Candidate> healthy = new ArrayList<>();
    List<Candidate> suspect = new ArrayList<>();
    List<URI> ejected = new ArrayList<>();
    for (Worker worker : Objects.requireNonNull(workers).snapshot()) {
      URI uri = worker.endpoint(endpointName);
      if (!worker.serves(model, null)) {
        continue;
      }
      serving.add(worker);
      if (uri == null) {
        continue;
      }
      HealthState health = router == null ? HealthState.HEALTHY : router.health(worker.id());
      if (health == HealthState.EJECTED) {
        ejected.add(uri);
        continue;
      }
      if (health == null || !health.routable()) {
        continue; // removed meanwhile, or draining
      }
      List<Candidate> list = health == HealthState.HEALTHY ? healthy : suspect;
      Candidate same = find(healthy, uri);
      if (same == null) {
        same = find(suspect, uri);
      }
      if (same != null) {
        same.workers.add(worker.id()); // ranks of one server share its tokenizer
      } else {
        List<WorkerId> ids = new ArrayList<>(1);
        ids.add(worker.id());
        list.add(new Candidate(uri, ids, list == healthy));
      }
    }
    healthy.addAll(suspect);
    if (healthy.isEmpty() && !ejected.isEmpty()) {
      // Every worker is ejected: ask one of them, in turn, so that the request can reach the router, whose
      // half-open probe readmits a recovered worker (without it, nothing would ever be routed again).
      URI uri = ejected.get(Math.floorMod(next.get(), ejected.size()));
      List<WorkerId> ids = new ArrayList<>();
      for (Worker worker : Objects.requireNonNull(workers).snapshot()) {
        if (uri.equals(worker.endpoint(endpointName))) {
          ids.add(worker.id());
        }
      }
      healthy.add(new Candidate(uri, ids, false));
    }
    return healthy;
  }

  private static @Nullable Candidate find(List<Candidate> candidates, URI uri) {
    for (Candidate c : candidates) {
      if (c.uri.equals(uri)) {
        return c;
      }
    }
    return null;
  }

  private int[] call(URI base, byte[] body) throws IOException {
    try (Response response = client.newCall(request(base, body)).execute()) {
      return read(response);
    }
  }

  private Request request(URI base, byte[] body) {
    return new Request.Builder().url(Urls.resolve(base, path))
        .header("Accept", "application/json")
        .post(RequestBody.create(body, JSON))
        .build();
  }

  private int[] read(Response response) throws IOException {
    BufferedSource source = response.body().source();
    if (!response.isSuccessful()) {
      boolean truncated = source.request(MAX_ERROR_BYTES + 1);
      byte[] bytes = truncated ? source.readByteArray(MAX_ERROR_BYTES) : source.readByteArray();
      throw new TokenizeException("tokenize failed with HTTP " + response.code() + ": " + errorMessage(bytes),
          response.code(), null);
    }
    if (source.request(maxResponseBytes + 1)) {
      throw new TokenizeException("the tokenize response exceeds " + maxResponseBytes + " bytes", -1, null);
    }
    return parseTokens(source.readByteArray());
  }

  private static @Nullable String modelName(@Nullable Object model) {
    if (model != null && !(model instanceof String)) {
      throw new IllegalArgumentException("model must be a string but was " + Json.write(model));
    }
    return (String) model;
  }

  /** Reads {@code {"tokens": [...], "count": N, ...}} strictly. */
  static int[] parseTokens(byte[] body) throws TokenizeException {
    Object parsed;
    try {
      parsed = Json.parse(body);
    } catch (JsonException e) {
      throw new TokenizeException("the tokenize response is not valid JSON: " + e.getMessage(), -1, e);
    }
    if (!(parsed instanceof Map<?, ?> map)) {
      throw new TokenizeException("the tokenize response is not a JSON object", -1, null);
    }
    if (!(map.get("tokens") instanceof List<?> list)) {
      throw new TokenizeException("the tokenize response has no \"tokens\" list", -1, null);
    }
    int[] tokens = new int[list.size()];
    for (int i = 0; i < tokens.length; i++) {
      if (!(list.get(i) instanceof Long id) || id < 0 || id > Integer.MAX_VALUE) {
        throw new TokenizeException("tokens[" + i + "] is not a token id: " + list.get(i), -1, null);
      }
      tokens[i] = (int) (long) id;
    }
    if (map.containsKey("count") && !(map.get("count") instanceof Long count && count == tokens.length)) {
      throw new TokenizeException("the tokenize response's count " + map.get("count") + " differs from its "
          + tokens.length + " tokens", -1, null);
    }
    return tokens;
  }

  /** The message of an OpenAI-style or vLLM error body, else the body's start. */
  static String errorMessage(byte[] body) {
    try {
      Object parsed = Json.parse(body);
      if (parsed instanceof Map<?, ?> map) {
        if (map.get("error") instanceof Map<?, ?> error && error.get("message") instanceof String message) {
          return message;
        }
        if (map.get("message") instanceof String message) {
          return message;
        }
        if (map.get("detail") instanceof String detail) {
          return detail;
        }
      }
    } catch (JsonException ignored) {
      // not JSON: the text itself below
    }
    String text = new String(body, StandardCharsets.UTF_8).strip();
    return text.isEmpty() ? "(no body)" : text.length() > 200 ? text.substring(0, 200) + "…" : text;
  }

  /** Configures an {@link OkHttpTokenizer}; not thread-safe. */
  public static final class Builder {
    private @Nullable OkHttpClient client;
    private @Nullable URI endpoint;
    private @Nullable WorkerRegistry workers;
    private @Nullable Router router;
    private String endpointName = Worker.HTTP;
    private String path = DEFAULT_PATH;
    private Duration timeout = DEFAULT_TIMEOUT;
    private long maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
    private Duration hedgeDelay = DEFAULT_HEDGE_DELAY;

    private Builder() {}

    /**
     * With {@link #workers} or {@link #router}: how long to wait for a worker's answer before also asking the next
     * healthy one (default {@link #DEFAULT_HEDGE_DELAY}); the first answer wins. A delay of at least the timeout
     * turns hedging off.
     *
     * @param hedgeDelay the wait before also asking the next worker, zero or more (zero asks two at once)
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder hedgeDelay(Duration hedgeDelay) {
      this.hedgeDelay = Checks.notNegative("hedgeDelay", hedgeDelay);
      return this;
    }

    /**
     * The client to derive the tokenizer's from, sharing its pools (default: a new client).
     *
     * @param client the client to derive from, not null
     * @return this builder
     */
    public Builder client(OkHttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    /**
     * Tokenizes on this server: a vLLM worker or a dedicated tokenizer server (its base URI, for example
     * {@code http://10.0.0.5:8000}).
     *
     * @param endpoint the server's base URI, not null
     * @return this builder
     */
    public Builder endpoint(URI endpoint) {
      this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
      return this;
    }

    /**
     * Tokenizes on the registered workers' {@linkplain #endpointName endpoints}, taken in turn.
     *
     * @param workers the registry whose workers tokenize, not null
     * @return this builder
     */
    public Builder workers(WorkerRegistry workers) {
      this.workers = Objects.requireNonNull(workers, "workers");
      return this;
    }

    /**
     * Tokenizes on the router's registered workers, as {@link #workers}, asking only healthy ones while any serves
     * the model, and reporting those that cannot be connected to or time out to the router's health model.
     *
     * @param router the router whose workers tokenize, not null
     * @return this builder
     */
    public Builder router(Router router) {
      this.router = Objects.requireNonNull(router, "router");
      return this;
    }

    /**
     * With {@link #workers}: the name of the worker endpoint to call (default {@link Worker#HTTP}).
     *
     * @param endpointName an endpoint name of the workers, such as {@link Worker#HTTP}
     * @return this builder
     */
    public Builder endpointName(String endpointName) {
      this.endpointName = Objects.requireNonNull(endpointName, "endpointName");
      return this;
    }

    /**
     * The tokenize path, appended to the endpoint's path (default {@link #DEFAULT_PATH}).
     *
     * @param path the path, starting with '/'
     * @return this builder
     * @throws IllegalArgumentException if it does not start with '/'
     */
    public Builder path(String path) {
      this.path = Urls.checkPath(Objects.requireNonNull(path, "path"), "path");
      return this;
    }

    /**
     * The bound of one call (default {@link #DEFAULT_TIMEOUT}).
     *
     * @param timeout the bound of one call, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder timeout(Duration timeout) {
      this.timeout = Checks.positive("timeout", timeout);
      return this;
    }

    /**
     * Larger responses throw {@link TokenizeException} (default {@link #DEFAULT_MAX_RESPONSE_BYTES}).
     *
     * @param maxResponseBytes the largest response body accepted, in bytes, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder maxResponseBytes(long maxResponseBytes) {
      this.maxResponseBytes = Checks.byteLimit("maxResponseBytes", maxResponseBytes);
      return this;
    }

    /**
     * Builds the tokenizer.
     *
     * @return a new tokenizer; its derived client shares the pools of the given client (or of one made for it)
     * @throws IllegalStateException unless exactly one of {@link #endpoint}, {@link #workers} and {@link #router}
     *     was set
     */
    public OkHttpTokenizer build() {
      int set = (endpoint != null ? 1 : 0) + (workers != null ? 1 : 0) + (router != null ? 1 : 0);
      if (set != 1) {
        throw new IllegalStateException("set exactly one of endpoint, workers and router");
      }
      if (endpoint != null) {
        Urls.resolve(endpoint, path); // fail fast on a URI OkHttp cannot call
      }
      return new OkHttpTokenizer(this);
    }
  }
}
