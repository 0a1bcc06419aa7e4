package io.kvroute.spring.gateway;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.FailureKind;
import io.kvroute.InvalidRouteRequestException;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.RoutingException;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.transport.okhttp.TokenizeException;
import io.kvroute.transport.okhttp.Tokenizer;
import io.netty.handler.timeout.ReadTimeoutException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.netty.http.client.PrematureCloseException;

/**
 * The route filter that sends each OpenAI-compatible request to the worker kvroute chooses; thread-safe: one
 * instance serves every request of its route.
 *
 * <p>Per request it reads the body once (bounded by {@code kvroute.max-request-body}), tokenizes it on the
 * tokenizer scheduler, selects a worker, and leaves the worker's base URL in {@link #TARGET_ATTR} for
 * {@link KvRouteTargetFilter} to apply after Spring Cloud Gateway has computed the request URL. The response passes
 * through chunk by chunk, unbuffered; the filter watches the chunks for the first output token
 * ({@link Routing#firstToken()}) and closes the routing handle when the response completes, fails or the client
 * cancels. A worker that refuses the connection (the request surely never reached it) is left for another one, up
 * to {@code kvroute.max-attempts} workers.
 *
 * <p>The filter runs just before {@link NettyWriteResponseFilter}, so that the response it decorates is the one the
 * gateway writes the upstream body to, and its completion covers the whole body.
 */
final class KvRouteFilter implements GatewayFilter, Ordered {
  /** Runs before the filter that writes the upstream body, so that it sees every chunk and the body's end. */
  static final int ORDER = NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;
  /** The exchange attribute holding the chosen worker's base URI (for {@link KvRouteTargetFilter}). */
  static final String TARGET_ATTR = KvRouteFilter.class.getName() + ".target";
  /** The exchange attribute holding the current {@link Routing}, for other filters. */
  static final String ROUTING_ATTR = Routing.class.getName();

  private static final System.Logger logger = System.getLogger(KvRouteFilter.class.getName());
  private static final byte[] EMPTY = new byte[0];

  private final Router router;
  private final Tokenizer tokenizer;
  private final Scheduler tokenizerScheduler;
  private final int maxBodyBytes;
  private final int maxAttempts;
  private final @Nullable String workerHeader;
  private final @Nullable String cachedTokensHeader;
  private final GatewayObserver observer;

  KvRouteFilter(Router router, Tokenizer tokenizer, Scheduler tokenizerScheduler, int maxBodyBytes, int maxAttempts,
      @Nullable String workerHeader, @Nullable String cachedTokensHeader, GatewayObserver observer) {
    this.router = router;
    this.tokenizer = tokenizer;
    this.tokenizerScheduler = tokenizerScheduler;
    this.maxBodyBytes = maxBodyBytes;
    this.maxAttempts = maxAttempts;
    this.workerHeader = workerHeader;
    this.cachedTokensHeader = cachedTokensHeader;
    this.observer = observer;
  }

  @Override
  public int getOrder() {
    return ORDER;
  }

  /** What one request carries from its body to its attempts. */
  private static final class Prepared {
    final byte[] body;
    final int[] tokens;
    final @Nullable String model;
    final long startNanos;
    final List<WorkerId> failed = new ArrayList<>(0);

    Prepared(byte[] body, int[] tokens, @Nullable String model, long startNanos) {
      this.body = body;
      this.tokens = tokens;
      this.model = model;
      this.startNanos = startNanos;
    }
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
    long start = System.nanoTime();
    return DataBufferUtils.join(exchange.getRequest().getBody(), maxBodyBytes)
        .map(KvRouteFilter::drain)
        .defaultIfEmpty(EMPTY)
        .onErrorMap(DataBufferLimitException.class, e -> new RoutingFailure(413, "request_too_large",
            "the request body exceeds kvroute.max-request-body (" + maxBodyBytes + " bytes)", e))
        .flatMap(body -> tokenize(body, start))
        .flatMap(prepared -> {
          ServerWebExchange routed = decorate(exchange, prepared);
          return attempt(routed, chain, prepared, 1);
        })
        .onErrorResume(RoutingFailure.class, failure -> {
          safely(() -> observer.onRejected(failure.status(), failure.code()));
          logger.log(DEBUG, () -> "kvroute refused " + exchange.getRequest().getPath() + ": " + failure.status()
              + " " + failure.getMessage());
          if (workerHeader != null && !exchange.getResponse().isCommitted()) {
            exchange.getResponse().getHeaders().remove(workerHeader); // set by an attempt that failed over
            exchange.getResponse().getHeaders().remove(cachedTokensHeader);
          }
          return failure.writeTo(exchange.getResponse());
        });
  }

