/**
 * KV-cache-aware routing for Spring Cloud Gateway (server-webflux): {@link
 * io.kvroute.spring.gateway.KvRouteAutoConfiguration} builds kvroute from {@code kvroute.*} properties, and the
 * {@code KvRoute} filter ({@link io.kvroute.spring.gateway.KvRouteGatewayFilterFactory}) routes a route's
 * OpenAI-compatible requests to the worker that holds their prompt prefix.
 */
@NullMarked
package io.kvroute.spring.gateway;

import org.jspecify.annotations.NullMarked;
