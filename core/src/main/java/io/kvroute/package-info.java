/**
 * kvroute's core: routes LLM inference requests to the engine worker that already holds the longest part of the
 * prompt in its KV cache.
 *
 * <p>Start at {@link io.kvroute.Router}. Event sources (such as {@code kvroute-events-zmq}) feed
 * {@link io.kvroute.Router#eventSink()}; {@link io.kvroute.KvIndexer} keeps what each worker caches;
 * {@link io.kvroute.RouterPolicy} chooses among {@link io.kvroute.Candidates}. Gateways feed outcomes back
 * ({@link io.kvroute.Router#reportSuccess}, {@link io.kvroute.Router#reportFailure}) so that the router routes around
 * unhealthy workers ({@link io.kvroute.HealthState}), and routing failures are {@link io.kvroute.RoutingException}s
 * that carry their HTTP status.
 */
@NullMarked
package io.kvroute;

import org.jspecify.annotations.NullMarked;
