package io.kvroute.transport.okhttp;

import static java.lang.System.Logger.Level.DEBUG;

import io.kvroute.FailureKind;
import io.kvroute.HealthState;
import io.kvroute.InvalidRouteRequestException;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.RoutingException;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import io.kvroute.openai.internal.Json;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Headers;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.jspecify.annotations.Nullable;

/**
 * Forwards OpenAI-compatible requests to the worker the router chooses and ties the routing handle's lifecycle to
 * the upstream response; thread-safe: any number of threads may forward at once through one OkHttp client.
 *
 * <pre>{@code
 * RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
 *     .tokenizer(OkHttpTokenizer.newBuilder().router(router).build())
 *     .build();
 * try (ForwardedResponse upstream = forwarder.forward(
 *     ForwardRequest.newBuilder("/v1/chat/completions", body).build())) {
 *   upstream.body().source() ...   // relay the SSE stream to the client
 * } catch (RoutingException e) {   // 400, 404, 503, 502, 504: e.httpStatus(), e.reason()
 *   ...
 * }                               // the routing handle is closed: the worker's booking is released
 * }</pre>
 *
 * <p>Each call routes the prompt (the request's tokens, or the {@link Tokenizer}'s reading of its body), POSTs the
 * body to the chosen worker's {@linkplain Builder#endpointName endpoint} plus the request's path, and returns once
 * the response headers arrived. The routing handle hears {@link Routing#firstToken()} when the body's first output
 * token arrives (for a server-sent event stream, the first event carrying output; otherwise the first byte), and
 * is closed when the body is exhausted, fails, or is closed, or when the call fails.
 *
 * <p><b>Budgets per attempt.</b> Connecting is bounded by {@linkplain Builder#connectTimeout the connect timeout}.
 * A streamed request ({@code "stream": true}) must get its response headers within
 * {@linkplain Builder#firstByteTimeout the first-byte timeout} (engines send them as soon as they accept the
 * request), and its body may then be silent for at most {@linkplain Builder#idleTimeout the idle timeout} at a
 * time. A non-streamed request is answered only when generation ends, so it may wait
 * {@linkplain Builder#responseTimeout the response timeout} for its answer.
 *
 * <p><b>Retries.</b> Only an attempt whose request provably never reached the worker (connection refused,
 * unreachable, connect timeout, or no endpoint) is routed again, without the failed workers, up to
 * {@linkplain Builder#maxAttempts max attempts}: retrying it cannot duplicate work. Once a byte of the request may
 * have reached an engine, the request is never sent again (OkHttp's own silent retry is turned off as well): a
 * timeout or a broken connection fails at once with {@link UpstreamException}.
 *
 * <p><b>Outcomes.</b> Every attempt's outcome is reported to the router's health model: connect failures,
 * timeouts, 5xx answers and cut streams with {@link Router#reportFailure}, a body read to its end (and any answer
 * below 500 that is not 2xx: the worker is alive) with {@link Router#reportSuccess}. Non-2xx answers are returned
 * as they are, for the gateway to relay the engine's own status and error. Failures are typed
 * ({@link io.kvroute.RoutingException}): {@link InvalidRouteRequestException} (400: a body without a readable
 * prompt, a prompt the tokenizer or router refuses), {@link NoWorkerAvailableException} (404 for an unknown model,
 * 503 when nothing may serve), {@link UpstreamException} (502, 504).
 *
 * <p>{@link #forward} blocks the calling thread until the response headers arrive; {@link #forwardAsync} does the
 * same on OkHttp's dispatcher threads and completes a future.
 */
