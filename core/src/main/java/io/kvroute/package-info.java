/**
 * kvroute's core: routes LLM inference requests to the engine worker that already holds the longest part of the
 * prompt in its KV cache.
 *
 * <p>Start at {@link io.kvroute.Router}. Event sources (such as {@code kvroute-events-zmq}) feed
 * {@link io.kvroute.Router#eventSink()}; {@link io.kvroute.KvIndexer} keeps what each worker caches;
 * {@link io.kvroute.RouterPolicy} chooses among {@link io.kvroute.Candidates}.
 */
@NullMarked
package io.kvroute;

import org.jspecify.annotations.NullMarked;
