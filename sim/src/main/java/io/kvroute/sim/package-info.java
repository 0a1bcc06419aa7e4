/**
 * A simulated vLLM engine that behaves like vLLM v1 on the wire and in its cache, so that routers, gateways,
 * tests and benchmarks run without GPUs.
 *
 * <h2>Cache model</h2>
 * A paged KV cache with prefix caching, as vLLM v1's {@code BlockPool}: {@code numBlocks} blocks of
 * {@code blockSize} tokens (default 16). Only full blocks are hashed and cached. A request's leading full prompt
 * blocks found in the cache are hits (at most all but the last token, as in vLLM); hit blocks and the blocks of
 * running requests are pinned. A finished request's blocks go to the tail of an LRU free queue in reverse order,
 * so its own tail is evicted before its prefix. Allocation pops the head of the free queue, evicting whatever
 * hash the block held. A request waits while the cache cannot hold its next chunk; a running request that cannot
 * grow preempts the newest running request (recompute mode). The engine hashes blocks with its own seeded
 * 64-bit hash (random seed per process unless configured), deliberately unlike the router's.
 *
 * <h2>KV events</h2>
 * Per engine step, one batch: one {@code BlockStored} per request that filled blocks in the step (parent = the
 * engine hash of the block before), one {@code BlockRemoved} per evicted block, {@code AllBlocksCleared} after a
 * prefix-cache reset. Blocks are registered when scheduled and the batch is published after the step, as in vLLM.
 *
 * <h2>Timing model</h2>
 * Continuous batching: each step serves running requests first (a decode token, or the next prefill chunk), then
 * admits waiting requests while the per-step token budget ({@code maxNumBatchedTokens}, default 8,192) and
 * {@code maxNumSeqs} allow. A step lasts {@link io.kvroute.sim.TimingModel#stepNanos} of model time: a fixed
 * overhead, plus prefill cost growing with the uncached tokens computed (linear and quadratic terms), plus decode
 * cost growing with the batch size and the KV tokens the decoding sequences read. {@link io.kvroute.sim.SimServer}
 * runs steps in real time divided by a speed-up factor; {@link io.kvroute.sim.Simulation} runs them on a virtual
 * clock.
 *
 * <h2>Entry points</h2>
 * <ul>
 *   <li>{@link io.kvroute.sim.SimServer}: an OpenAI-compatible HTTP server on loopback, with vLLM's metrics and
 *       KV events over ZeroMQ.
 *   <li>{@link io.kvroute.sim.Simulation}: the in-process mode, a deterministic discrete-event simulation of
 *       closed-loop clients, a {@link io.kvroute.Router} and several engines.
 *   <li>{@link io.kvroute.sim.SimTokenizer}: the deterministic tokenizer both sides share.
 *   <li>{@link io.kvroute.sim.SharedPrefixWorkload}: the measured article's workload.
 * </ul>
 */
@NullMarked
package io.kvroute.sim;

import org.jspecify.annotations.NullMarked;