public final class RoutingForwarder {
  /** The default number of workers tried per request. */
  public static final int DEFAULT_MAX_ATTEMPTS = 3;
  /**
   * The default connect budget: 2 s. A live engine on a LAN accepts in well under a millisecond, even a SIGSTOPped
   * one (the kernel completes the handshake); 2 s covers one lost SYN (Linux retransmits after its initial 1 s
   * RTO) and otherwise means the host is gone.
   */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  /**
   * The default first-byte budget of a streamed request: 10 s. vLLM and SGLang send a stream's headers when they
   * accept the request, before it queues or prefills (milliseconds, tokenizing included); 10 s of silence means the
   * server is hung (stopped, an event loop stalled), while leaving room for tokenizing a context-window-long
   * prompt on a loaded API server.
   */
  public static final Duration DEFAULT_FIRST_BYTE_TIMEOUT = Duration.ofSeconds(10);
  /**
   * The default idle budget of a streamed body: 60 s between bytes, the first event included. Nothing is streamed
   * while the request waits in the engine's queue or prefills, and a long prompt on a loaded engine can take tens of
   * seconds; between tokens the gaps are milliseconds.
   */
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
  /**
   * The default response budget of a non-streamed request: 10 min, since its answer comes only when generation
   * ends (thousands of tokens at tens of tokens per second, behind a queue).
   */
  public static final Duration DEFAULT_RESPONSE_TIMEOUT = Duration.ofMinutes(10);

  private static final System.Logger logger = System.getLogger(RoutingForwarder.class.getName());
  private static final byte[] STREAM_KEY = "\"stream\"".getBytes(StandardCharsets.US_ASCII);

  private final Router router;
  private final OkHttpClient streamingClient;
  private final OkHttpClient responseClient;
  private final @Nullable Tokenizer tokenizer;
  private final int maxAttempts;
  private final String endpointName;
  private final Duration connectTimeout;
  private final Duration firstByteTimeout;
  private final Duration idleTimeout;
  private final Duration responseTimeout;

  private RoutingForwarder(Builder b) {
    this.router = b.router;
    // Nagle off: a body over 8 KiB would otherwise wait ~40 ms for a delayed ACK (see NoDelaySocketFactory).
    OkHttpClient base = b.client != null ? b.client
        : new OkHttpClient.Builder().socketFactory(new NoDelaySocketFactory()).build();
    OkHttpClient.Builder common = base.newBuilder()
        .connectTimeout(b.connectTimeout)
        .retryOnConnectionFailure(false); // OkHttp would otherwise resend a POST whose connection broke
    this.streamingClient = common.readTimeout(b.idleTimeout).writeTimeout(b.idleTimeout).build();
    this.responseClient = common.readTimeout(b.responseTimeout).writeTimeout(b.idleTimeout).build();
    this.tokenizer = b.tokenizer;
    this.maxAttempts = b.maxAttempts;
    this.endpointName = b.endpointName;
    this.connectTimeout = b.connectTimeout;
    this.firstByteTimeout = b.firstByteTimeout;
    this.idleTimeout = b.idleTimeout;
    this.responseTimeout = b.responseTimeout;
  }

  /**
   * Returns a builder forwarding to the workers of {@code router}.
   *
   * @param router the router choosing the worker for each request; its workers' {@code http} endpoints are called
   * @return a new builder
   * @throws NullPointerException if {@code router} is null
   */
  public static Builder newBuilder(Router router) {
    return new Builder(router);
  }

