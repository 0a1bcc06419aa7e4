/**
 * kvroute's simulated vLLM worker: a paged prefix cache with continuous batching, KV events over ZeroMQ, the
 * OpenAI-compatible HTTP API and vLLM's metrics, in process or one worker per process ({@link io.kvroute.sim.SimMain}).
 */
module io.kvroute.sim {
  requires transitive io.kvroute;
  requires transitive io.kvroute.events.zmq;
  requires transitive io.kvroute.openai;
  requires jdk.httpserver;
  requires static org.jspecify;

  exports io.kvroute.sim;
}
