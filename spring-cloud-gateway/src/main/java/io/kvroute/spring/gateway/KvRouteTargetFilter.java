package io.kvroute.spring.gateway;

import java.net.URI;
import java.util.Locale;
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
      URI target;
      try {
        target = retarget(base, url != null ? url : exchange.getRequest().getURI());
      } catch (RoutingFailure refused) {
        return Mono.error(refused); // answered by the KvRoute filter, which releases the routing
      }
      exchange.getAttributes().put(ServerWebExchangeUtils.GATEWAY_REQUEST_URL_ATTR, target);
    }
    return chain.filter(exchange);
  }

  /**
   * {@code url}'s path and query on {@code base}'s scheme, authority and base path.
   *
   * @throws RoutingFailure (400) if the path holds a dot segment ({@code ..}, also percent-encoded), a backslash or
   *     an encoded {@code /} or {@code \}: the worker's server would resolve it out of the worker's base path, to
   *     whatever else the host serves, as kvroute-transport-okhttp's forwarder refuses too
   */
  static URI retarget(URI base, URI url) {
    String basePath = base.getRawPath() == null ? "" : base.getRawPath();
    if (basePath.endsWith("/")) {
      basePath = basePath.substring(0, basePath.length() - 1);
    }
    String path = url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath();
    checkPath(path);
    StringBuilder sb = new StringBuilder(64).append(base.getScheme()).append("://").append(base.getRawAuthority())
        .append(basePath).append(path);
    if (url.getRawQuery() != null) {
      sb.append('?').append(url.getRawQuery());
    }
    return URI.create(sb.toString());
  }

  private static void checkPath(String path) {
    String lower = path.toLowerCase(Locale.ROOT);
    String why = null;
    if (lower.indexOf('\\') >= 0 || lower.contains("%5c") || lower.contains("%2f")) {
      why = "holds a backslash or an encoded '/' or '\\'";
    } else {
      for (String segment : lower.split("/", -1)) {
        String decoded = segment.replace("%2e", ".");
        if (decoded.equals(".") || decoded.equals("..")) {
          why = "holds a dot segment ('" + segment + "'), which would leave the worker's base path";
          break;
        }
      }
    }
    if (why != null) {
      throw new RoutingFailure(400, "invalid_request_path", "the request path " + path + " is refused: it " + why);
    }
  }

  @Override
  public int getOrder() {
    return ORDER;
  }
}
