/** kvroute's load sharing between router replicas over NATS ({@link io.kvroute.sync.nats.NatsLoadSync}). */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // automatic modules: see the README, "Java modules"
module io.kvroute.sync.nats {
  requires transitive io.kvroute;
  requires transitive io.nats.jnats;
  requires it.unimi.dsi.fastutil.core;
  requires static org.jspecify;

  exports io.kvroute.sync.nats;
}
