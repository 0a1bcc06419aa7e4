/**
 * kvroute over HTTP with OkHttp: forward requests to the routed worker, feed the router the engines' own load, and
 * tokenize text prompts on the engines.
 *
 * <ul>
 *   <li>{@link io.kvroute.transport.okhttp.RoutingForwarder}: routes an OpenAI-compatible request, POSTs it to the
 *       chosen worker, and ties the {@link io.kvroute.Routing} handle to the response (first token, completion,
 *       failure, cancellation) and to the router's health model; per-attempt connect, first-byte, idle and
 *       response budgets; retries on the next-best worker only when connecting fails; typed failures
 *       ({@link io.kvroute.transport.okhttp.UpstreamException}: 502, 504).
 *   <li>{@link io.kvroute.transport.okhttp.EngineMetricsScraper}: scrapes vLLM's {@code /metrics} on a fixed delay
 *       into {@link io.kvroute.Router#updateLoad}, with per-worker timeouts, a response size bound and counted
 *       failures; keeps each worker's prefix cache counters.
 *   <li>{@link io.kvroute.transport.okhttp.OkHttpTokenizer}: vLLM's {@code POST /tokenize} for completion prompts,
 *       chat conversations and whole request bodies.
 * </ul>
 *
 * <p>Threads: the scraper's scheduled thread only starts calls; responses are read, and
 * {@link io.kvroute.transport.okhttp.ScrapeListener} called, on OkHttp's dispatcher threads. The forwarder and the
 * tokenizer run on the caller's thread; a forwarded body calls {@link io.kvroute.Routing#firstToken()} and
 * {@link io.kvroute.Routing#close()} on the thread that reads or closes it.
 */
@NullMarked
package io.kvroute.transport.okhttp;

import org.jspecify.annotations.NullMarked;
