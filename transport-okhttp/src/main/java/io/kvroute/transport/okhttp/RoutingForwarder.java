package io.kvroute.transport.okhttp;

import static java.lang.System.Logger.Level.DEBUG;

import io.kvroute.NoWorkerAvailableException;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
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
 *     .tokenizer(OkHttpTokenizer.newBuilder().workers(router.workers()).build())
 *     .build();
 * try (ForwardedResponse upstream = forwarder.forward(
 *     ForwardRequest.newBuilder("/v1/chat/completions", body).build())) {
 *   upstream.body().source() ...   // relay the SSE stream to the client
 * }                               // the routing handle is closed: the worker's booking is released
 * }</pre>
 *
 * <p>Each call routes the prompt (the request's tokens, or the {@link Tokenizer}'s reading of its body), POSTs the
 * body to the chosen worker's {@linkplain Builder#endpointName endpoint} plus the request's path, and returns once
 * the response headers arrived. The routing handle hears {@link Routing#firstToken()} when the body's first output
 * token arrives (for a server-sent event stream, the first event carrying output; otherwise the first byte), and
 * is closed when the body is exhausted, fails, or is closed, or when the call fails. A worker that cannot be
 * connected to (refused, unreachable, connect timeout) is excluded and the request routed again, up to
 * {@linkplain Builder#maxAttempts max attempts}: the request never reached it, so retrying cannot duplicate work.
 * Failures after the request was sent, and non-2xx answers, are returned or thrown as they are.
 *
 * <p>{@link #forward} blocks the calling thread until the response headers arrive; {@link #forwardAsync} does the
 * same on OkHttp's dispatcher threads and completes a future.
 */
public final class RoutingForwarder {
  /** The default number of workers tried per request. */
  public static final int DEFAULT_MAX_ATTEMPTS = 3;

  private static final System.Logger logger = System.getLogger(RoutingForwarder.class.getName());

  private final Router router;
  private final OkHttpClient client;
  private final @Nullable Tokenizer tokenizer;
  private final int maxAttempts;
  private final String endpointName;

  private RoutingForwarder(Builder b) {
    this.router = b.router;
    this.client = b.client != null ? b.client : defaultClient();
    this.tokenizer = b.tokenizer;
    this.maxAttempts = b.maxAttempts;
    this.endpointName = b.endpointName;
  }

  /**
   * A client suited to generation: 5 s to connect, and reads that may wait 10 minutes between bytes (a long
   * prefill, a queue); no overall call timeout, since streams last as long as the generation.
   */
  static OkHttpClient defaultClient() {
    return new OkHttpClient.Builder()
        .connectTimeout(Duration.ofSeconds(5))
        .readTimeout(Duration.ofMinutes(10))
        .writeTimeout(Duration.ofMinutes(1))
        .build();
  }

  /**
   * Returns a builder forwarding to the workers of {@code router}.
   *
   * @throws NullPointerException if {@code router} is null
   */
  public static Builder newBuilder(Router router) {
    return new Builder(router);
  }

  /**
   * Routes and forwards {@code request}, returning when the chosen worker's response headers arrived.
   *
   * @throws IllegalArgumentException if the request has no tokens and its body has no prompt the tokenizer can
   *     read
   * @throws IllegalStateException if the request has no tokens and the forwarder no tokenizer
   * @throws NoWorkerAvailableException if no registered worker may serve the request
   * @throws IOException if tokenizing fails, or the last worker tried fails (earlier failures are suppressed)
   */
  public ForwardedResponse forward(ForwardRequest request) throws IOException {
    Objects.requireNonNull(request, "request");
    int[] tokens = tokens(request);
    List<WorkerId> failed = new ArrayList<>();
    IOException failure = null;
    for (int attempt = 1; ; attempt++) {
      Attempt a;
      try {
        a = prepare(request, tokens, failed);
      } catch (NoWorkerAvailableException e) {
        if (failure == null) {
          throw e;
        }
        failure.addSuppressed(e);
        throw failure;
      }
      Response response;
      try {
        if (a.call == null) {
          throw noEndpoint(a.routing);
        }
        response = a.call.execute();
      } catch (IOException e) {
        a.routing.close();
        if (failure != null) {
          e.addSuppressed(failure);
        }
        if (attempt >= maxAttempts || !isConnectFailure(e)) {
          throw e;
        }
        logRetry(a.routing.workerId(), e);
        failed.add(a.routing.workerId());
        failure = e;
        continue;
      } catch (RuntimeException | Error e) {
        a.routing.close();
        throw e;
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
    if (request.tokens() != null) {
      attemptAsync(request, request.tokens(), new ArrayList<>(), null, 1, result, current);
    } else {
      try {
        client.dispatcher().executorService().execute(() -> {
          try {
            attemptAsync(request, tokens(request), new ArrayList<>(), null, 1, result, current);
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

  private void attemptAsync(ForwardRequest request, int[] tokens, List<WorkerId> failed, @Nullable IOException failure,
      int attempt, CompletableFuture<ForwardedResponse> result, AtomicReference<@Nullable Call> current) {
    if (result.isDone()) {
      return; // cancelled
    }
    Attempt a;
    try {
      a = prepare(request, tokens, failed);
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
    var callback = new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        failed(e);
      }

      void failed(IOException e) {
        a.routing.close();
        if (failure != null) {
          e.addSuppressed(failure);
        }
        if (attempt >= maxAttempts || !isConnectFailure(e) || result.isDone()) {
          result.completeExceptionally(e);
          return;
        }
        logRetry(a.routing.workerId(), e);
        failed.add(a.routing.workerId());
        attemptAsync(request, tokens, failed, e, attempt + 1, result, current);
      }

      @Override
      public void onResponse(Call call, Response response) {
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
    if (a.call == null) {
      callback.failed(noEndpoint(a.routing));
      return;
    }
    current.set(a.call);
    if (result.isDone()) { // cancelled while preparing
      a.call.cancel();
      a.routing.close();
      return;
    }
    try {
      a.call.enqueue(callback);
    } catch (RuntimeException e) { // the client's dispatcher was shut down
      a.routing.close();
      result.completeExceptionally(e);
    }
  }

  private int[] tokens(ForwardRequest request) throws IOException {
    int[] tokens = request.tokens();
    if (tokens != null) {
      return tokens;
    }
    if (tokenizer == null) {
      throw new IllegalStateException("the request has no tokens and the forwarder has no tokenizer");
    }
    return tokenizer.tokenizeRequest(request.body());
  }

  /** A chosen worker and the call to it; the call is null when the worker has no endpoint of the name. */
  private record Attempt(Routing routing, @Nullable Call call) {}

  /**
   * Routes the request and prepares its call.
   *
   * @throws NoWorkerAvailableException if no worker is left
   */
  private Attempt prepare(ForwardRequest request, int[] tokens, List<WorkerId> failed) {
    Routing routing = router.select(routeRequest(request, tokens, failed));
    try {
      URI base = routing.worker().endpoint(endpointName);
      if (base == null) {
        return new Attempt(routing, null);
      }
      Request upstream = new Request.Builder()
          .url(Urls.resolve(base, request.path()))
          .headers(forwardable(request.headers()))
          .post(RequestBody.create(request.body(), MediaType.get(request.contentType())))
          .tag(Routing.class, routing)
          .build();
      return new Attempt(routing, client.newCall(upstream));
    } catch (RuntimeException | Error e) {
      routing.close();
      throw e;
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

  private static void logRetry(WorkerId id, IOException e) {
    logger.log(DEBUG, () -> "cannot connect to " + id + "; routing again without it: " + e);
  }

  private static ForwardedResponse wrap(Response response, Attempt a, List<WorkerId> failed) {
    try {
      RoutedResponseBody body = new RoutedResponseBody(response.body(), a.routing, response.isSuccessful());
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
    return "RoutingForwarder{router=" + router + ", maxAttempts=" + maxAttempts + ", tokenizer=" + tokenizer + "}";
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

    private Builder(Router router) {
      this.router = Objects.requireNonNull(router, "router");
    }

    /**
     * The client for upstream calls, used as given: its timeouts bound the calls. Default: 5 s connect timeout,
     * 10 min read timeout, no call timeout.
     */
    public Builder client(OkHttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    /** Reads the tokens of requests that do not carry them (default: none; such requests are refused). */
    public Builder tokenizer(Tokenizer tokenizer) {
      this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
      return this;
    }

    /**
     * How many workers to try per request when connecting fails (default {@link #DEFAULT_MAX_ATTEMPTS}; 1 turns
     * retries off).
     *
     * @throws IllegalArgumentException if less than 1
     */
    public Builder maxAttempts(int maxAttempts) {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be at least 1 but was " + maxAttempts);
      }
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** The name of the worker endpoint to forward to (default {@link Worker#HTTP}). */
    public Builder endpointName(String endpointName) {
      this.endpointName = Objects.requireNonNull(endpointName, "endpointName");
      return this;
    }

    public RoutingForwarder build() {
      return new RoutingForwarder(this);
    }
  }
}
