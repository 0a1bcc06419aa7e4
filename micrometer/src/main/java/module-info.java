/** kvroute's figures as Micrometer meters: routing, index, event sources, scraping and forwarding. */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // automatic modules: see the README, "Java modules"
module io.kvroute.micrometer {
  requires transitive io.kvroute;
  requires transitive io.kvroute.events.zmq;
  requires transitive io.kvroute.transport.okhttp;
  requires transitive micrometer.core;
  requires static org.jspecify;

  exports io.kvroute.micrometer;
}
