/**
 * kvroute's KV cache events from vLLM and SGLang over ZeroMQ: the subscriber that feeds a router's index, the codec,
 * and a vLLM-compatible publisher.
 *
 * <p>{@code zero.allocation.hashing} (batch fingerprints) is a name derived from that jar's file name, as in core.
 */
@SuppressWarnings("requires-automatic") // automatic modules: see the README, "Java modules"
module io.kvroute.events.zmq {
  requires transitive io.kvroute;
  requires transitive org.zeromq.jeromq;
  requires zero.allocation.hashing;
  requires static org.jspecify;

  exports io.kvroute.events.zmq;
}
