/**
 * kvroute's core: block hashing, the KV index, the worker registry, the routing policies and the {@link io.kvroute.Router}
 * facade. The one package {@code io.kvroute} is the API; everything else in it is package-private.
 *
 * <p>{@code zero.allocation.hashing} is the name the JDK derives from that jar's file name (it has no
 * {@code Automatic-Module-Name}), as are {@code jinjava} (tokenizers) and {@code spring.cloud.gateway.server.webflux}
 * (spring-cloud-gateway); fastutil declares its name. Both kinds are automatic modules, so javac's
 * {@code requires-automatic} lint is suppressed here, as Caffeine does for Guava.
 */
@SuppressWarnings("requires-automatic") // automatic modules: see the README, "Java modules"
module io.kvroute {
  requires it.unimi.dsi.fastutil.core;
  requires zero.allocation.hashing;
  requires static org.jspecify;

  exports io.kvroute;
}