  /**
   * Routes and forwards {@code request}, returning when the chosen worker's response headers arrived.
   *
   * @param request the request to route and forward, not null
   * @return the response, whatever its status
   * @throws IllegalArgumentException if a header value holds a control character
   * @throws IllegalStateException if the request has no tokens and the forwarder no tokenizer
   * @throws InvalidRouteRequestException (400) if the body has no prompt that can be read, or the tokenizer or the
   *     router refuses the prompt
   * @throws NoWorkerAvailableException (404 unknown model, 503 otherwise) if no registered worker may serve it
   * @throws UpstreamException (502, 504) if no worker could be connected to, or the attempt timed out or its
   *     connection broke before the response headers (earlier attempts' failures are suppressed on it)
   * @throws IOException if the call was cancelled
   */
  public ForwardedResponse forward(ForwardRequest request) throws IOException {
    Objects.requireNonNull(request, "request");
    Headers headers = forwardable(request.headers());
    boolean stream = streams(request.body());
    int[] tokens = tokens(request);
    List<WorkerId> failed = new ArrayList<>();
    UpstreamException failure = null;
    for (int attempt = 1; ; attempt++) {
      Attempt a;
      try {
        a = prepare(request, headers, stream, tokens, failed);
      } catch (NoWorkerAvailableException e) {
        if (failure == null) {
          throw e;
        }
        failure.addSuppressed(e);
        throw failure;
      }
      if (a.call == null) {
        failure = connectFailed(a, noEndpoint(a.routing), failure, failed);
        if (attempt >= maxAttempts) {
          throw failure;
        }
        continue;
      }
      FirstByteTimer timer = a.startTimer();
      Response response;
      try {
        response = a.call.execute();
      } catch (IOException e) {
        timer.disarm();
        UpstreamException u = attemptFailed(a, e, timer.fired(), failure, failed);
        if (u == null) {
          a.routing.close();
          throw e; // cancelled by the caller
        }
        failure = u;
        if (attempt >= maxAttempts || u.reason() != UpstreamException.Reason.CONNECT_FAILED) {
          throw failure;
        }
        continue;
      } catch (RuntimeException | Error e) {
        timer.disarm();
        a.routing.close();
        throw e;
      }
      if (!timer.disarm()) { // the budget ran out as the headers arrived: the call is being cancelled
        response.close();
        throw Objects.requireNonNull(attemptFailed(a, new SocketTimeoutException("first byte"), true, failure,
            failed));
      }
      return wrap(response, a, failed);
    }
  }

  /**
   * Routes and forwards {@code request} without blocking the caller: the future completes, on an OkHttp dispatcher
   * thread, when the chosen worker's response headers arrived, with the same outcomes as {@link #forward} (its
   * exceptions complete the future exceptionally). When the request has no tokens, the tokenizer runs on the
   * client's dispatcher executor. Cancelling the future before it completes cancels the upstream call and releases
   * the booking; a response that arrives anyway is closed.
   *
   * <p>Dependent stages attached without an executor run on OkHttp's threads: do not block in them.
   *
   * @param request the request to route and forward, not null
   * @return a future of the chosen worker's response, completed when its headers arrived
   */
  public CompletableFuture<ForwardedResponse> forwardAsync(ForwardRequest request) {
    Objects.requireNonNull(request, "request");
    CompletableFuture<ForwardedResponse> result = new CompletableFuture<>();
    AtomicReference<@Nullable Call> current = new AtomicReference<>();
    result.whenComplete((response, error) -> {
      if (result.isCancelled()) {
        Call call = current.get();
        if (call != null) {
          call.cancel();
        }
      }
    });
    Headers headers;
    try {
      headers = forwardable(request.headers());
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return result;
    }
    boolean stream = streams(request.body());
    if (request.tokens() != null) {
      attemptAsync(request, headers, stream, request.tokens(), new ArrayList<>(), null, 1, result, current);
    } else {
      try {
        streamingClient.dispatcher().executorService().execute(() -> {
          try {
            attemptAsync(request, headers, stream, tokens(request), new ArrayList<>(), null, 1, result, current);
          } catch (Throwable t) {
            result.completeExceptionally(t);
          }
        });
      } catch (RuntimeException e) { // the client's executor was shut down
        result.completeExceptionally(e);
      }
    }
    return result;
  }

