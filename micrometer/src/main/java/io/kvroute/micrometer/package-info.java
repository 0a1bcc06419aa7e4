/**
 * Micrometer binders for kvroute: {@link io.kvroute.micrometer.RouterMetrics} (routing decisions, predicted cached
 * tokens, time to first token and request duration, index size and evictions, worker load and health),
 * {@link io.kvroute.micrometer.ForwardMetrics} (relayed responses by worker, status and outcome; forwarding failures),
 * {@link io.kvroute.micrometer.EventSourceMetrics} (KV event batches, gaps, replays, purges, the age of each worker's
 * last batch) and {@link io.kvroute.micrometer.ScrapeMetrics} (engine {@code /metrics} scrapes and the load they
 * reported).
 *
 * <p>Each binder is a listener of the component it measures and a {@link io.micrometer.core.instrument.binder.MeterBinder}:
 * hand it to the component's builder, then {@code bindTo} one or more registries. Meters are named by Micrometer's
 * conventions (dot-separated lowercase words, base units: seconds, tokens, blocks, bytes), so each registry renders
 * them in its own style, for example {@code kvroute_request_time_to_first_token_seconds} in Prometheus. Workers are
 * tagged {@code worker} (the name) and {@code rank} (the data-parallel rank).
 */
@NullMarked
package io.kvroute.micrometer;

import org.jspecify.annotations.NullMarked;
