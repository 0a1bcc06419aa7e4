/**
 * kvroute's core: block hashing, the KV index, the worker registry, the routing policies and the {@link io.kvroute.Router}
 * facade. The one package {@code io.kvroute} is the API; everything else in it is package-private, but for the
 * argument checks in {@code io.kvroute.internal}, exported only to kvroute's modules.
 *
 * <p>{@code zero.allocation.hashing} is the name the JDK derives from that jar's file name (it has no
 * {@code Automatic-Module-Name}), as are {@code jinjava} (tokenizers) and {@code spring.cloud.gateway.server.webflux}
 * (spring-cloud-gateway); fastutil declares its name. Both kinds are automatic modules, so javac's
 * {@code requires-automatic} lint is suppressed here, as Caffeine does for Guava.
 */
// requires-automatic: see the README, "Java modules"; module: the qualified export names modules built later
@SuppressWarnings({"requires-automatic", "module"})
module io.kvroute {
  requires it.unimi.dsi.fastutil.core;
  requires zero.allocation.hashing;
  requires static org.jspecify;
  // sun.misc.Unsafe, for the hashing loop's 8-byte reads of token arrays (IntWords; optional, with a portable path).
  requires jdk.unsupported;

  exports io.kvroute;
  exports io.kvroute.internal to
      io.kvroute.events.zmq,
      io.kvroute.transport.okhttp,
      io.kvroute.sync.nats,
      io.kvroute.sim,
      io.kvroute.tokenizers,
      io.kvroute.testkit;
}
