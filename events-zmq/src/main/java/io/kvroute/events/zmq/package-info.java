/**
 * Ingests KV cache events from vLLM and SGLang engines over ZeroMQ, with gap recovery through the engines' replay
 * sockets.
 *
 * <ul>
 *   <li>{@link io.kvroute.events.zmq.KvEventSubscriber}: one I/O thread subscribing to many workers (added by hand or
 *       followed in a router's registry), feeding a {@link io.kvroute.KvEventSink} (a {@code KvIndexer} or a
 *       router's event sink) and reporting each stream's {@link io.kvroute.events.zmq.StreamHealth} to the router;
 *   <li>{@link io.kvroute.events.zmq.KvEventCodec}: the msgpack decoder (and encoder), byte-compatible with the
 *       engines' map and legacy array layouts;
 *   <li>{@link io.kvroute.events.zmq.KvEventPublisher}: a vLLM-compatible publisher for simulators and tests.
 * </ul>
 */
@NullMarked
package io.kvroute.events.zmq;

import org.jspecify.annotations.NullMarked;
