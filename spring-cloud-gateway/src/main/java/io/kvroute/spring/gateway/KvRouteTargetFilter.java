package io.kvroute.spring.gateway;

import java.net.URI;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.RouteToRequestUrlFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Points a kvroute-routed request at its chosen worker; stateless, thread-safe.
 *
 * <p>Spring Cloud Gateway computes the upstream URL from the route's {@code uri} in {@link RouteToRequestUrlFilter}
 * (order 10000), after the {@code KvRoute} filter has chosen the worker. This global filter runs right after it and
 * replaces the URL's scheme, host and port with the worker's (prefixing the worker's base path, if any), keeping the
 * path and query the route's filters produced. Exchanges the {@code KvRoute} filter did not route pass unchanged.
 */
public final class KvRouteTargetFilter implements GlobalFilter, Ordered {
  /** Right after {@link RouteToRequestUrlFilter}, before the load-balancer and routing filters. */
  public static final int ORDER = RouteToRequestUrlFilter.ROUTE_TO_URL_FILTER_ORDER + 1;

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
    URI base = exchange.getAttribute(KvRouteFilter.TARGET_ATTR);
    if (base != null) {
      URI url = exchange.getAttribute(ServerWebExchangeUtils.GATEWAY_REQUEST_URL_ATTR);
      exchange.getAttributes().put(ServerWebExchangeUtils.GATEWAY_REQUEST_URL_ATTR,
          retarget(base, url != null ? url : exchange.getRequest().getURI()));
    }
    return chain.filter(exchange);
  }

  /** {@code url}'s path and query on {@code base}'s scheme, authority and base path. */
  static URI retarget(URI base, URI url) {
    String basePath = base.getRawPath() == null ? "" : base.getRawPath();
    if (basePath.endsWith("/")) {
      basePath = basePath.substring(0, basePath.length() - 1);
    }
    String path = url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath();
    StringBuilder sb = new StringBuilder(64).append(base.getScheme()).append("://").append(base.getRawAuthority())
        .append(basePath).append(path);
    if (url.getRawQuery() != null) {
      sb.append('?').append(url.getRawQuery());
    }
    return URI.create(sb.toString());
  }

  @Override
  public int getOrder() {
    return ORDER;
  }
}