  private void attemptAsync(ForwardRequest request, Headers headers, boolean stream, int[] tokens,
      List<WorkerId> failed, @Nullable UpstreamException failure, int attempt,
      CompletableFuture<ForwardedResponse> result, AtomicReference<@Nullable Call> current) {
    if (result.isDone()) {
      return; // cancelled
    }
    Attempt a;
    try {
      a = prepare(request, headers, stream, tokens, failed);
    } catch (NoWorkerAvailableException e) {
      if (failure != null) {
        failure.addSuppressed(e);
        result.completeExceptionally(failure);
      } else {
        result.completeExceptionally(e);
      }
      return;
    } catch (Throwable t) {
      result.completeExceptionally(t);
      return;
    }
    if (a.call == null) {
      UpstreamException u = connectFailed(a, noEndpoint(a.routing), failure, failed);
      if (attempt >= maxAttempts) {
        result.completeExceptionally(u);
      } else {
        attemptAsync(request, headers, stream, tokens, failed, u, attempt + 1, result, current);
      }
      return;
    }
    FirstByteTimer timer = a.startTimer();
    var callback = new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        timer.disarm();
        UpstreamException u = attemptFailed(a, e, timer.fired(), failure, failed);
        if (u == null) {
          a.routing.close();
          result.completeExceptionally(e); // cancelled
        } else if (attempt >= maxAttempts || u.reason() != UpstreamException.Reason.CONNECT_FAILED
            || result.isDone()) {
          result.completeExceptionally(u);
        } else {
          attemptAsync(request, headers, stream, tokens, failed, u, attempt + 1, result, current);
        }
      }

