/**
 * Runnable examples of kvroute. {@link io.kvroute.examples.ArticleExperiment} replays the measured article's
 * round-robin versus KV-aware experiment through the simulator for every built-in policy.
 */
@NullMarked
package io.kvroute.examples;

import org.jspecify.annotations.NullMarked;