  private static byte[] drain(DataBuffer buffer) {
    try {
      byte[] bytes = new byte[buffer.readableByteCount()];
      buffer.read(bytes);
      return bytes;
    } finally {
      DataBufferUtils.release(buffer);
    }
  }

  /** Parses the body's model and tokenizes its prompt on the tokenizer scheduler. */
  private Mono<Prepared> tokenize(byte[] body, long start) {
    return Mono.fromCallable(() -> {
      if (body.length == 0) {
        throw new RoutingFailure(400, "invalid_request_body", "the request has no body; kvroute routes "
            + "OpenAI-compatible completion and chat completion requests");
      }
      RequestFields fields;
      int[] tokens;
      try {
        fields = RequestFields.read(body);
        if (fields.model() != null && !servedByAnyWorker(fields.model())) {
          throw new RoutingFailure(404, "model_not_found", "the model '" + fields.model() + "' does not exist");
        }
        tokens = tokenizer.tokenizeRequest(body);
      } catch (IllegalArgumentException e) {
        throw new RoutingFailure(400, "invalid_request_body", e.getMessage(), e);
      } catch (RoutingException e) {
        throw failure(e); // no worker to tokenize on
      } catch (TokenizeException e) {
        int status = e.statusCode();
        if (status >= 400 && status < 500) {
          throw new RoutingFailure(status, status == 404 ? "model_not_found" : "invalid_prompt", e.getMessage(), e);
        }
        throw new RoutingFailure(502, "tokenizer_failed", "tokenizing the prompt failed: " + e.getMessage(), e);
      } catch (IOException e) {
        throw new RoutingFailure(502, "tokenizer_unavailable", "the tokenizer could not be reached: " + e, e);
      }
      if (tokens.length == 0) {
        throw new RoutingFailure(400, "empty_prompt", "the prompt is empty");
      }
      return new Prepared(body, tokens, fields.model(), start);
    }).subscribeOn(tokenizerScheduler);
  }

  /** The exchange with the body replayable for every attempt and the response watched for tokens and its end. */
  private ServerWebExchange decorate(ServerWebExchange exchange, Prepared prepared) {
    byte[] body = prepared.body;
    ServerHttpRequestDecorator request = new ServerHttpRequestDecorator(exchange.getRequest()) {
      @Override
      public Flux<DataBuffer> getBody() {
        return Flux.defer(() -> Flux.just(exchange.getResponse().bufferFactory().wrap(body)));
      }
    };
    return exchange.mutate().request(request).response(new WatchedResponse(exchange.getResponse()))
        .build();
  }

  private Mono<Void> attempt(ServerWebExchange exchange, GatewayFilterChain chain, Prepared prepared, int attempt) {
    Routing routing = select(prepared);
    try {
      Worker worker = routing.worker();
      URI base = worker.endpoint(Worker.HTTP);
      if (base == null) {
        throw new RoutingFailure(503, "no_endpoint", "worker " + worker.id() + " has no http endpoint");
      }
      exchange.getAttributes().put(TARGET_ATTR, base);
      exchange.getAttributes().put(ROUTING_ATTR, routing);
      ((WatchedResponse) exchange.getResponse()).routing = routing;
      if (workerHeader != null) {
        HttpHeaders headers = exchange.getResponse().getHeaders();
        headers.set(workerHeader, routing.workerId().toString());
        headers.set(cachedTokensHeader, Integer.toString(routing.predictedCachedTokens()));
      }
    } catch (RuntimeException e) {
      routing.close();
      throw e;
    }
    long routed = System.nanoTime();
    safely(() -> observer.onRouted(routing, routed - prepared.startNanos));
    // Deferred: a filter further down that throws instead of returning an error must not skip doFinally, which
    // releases the routing (its booking would otherwise stay until the booking timeout).
    return Mono.defer(() -> chain.filter(exchange))
        .doOnSuccess(ignored -> {
          var status = exchange.getResponse().getStatusCode();
          if ((status != null && status.is5xxServerError())
              || ((WatchedResponse) exchange.getResponse()).streamFailed()) {
            // A 5xx, or a 200 whose stream carried an engine error event (5xx, missing or non-integer code); one
            // with a 4xx code is the request's fault and reports nothing, as a 4xx answer does.
            router.reportFailure(routing.workerId(), FailureKind.SERVER_ERROR);
          }
        })
        .doOnError(e -> {
          if (isStreamCut(e)) {
            router.reportFailure(routing.workerId(), FailureKind.STREAM_CUT);
          } else if (isTimeout(e)) {
            router.reportFailure(routing.workerId(), FailureKind.TIMEOUT);
          }
        })
        .onErrorResume(e -> isConnectFailure(e) && !exchange.getResponse().isCommitted(), e -> {
          routing.close();
          WorkerId failed = routing.workerId();
          router.reportFailure(failed, FailureKind.CONNECT_FAILED);
          prepared.failed.add(failed);
          safely(() -> observer.onFailover(failed));
          if (attempt >= maxAttempts) {
            return Mono.error(new RoutingFailure(502, "upstream_unavailable", "no worker accepted the connection; "
                + "tried " + prepared.failed, e));
          }
          logger.log(WARNING, () -> "kvroute: worker " + failed + " refused the connection (" + e
              + "); trying another worker");
          ServerWebExchangeUtils.reset(exchange);
          return attempt(exchange, chain, prepared, attempt + 1);
        })
        .doFinally(signal -> routing.close());
  }

