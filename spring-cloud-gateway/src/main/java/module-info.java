/**
 * kvroute for Spring Cloud Gateway (WebFlux): auto-configuration, properties and the routing filter.
 *
 * <p>{@code spring.cloud.gateway.server.webflux} is a name derived from that jar's file name (it declares no
 * {@code Automatic-Module-Name}). The package is opened to Spring, which binds the properties and creates the
 * configuration's beans reflectively.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // automatic modules: see the README, "Java modules"
module io.kvroute.spring.gateway {
  requires transitive io.kvroute;
  requires transitive io.kvroute.events.zmq;
  requires transitive io.kvroute.transport.okhttp;
  requires transitive io.kvroute.micrometer;
  requires io.kvroute.openai;
  requires transitive spring.cloud.gateway.server.webflux;
  requires transitive spring.boot;
  requires transitive spring.boot.autoconfigure;
  requires transitive spring.beans;
  requires transitive spring.context;
  requires transitive spring.core;
  requires transitive spring.web;
  requires transitive reactor.core;
  requires org.reactivestreams;
  requires reactor.netty.http;
  requires io.netty.handler;
  requires tools.jackson.core;
  requires tools.jackson.databind;
  requires static org.jspecify;

  exports io.kvroute.spring.gateway;
  opens io.kvroute.spring.gateway to spring.core, spring.beans, spring.context, spring.boot;
}