      @Override
      public void onResponse(Call call, Response response) {
        if (!timer.disarm()) {
          response.close();
          result.completeExceptionally(Objects.requireNonNull(attemptFailed(a,
              new SocketTimeoutException("first byte"), true, failure, failed)));
          return;
        }
        ForwardedResponse forwarded;
        try {
          forwarded = wrap(response, a, failed);
        } catch (Throwable t) {
          result.completeExceptionally(t);
          return;
        }
        if (!result.complete(forwarded)) {
          forwarded.close(); // cancelled meanwhile
        }
      }
    };
    current.set(a.call);
    if (result.isDone()) { // cancelled while preparing
      timer.disarm();
      a.call.cancel();
      a.routing.close();
      return;
    }
    try {
      a.call.enqueue(callback);
    } catch (RuntimeException e) { // the client's dispatcher was shut down
      timer.disarm();
      a.routing.close();
      result.completeExceptionally(e);
    }
  }

  /**
   * Classifies a failed attempt, reports it to the router and closes its routing handle.
   *
   * @return the typed failure, or null when the caller cancelled the call (nothing reported, handle not closed)
   */
  private @Nullable UpstreamException attemptFailed(Attempt a, IOException e, boolean firstByteTimedOut,
      @Nullable UpstreamException earlier, List<WorkerId> failed) {
    WorkerId id = a.routing.workerId();
    UpstreamException u;
    if (firstByteTimedOut) {
      router.reportFailure(id, FailureKind.TIMEOUT);
      u = new UpstreamException(UpstreamException.Reason.FIRST_BYTE_TIMEOUT, id, "worker " + id
          + " sent no response header within the first-byte timeout of " + firstByteTimeout.toMillis()
          + " ms; not retried elsewhere, since the engine may have received the request", e);
    } else if (isConnectFailure(e)) {
      return connectFailed(a, e, earlier, failed);
    } else if (a.call != null && a.call.isCanceled()) {
      return null;
    } else if (e instanceof InterruptedIOException) {
      router.reportFailure(id, FailureKind.TIMEOUT);
      u = new UpstreamException(UpstreamException.Reason.RESPONSE_TIMEOUT, id, "worker " + id
          + " was silent for the read timeout of " + (a.stream ? idleTimeout : responseTimeout).toMillis()
          + " ms before its response headers; not retried elsewhere", e);
    } else {
      router.reportFailure(id, FailureKind.STREAM_CUT);
      u = new UpstreamException(UpstreamException.Reason.CONNECTION_LOST, id, "the connection to worker " + id
          + " broke after the request was sent (" + e + "); not retried elsewhere, since the engine may be"
          + " processing it", e);
    }
    a.routing.close();
    evictIdleConnections();
    if (earlier != null) {
      u.addSuppressed(earlier);
    }
    return u;
  }

  /**
   * Closes the pool's idle connections after a worker failed or before a probe of an ejected worker. A connection
   * kept alive to a process that died (or was replaced by a restart on the same port) looks healthy to OkHttp for
   * 10 s; a request written onto it fails after it was sent, which is never retried (the engine might have read
   * it). OkHttp cannot evict one host's connections, so all idle ones go: reconnecting costs a round trip, and
   * failures are rare.
   */
  private void evictIdleConnections() {
    streamingClient.connectionPool().evictAll();
  }

  private UpstreamException connectFailed(Attempt a, IOException e, @Nullable UpstreamException earlier,
      List<WorkerId> failed) {
    WorkerId id = a.routing.workerId();
    if (a.call != null) { // a worker without the endpoint (in-process) is not unhealthy: only not forwardable
      router.reportFailure(id, FailureKind.CONNECT_FAILED);
    }
    a.routing.close();
    logger.log(DEBUG, () -> "cannot connect to " + id + "; routing again without it: " + e);
    failed.add(id);
    UpstreamException u = new UpstreamException(UpstreamException.Reason.CONNECT_FAILED, id,
        "cannot connect to worker " + id + " (" + e + ")" + (failed.size() > 1 ? " nor to " + failed.subList(0,
            failed.size() - 1) : "") + "; the request reached no engine", e);
    if (earlier != null) {
      u.addSuppressed(earlier);
    }
    return u;
  }

  private int[] tokens(ForwardRequest request) {
    int[] tokens = request.tokens();
    if (tokens != null) {
      return tokens;
    }
    if (tokenizer == null) {
      throw new IllegalStateException("the request has no tokens and the forwarder has no tokenizer");
    }
    try {
      return tokenizer.tokenizeRequest(request.body());
    } catch (IllegalArgumentException e) {
      InvalidRouteRequestException invalid = new InvalidRouteRequestException(
          InvalidRouteRequestException.Reason.INVALID_PARAMETER, e.getMessage());
      invalid.addSuppressed(e);
      throw invalid;
    } catch (TokenizeException e) {
      int status = e.statusCode();
      RoutingException typed;
      if (status == 404) {
        typed = new NoWorkerAvailableException(NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL,
            "the tokenizer does not know the request's model: " + e.getMessage());
      } else if (status == 400 || status == 413 || status == 422) {
        typed = new InvalidRouteRequestException(InvalidRouteRequestException.Reason.INVALID_PARAMETER,
            "the tokenizer refused the prompt: " + e.getMessage());
      } else {
        typed = new UpstreamException(UpstreamException.Reason.TOKENIZER_FAILED, null,
            "tokenizing the prompt failed: " + e.getMessage(), e);
      }
      typed.addSuppressed(e);
      throw typed;
    } catch (IOException e) {
      throw new UpstreamException(UpstreamException.Reason.TOKENIZER_FAILED, null,
          "tokenizing the prompt failed: " + e, e);
    }
  }

  /** Whether the body asks for a streamed response ({@code "stream": true}); false for a body that is not JSON. */
  static boolean streams(byte[] body) {
    if (!contains(body, STREAM_KEY)) {
      return false; // the common non-streamed body costs one scan, no parse
    }
    try {
      return "true".equals(Json.rawMembers(Json.decodeUtf8(body, 0, body.length)).get("stream"));
    } catch (IllegalArgumentException e) {
      return false; // the engine will refuse it
    }
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  /** A chosen worker and the call to it; the call is null when the worker has no endpoint of the name. */
  private final class Attempt {
    final Routing routing;
    final @Nullable Call call;
    final boolean stream;

    Attempt(Routing routing, @Nullable Call call, boolean stream) {
      this.routing = routing;
      this.call = call;
      this.stream = stream;
    }

    /** Arms the first-byte budget of a streamed request (a no-op timer otherwise). */
    FirstByteTimer startTimer() {
      FirstByteTimer timer = new FirstByteTimer(Objects.requireNonNull(call));
      if (stream) {
        timer.arm(firstByteTimeout);
      }
      return timer;
    }
  }

  /**
   * Routes the request and prepares its call.
   *
   * @throws NoWorkerAvailableException if no worker is left
   */
  private Attempt prepare(ForwardRequest request, Headers headers, boolean stream, int[] tokens,
      List<WorkerId> failed) {
    Routing routing = router.select(routeRequest(request, tokens, failed));
    try {
      if (router.health(routing.workerId()) == HealthState.EJECTED) {
        evictIdleConnections(); // this request is the half-open probe: the worker was down, its connections are stale
      }
      URI base = routing.worker().endpoint(endpointName);
      if (base == null) {
        return new Attempt(routing, null, stream);
      }
      Request upstream = new Request.Builder()
          .url(Urls.resolve(base, request.path()))
          .headers(headers)
          .post(RequestBody.create(request.body(), MediaType.get(request.contentType())))
          .tag(Routing.class, routing)
          .build();
      return new Attempt(routing, (stream ? streamingClient : responseClient).newCall(upstream), stream);
    } catch (RuntimeException | Error e) {
      routing.close();
      throw e;
    }
  }

  /** Cancels a call that got no response header within its budget; thread-safe. */
  private static final class FirstByteTimer implements Runnable {
    private static final int WAITING = 0;
    private static final int DISARMED = 1;
    private static final int FIRED = 2;
    private final Call call;
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private volatile @Nullable ScheduledFuture<?> future;

    FirstByteTimer(Call call) {
      this.call = call;
    }

    void arm(Duration timeout) {
      future = Timers.SCHEDULER.schedule(this, timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void run() {
      if (state.compareAndSet(WAITING, FIRED)) {
        call.cancel();
      }
    }

    /** Stops the timer; returns false if it had already fired. */
    boolean disarm() {
      boolean disarmed = state.compareAndSet(WAITING, DISARMED) || state.get() == DISARMED;
      ScheduledFuture<?> f = future;
      if (f != null) {
        f.cancel(false);
      }
      return disarmed;
    }

    boolean fired() {
      return state.get() == FIRED;
    }
  }

  /** The one daemon thread that fires first-byte budgets for every forwarder (a budget only cancels a call). */
  private static final class Timers {
    static final ScheduledThreadPoolExecutor SCHEDULER = create();

    private static ScheduledThreadPoolExecutor create() {
      ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "kvroute-forwarder-timeouts");
        t.setDaemon(true);
        return t;
      });
      executor.setRemoveOnCancelPolicy(true); // a disarmed budget does not linger in the queue
      return executor;
    }
  }

  /**
   * Headers not sent upstream: hop-by-hop headers (RFC 9110 section 7.6.1, and the legacy {@code Keep-Alive},
   * {@code Proxy-Connection}), and those OkHttp sets itself for this connection and body ({@code Host},
   * {@code Content-Length}, {@code Content-Type}, {@code Accept-Encoding}: OkHttp negotiates gzip and decompresses,
   * so the first token can be seen in the stream). Headers named in a {@code Connection} header are hop-by-hop too.
   */
  static final Set<String> NOT_FORWARDED = Set.of("host", "content-length", "content-type", "transfer-encoding",
      "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer",
      "upgrade", "accept-encoding");

  /**
   * The headers to send upstream: all but {@link #NOT_FORWARDED} and those the {@code Connection} header names.
   * Values may hold non-ASCII text (sent as UTF-8, as OkHttp's lenient headers), never control characters.
   *
   * @throws IllegalArgumentException if a value holds CR, LF, NUL or another control character but tab (which
   *     would split the header on the wire), naming the header
   */
  static Headers forwardable(Headers headers) {
    Set<String> connectionOptions = Set.of();
    for (String value : headers.values("Connection")) {
      for (String option : value.split(",", -1)) {
        String name = option.strip().toLowerCase(Locale.ROOT);
        if (!name.isEmpty()) {
          if (connectionOptions.isEmpty()) {
            connectionOptions = new HashSet<>();
          }
          connectionOptions.add(name);
        }
      }
    }
    Headers.Builder kept = new Headers.Builder();
    for (int i = 0; i < headers.size(); i++) {
      String name = headers.name(i);
      String lower = name.toLowerCase(Locale.ROOT);
      if (NOT_FORWARDED.contains(lower) || connectionOptions.contains(lower)) {
        continue;
      }
      String value = headers.value(i);
      for (int j = 0; j < value.length(); j++) {
        char c = value.charAt(j);
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
          throw new IllegalArgumentException("header " + name + " holds a control character (0x"
              + Integer.toHexString(c) + ") at index " + j + "; it is not forwarded");
        }
      }
      kept.addUnsafeNonAscii(name, value);
    }
    return kept.build();
  }

  private ConnectException noEndpoint(Routing routing) {
    return new ConnectException("worker " + routing.workerId() + " has no '" + endpointName + "' endpoint");
  }

  private ForwardedResponse wrap(Response response, Attempt a, List<WorkerId> failed) {
    try {
      WorkerId id = a.routing.workerId();
      boolean ok = response.isSuccessful();
      if (response.code() >= 500) {
        router.reportFailure(id, FailureKind.SERVER_ERROR);
      } else if (!ok) {
        router.reportSuccess(id); // a 4xx: the worker is alive and answering
      }
      RoutedResponseBody body = new RoutedResponseBody(response.body(), a.routing, ok, ok ? router : null,
          this::evictIdleConnections);
      Response routed = response.newBuilder().body(body).build();
      return new ForwardedResponse(routed, body, a.routing, Objects.requireNonNull(a.call), List.copyOf(failed));
    } catch (RuntimeException | Error e) {
      response.close();
      a.routing.close();
      throw e;
    }
  }

  @Override
  public String toString() {
    return "RoutingForwarder{router=" + router + ", maxAttempts=" + maxAttempts + ", connect=" + connectTimeout
        + ", firstByte=" + firstByteTimeout + ", idle=" + idleTimeout + ", response=" + responseTimeout
        + ", tokenizer=" + tokenizer + "}";
  }

  private RouteRequest routeRequest(ForwardRequest request, int[] tokens, List<WorkerId> failed) {
    RouteRequest.Builder b = RouteRequest.newBuilder(tokens);
    if (request.model() != null) {
      b.model(request.model());
    }
    request.routeOptions().accept(b);
    if (failed.isEmpty()) {
      return b.build();
    }
    Set<WorkerId> allowed = b.build().allowedWorkers();
    Set<WorkerId> remaining = new HashSet<>();
    if (allowed != null) {
      remaining.addAll(allowed);
    } else {
      for (Worker worker : router.workers().snapshot()) {
        remaining.add(worker.id());
      }
    }
    failed.forEach(remaining::remove);
    return b.allowedWorkers(remaining).build();
  }

  /** Whether the request surely never reached the worker. */
  static boolean isConnectFailure(IOException e) {
    if (e instanceof ConnectException || e instanceof NoRouteToHostException || e instanceof UnknownHostException) {
      return true;
    }
    String message = e.getMessage();
    return e instanceof SocketTimeoutException && message != null
        && message.toLowerCase(Locale.ROOT).contains("connect timed out");
  }

  /** Configures a {@link RoutingForwarder}; not thread-safe. */
  public static final class Builder {
    private final Router router;
    private @Nullable OkHttpClient client;
    private @Nullable Tokenizer tokenizer;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private String endpointName = Worker.HTTP;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration firstByteTimeout = DEFAULT_FIRST_BYTE_TIMEOUT;
    private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
    private Duration responseTimeout = DEFAULT_RESPONSE_TIMEOUT;

    private Builder(Router router) {
      this.router = Objects.requireNonNull(router, "router");
    }

    /**
     * The client to derive the upstream calls' client from, sharing its connection pool, dispatcher and
     * interceptors; its connect, read and write timeouts are replaced by this builder's budgets, and its silent
     * retry of failed connections is turned off (it could resend a request an engine already received). Default:
     * a new client.
     *
     * @param client the client to derive from, not null
     * @return this builder
     */
    public Builder client(OkHttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    /**
     * The budget of each attempt's connect (default {@link #DEFAULT_CONNECT_TIMEOUT}); an attempt that cannot
     * connect within it is routed to another worker.
     *
     * @param connectTimeout the connect budget per attempt, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = Checks.positive("connectTimeout", connectTimeout);
      return this;
    }

    /**
     * The budget, for a streamed request, from starting the attempt to its response headers (default
     * {@link #DEFAULT_FIRST_BYTE_TIMEOUT}); the idle timeout bounds that wait as well. Exceeding it fails the
     * request with {@link UpstreamException.Reason#FIRST_BYTE_TIMEOUT} (504).
     *
     * @param firstByteTimeout the time-to-first-byte budget of a streamed request, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder firstByteTimeout(Duration firstByteTimeout) {
      this.firstByteTimeout = Checks.positive("firstByteTimeout", firstByteTimeout);
      return this;
    }

    /**
     * The longest silence of a streamed request's connection, between any two reads or writes (default
     * {@link #DEFAULT_IDLE_TIMEOUT}). Exceeded before the headers: {@link UpstreamException.Reason#RESPONSE_TIMEOUT}
     * (504); in the body: the read fails with a {@link java.net.SocketTimeoutException}.
     *
     * @param idleTimeout the longest silence on a streamed connection, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder idleTimeout(Duration idleTimeout) {
      this.idleTimeout = Checks.positive("idleTimeout", idleTimeout);
      return this;
    }

    /**
     * The longest silence of a non-streamed request's connection, which is silent until the whole answer is ready
     * (default {@link #DEFAULT_RESPONSE_TIMEOUT}). Exceeded: {@link UpstreamException.Reason#RESPONSE_TIMEOUT} (504).
     *
     * @param responseTimeout the longest silence on a non-streamed connection, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder responseTimeout(Duration responseTimeout) {
      this.responseTimeout = Checks.positive("responseTimeout", responseTimeout);
      return this;
    }

    /**
     * Reads the tokens of requests that do not carry them (default: none; such requests are refused).
     *
     * @param tokenizer the tokenizer for requests without tokens, not null
     * @return this builder
     */
    public Builder tokenizer(Tokenizer tokenizer) {
      this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
      return this;
    }

    /**
     * How many workers to try per request when connecting fails (default {@link #DEFAULT_MAX_ATTEMPTS}; 1 turns
     * retries off).
     *
     * @param maxAttempts the most workers tried per request, at least 1
     * @return this builder
     * @throws IllegalArgumentException if less than 1
     */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = Checks.positive("maxAttempts", maxAttempts);
      return this;
    }

    /**
     * The name of the worker endpoint to forward to (default {@link Worker#HTTP}).
     *
     * @param endpointName an endpoint name of the workers, such as {@link Worker#HTTP}
     * @return this builder
     */
    public Builder endpointName(String endpointName) {
      this.endpointName = Objects.requireNonNull(endpointName, "endpointName");
      return this;
    }

    /**
     * Builds the forwarder.
     *
     * @return a new forwarder; it holds no resources of its own beyond the derived client, which shares the given
     *     client's pools
     */
    public RoutingForwarder build() {
      return new RoutingForwarder(this);
    }
  }
}