  private Routing select(Prepared prepared) {
    RouteRequest.Builder request = RouteRequest.newBuilder(prepared.tokens);
    if (prepared.model != null) {
      request.model(prepared.model);
    }
    if (!prepared.failed.isEmpty()) {
      Set<WorkerId> remaining = new HashSet<>();
      for (Worker w : router.workers().snapshot()) {
        remaining.add(w.id());
      }
      prepared.failed.forEach(remaining::remove);
      request.allowedWorkers(remaining);
    }
    try {
      return router.select(request.build());
    } catch (NoWorkerAvailableException e) {
      if (!prepared.failed.isEmpty() && e.reason() == NoWorkerAvailableException.Reason.NONE_ALLOWED) {
        throw new RoutingFailure(502, "upstream_unavailable", "no worker accepted the connection; tried "
            + prepared.failed, e);
      }
      throw failure(e);
    } catch (RoutingException e) {
      throw failure(e);
    }
  }

  /** kvroute's typed failure as the HTTP status it names and an OpenAI-style error code. */
  static RoutingFailure failure(RoutingException e) {
    Enum<?> reason = e.reason();
    String code;
    if (reason == NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL) {
      code = "model_not_found"; // OpenAI's code for an unknown model
    } else if (reason == InvalidRouteRequestException.Reason.EMPTY_PROMPT) {
      code = "empty_prompt";
    } else {
      code = reason.name().toLowerCase(Locale.ROOT);
    }
    return new RoutingFailure(e.httpStatus(), code, e.getMessage(), e);
  }

  private boolean servedByAnyWorker(String model) {
    for (Worker w : router.workers().snapshot()) {
      if (w.serves(model, null)) {
        return true;
      }
    }
    return false;
  }

  /** Whether the request surely never reached the worker: the connection was refused or could not be made. */
  static boolean isConnectFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ConnectException || t instanceof NoRouteToHostException
          || t instanceof UnknownHostException) {
        return true;
      }
    }
    return false;
  }

  /** Whether the worker's response ended before it was complete (not the client going away). */
  static boolean isStreamCut(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof PrematureCloseException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether the worker did not answer in time: the gateway's response timeout (504, from
   * {@code spring.cloud.gateway.server.webflux.httpclient.response-timeout} or the route's {@code response-timeout}
   * metadata) or a read timeout.
   */
  static boolean isTimeout(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof TimeoutException || t instanceof ReadTimeoutException
          || (t instanceof ResponseStatusException r && r.getStatusCode().value() == 504)) {
        return true;
      }
    }
    return false;
  }

  private static void safely(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      logger.log(WARNING, "kvroute: a gateway observer threw", e);
    }
  }

  /** The client's response, watching the upstream body's chunks as they pass for the first output token. */
  private final class WatchedResponse extends ServerHttpResponseDecorator {
    volatile @Nullable Routing routing;
    private volatile @Nullable FirstTokenWatch watch;

    WatchedResponse(ServerHttpResponse delegate) {
      super(delegate);
    }

    /** Whether the upstream's event stream carried an error event. */
    boolean streamFailed() {
      FirstTokenWatch w = watch;
      return w != null && w.failed();
    }

    @Override
    public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
      return super.writeWith(Flux.from(body).doOnNext(this::onChunk));
    }

    @Override
    public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> body) {
      return super.writeAndFlushWith(Flux.from(body).map(chunk -> Flux.from(chunk).doOnNext(this::onChunk)));
    }

    private void onChunk(DataBuffer buffer) {
      Routing r = routing;
      if (r == null) {
        return;
      }
      FirstTokenWatch w = watch;
      if (w == null) {
        var status = getStatusCode();
        if (status != null && status.is5xxServerError()) {
          // An error body holds no token; firstToken() would report the worker alive and undo the failure
          // reported when the response completes, so that a worker answering only 5xx was never ejected.
          routing = null;
          return;
        }
        MediaType type = getHeaders().getContentType();
        w = new FirstTokenWatch(type != null && MediaType.TEXT_EVENT_STREAM.isCompatibleWith(type));
        watch = w;
      }
      if (w.onChunk(buffer)) {
        r.firstToken();
      }
    }
  }
}
