package io.kvroute.spring.gateway;

import io.kvroute.Routing;
import io.kvroute.WorkerId;

/**
 * What the filter observes about each request, for metrics; implementations must be thread-safe, fast and must not
 * throw (the filter guards every call anyway). All methods default to doing nothing.
 */
interface GatewayObserver {
  GatewayObserver NONE = new GatewayObserver() {};

  /** A worker was chosen, {@code routingNanos} after the request arrived (body read, tokenized, selected). */
  default void onRouted(Routing routing, long routingNanos) {}

  /** The worker refused the connection and the request went on to another one. */
  default void onFailover(WorkerId failed) {}

  /** The request was answered with an error by the filter itself. */
  default void onRejected(int status, String code) {}
}
