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
import okhttp3.Call;
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
    int[] tokens = request.tokens();
    if (tokens == null) {
      if (tokenizer == null) {
        throw new IllegalStateException("the request has no tokens and the forwarder has no tokenizer");
      }
      tokens = tokenizer.tokenizeRequest(request.body());
    }
    List<WorkerId> failed = new ArrayList<>();
    IOException failure = null;
    for (int attempt = 1; ; attempt++) {
      Routing routing;
      try {
        routing = router.select(routeRequest(request, tokens, failed));
      } catch (NoWorkerAvailableException e) {
        if (failure == null) {
          throw e;
        }
        failure.addSuppressed(e);
        throw failure;
      }
      WorkerId id = routing.workerId();
      Call call;
      Response response;
      try {
        URI base = routing.worker().endpoint(endpointName);
        if (base == null) {
          throw new ConnectException("worker " + id + " has no '" + endpointName + "' endpoint");
        }
        Request upstream = new Request.Builder()
            .url(Urls.resolve(base, request.path()))
            .headers(request.headers())
            .post(RequestBody.create(request.body(), MediaType.get(request.contentType())))
            .tag(Routing.class, routing)
            .build();
        call = client.newCall(upstream);
        response = call.execute();
      } catch (IOException e) {
        routing.close();
        if (failure != null) {
          e.addSuppressed(failure);
        }
        if (attempt >= maxAttempts || !isConnectFailure(e)) {
          throw e;
        }
        logger.log(DEBUG, () -> "cannot connect to " + id + "; routing again without it: " + e);
        failed.add(id);
        failure = e;
        continue;
      } catch (RuntimeException | Error e) {
        routing.close();
        throw e;
      }
      try {
        RoutedResponseBody body = new RoutedResponseBody(response.body(), routing, response.isSuccessful());
        Response routed = response.newBuilder().body(body).build();
        return new ForwardedResponse(routed, body, routing, call, List.copyOf(failed));
      } catch (RuntimeException | Error e) {
        response.close();
        routing.close();
        throw e;
      }
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
