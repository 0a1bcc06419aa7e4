package io.kvroute.spring.gateway;

import io.kvroute.Router;
import io.kvroute.transport.okhttp.Tokenizer;
import java.util.Objects;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.factory.AbstractGatewayFilterFactory;
import reactor.core.scheduler.Scheduler;

/**
 * The {@code KvRoute} gateway filter: routes a route's OpenAI-compatible requests to the worker holding the longest
 * prefix of their prompt in its KV cache; thread-safe.
 *
 * <pre>{@code
 * spring:
 *   cloud:
 *     gateway:
 *       server:
 *         webflux:
 *           routes:
 *             - id: llm
 *               uri: no://op           # replaced by the chosen worker
 *               predicates:
 *                 - Path=/v1/completions,/v1/chat/completions
 *               filters:
 *                 - KvRoute
 * }</pre>
 *
 * <p>Per request the filter reads the body once, tokenizes the prompt, selects a worker through the {@link Router},
 * forwards to it, marks the first streamed token and releases the booking when the response ends, fails or the
 * client goes away. Requests it cannot route get an OpenAI-style error: 400 (bad body, empty prompt), 404 (unknown
 * model), 413 (body over {@code kvroute.max-request-body}), 502 (no worker accepted the connection, tokenizer
 * failed) or 503 (no worker available).
 */
public class KvRouteGatewayFilterFactory extends AbstractGatewayFilterFactory<KvRouteGatewayFilterFactory.Config> {
  /**
   * The exchange attribute holding the request's {@link io.kvroute.Routing} (worker, predicted cached tokens) once
   * the filter has chosen the worker, for the application's own filters and logs.
   */
  public static final String ROUTING_ATTRIBUTE = KvRouteFilter.ROUTING_ATTR;

  private final KvRouteFilter filter;

  /** The per-route settings of the filter, none yet (all is under {@code kvroute.*}); not thread-safe (bound once). */
  public static class Config {}

  KvRouteGatewayFilterFactory(Router router, Tokenizer tokenizer, Scheduler tokenizerScheduler,
      KvRouteProperties properties, GatewayObserver observer) {
    super(Config.class);
    Objects.requireNonNull(router, "router");
    Objects.requireNonNull(tokenizer, "tokenizer");
    KvRouteProperties.Headers headers = properties.getHeaders();
    this.filter = new KvRouteFilter(router, tokenizer, tokenizerScheduler,
        (int) properties.getMaxRequestBody().toBytes(), properties.getMaxAttempts(),
        headers.isEnabled() ? headers.getWorker() : null,
        headers.isEnabled() ? headers.getPredictedCachedTokens() : null, observer);
  }

  @Override
  public String name() {
    return "KvRoute";
  }

  /**
   * The filter, ordered just before Spring Cloud Gateway writes the upstream response.
   *
   * @param config the route's settings
   * @return the route filter
   */
  @Override
  public GatewayFilter apply(Config config) {
    return filter;
  }
}
