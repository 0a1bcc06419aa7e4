/**
 * Runnable examples of kvroute: {@link io.kvroute.examples.ArticleExperiment} replays the measured article's
 * round-robin versus KV-aware experiment (or a Mooncake trace) through the in-process simulator for every built-in
 * policy; {@link io.kvroute.examples.NetworkedGateway} runs the full networked path (HTTP and ZeroMQ) against
 * simulated servers; {@link io.kvroute.examples.RunSimulators} starts simulated servers for your own gateway.
 */
@NullMarked
package io.kvroute.examples;

import org.jspecify.annotations.NullMarked;
