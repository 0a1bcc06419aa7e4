package io.kvroute;

import java.time.Duration;

/**
 * Chooses a worker for a request among {@link Candidates}; implementations must be thread-safe, though the router
 * calls {@link #select} under its admission lock, one selection at a time, so that each sees the previous one's
 * booking.
 *
 * <p>Built-in policies come from the static factories. A custom policy is one method:
 * <pre>{@code
 * RouterPolicy mostCached = c -> {
 *   int best = 0;
 *   for (int i = 1; i < c.size(); i++) if (c.overlapBlocks(i) > c.overlapBlocks(best)) best = i;
 *   return best;
 * };
 * }</pre>
 */
@FunctionalInterface
public interface RouterPolicy {
  /**
   * Returns the index, in {@code [0, candidates.size())}, of the chosen candidate. {@code candidates} has at least
   * one entry. Must not block or call back into the router.
   *
   * @param candidates the workers that may serve the request, with their overlap and load; valid only during the call
   * @return the chosen candidate's index, from 0 to {@code candidates.size() - 1}
   */
  int select(Candidates candidates);

  /**
   * A short name for logs and reports.
   *
   * @return the name, such as {@code kvAware}; the class's simple name unless overridden
   */
  default String name() {
    return getClass().getSimpleName();
  }

  /**
   * Cycles through the candidates in order, ignoring cache and load.
   *
   * @return a new round-robin policy (each instance keeps its own position)
   */
  static RouterPolicy roundRobin() {
    return new Policies.RoundRobin();
  }

  /**
   * Picks a candidate uniformly at random.
   *
   * @return a new uniformly random policy, drawing from the router's seeded random source
   */
  static RouterPolicy random() {
    return new Policies.Uniform();
  }

  /**
   * Picks the candidate with the fewest active requests booked by this router, then the shortest engine-reported
   * queue (running plus waiting, when reported), then the fewest pending prefill tokens, then at random.
   *
   * @return a new least-loaded policy
   */
  static RouterPolicy leastLoaded() {
    return new Policies.LeastLoaded();
  }

  /**
   * Dynamo's default KV-aware cost with Dynamo's defaults ({@link KvAwareConfig#DEFAULT}).
   *
   * @return the KV-aware policy with overlap weight 1.0 and temperature 0
   */
  static RouterPolicy kvAware() {
    return kvAware(KvAwareConfig.DEFAULT);
  }

  /**
   * Dynamo's KV-aware cost, {@code overlapWeight x prefillBlocks + decodeBlocks}, lowest wins: prefill counts the
   * worker's pending prompt tokens plus this request's uncached tokens, in blocks; decode counts the blocks the
   * worker would hold. Ties go to the worker with the smallest cached tree, then at random. With temperature above
   * zero, a softmax over the normalised costs is sampled instead.
   *
   * @param config the cost's overlap weight, temperature and host-tier credit
   * @return a new KV-aware policy
   */
  static RouterPolicy kvAware(KvAwareConfig config) {
    return new Policies.KvAware(config, "kvAware");
  }

  /**
   * Approximate mode, for engines that publish no KV events: each routing decision records the prompt's blocks
   * for the chosen worker for 120 s (refreshed when routed again), at most 2^20 entries, and requests are scored
   * with the KV-aware cost against those predictions.
   *
   * @return a new approximate-mode policy (it keeps its own predictions; use one instance per router)
   */
  static RouterPolicy approximate() {
    return approximate(KvAwareConfig.DEFAULT, Duration.ofSeconds(120), 1 << 20);
  }

  /**
   * Approximate mode with explicit settings.
   *
   * @param cost the KV-aware cost settings used to score the predictions
   * @param ttl how long a routed prompt is assumed to stay cached
   * @param maxEntries the bound on predicted (worker, block) entries; the least recently routed go first
   * @return a new approximate-mode policy (it keeps its own predictions; use one instance per router)
   * @throws IllegalArgumentException if {@code ttl} is not positive or {@code maxEntries} is not positive
   */
  static RouterPolicy approximate(KvAwareConfig cost, Duration ttl, int maxEntries) {
    return new Policies.Approximate(cost, ttl, maxEntries);
  }

  /**
   * Cache affinity with bounded load, this library's answer to prefix scattering (the article's "evictions
   * cascade"): a request goes to the worker holding, or currently computing, most of its prompt unless that worker
   * is overloaded; a prefix nobody holds goes to the worker that has taken the fewest new prefixes lately (ties by
   * rendezvous hashing of the prefix), so prefixes spread evenly over the caches instead of being copied into
   * several. Only overloaded workers are passed over: those whose engine reported waiting requests in the last two
   * seconds, those whose active requests would pin more blocks than their cache holds (its cached tree size, once
   * filled), and those with {@code (1 + loadFactor)} times the others' mean active requests plus one, as in
   * consistent hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, 2018).
   *
   * @return the cache-affinity policy with {@link CacheAffinityConfig#DEFAULT} (8 home blocks, load factor 2.0)
   */
  static RouterPolicy cacheAffinity() {
    return cacheAffinity(CacheAffinityConfig.DEFAULT);
  }

  /**
   * Cache affinity with explicit settings; see {@link #cacheAffinity()}.
   *
   * @param config the home-block count, load factor and minimum overlap share
   * @return a new cache-affinity policy
   */
  static RouterPolicy cacheAffinity(CacheAffinityConfig config) {
    return new Policies.CacheAffinity(config);
  }

  /**
   * The lowest predicted time to first token, with a price for evicting warm cache: each candidate's cost is its
   * queued prefill plus this request's uncached prefill, at the speed learned from that worker's observed first-token
   * times, plus the wait for KV memory when its active requests would pin more than its cache holds, plus, when the
   * request would duplicate blocks another worker holds into a full cache, the prefill time of what that evicts.
   * A worker is passed over when its predicted TTFT exceeds the lowest by more than this request's own prefill there,
   * or when its queued prefill time exceeds 1.25x the mean plus one cold prefill (bounded load, in time); costs
   * within one engine step tie and go to the worker that took the fewest new prefixes lately. A hot prefix gets a
   * second holder when its holder's queue costs more than recomputing it elsewhere plus the eviction.
   * See {@link PredictedTtftConfig} for the settings and why each has its default.
   *
   * @return the predicted-TTFT policy with {@link PredictedTtftConfig#DEFAULT}
   */
  static RouterPolicy predictedTtft() {
    return predictedTtft(PredictedTtftConfig.DEFAULT);
  }

  /**
   * The predicted-TTFT policy with explicit settings; see {@link #predictedTtft()}.
   *
   * @param config the load slack, eviction price, learning window and host-tier credit
   * @return a new predicted-TTFT policy (it learns each worker's speed; use one instance per router)
   */
  static RouterPolicy predictedTtft(PredictedTtftConfig config) {
    return new PredictedTtftPolicy(config);
  }
}
