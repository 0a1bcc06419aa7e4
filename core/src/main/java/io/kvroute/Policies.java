package io.kvroute;

import io.kvroute.internal.Checks;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/** The built-in {@link RouterPolicy} implementations; each is thread-safe. */
final class Policies {
  private Policies() {}

  /**
   * The rendezvous (highest random weight) score of {@code worker} for {@code key}: the worker hash spread by the
   * golden ratio, then MurmurHash3's 64-bit finalizer. The worker with the highest unsigned score is the key's
   * home, and removing a worker moves only the keys it was home to. {@code cacheAffinity} and {@code predictedTtft}
   * both place new prefixes with it.
   */
  static long rendezvous(long key, WorkerId worker) {
    long h = key ^ worker.hashCode() * 0x9E3779B97F4A7C15L;
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    return h ^ (h >>> 33);
  }

  static final class RoundRobin implements RouterPolicy {
    private final AtomicLong next = new AtomicLong();

    @Override
    public int select(Candidates c) {
      return (int) Long.remainderUnsigned(next.getAndIncrement(), c.size());
    }

    @Override
    public String name() {
      return "roundRobin";
    }
  }

  static final class Uniform implements RouterPolicy {
    @Override
    public int select(Candidates c) {
      return c.random().nextInt(c.size());
    }

    @Override
    public String name() {
      return "random";
    }
  }

  static final class LeastLoaded implements RouterPolicy {
    @Override
    public int select(Candidates c) {
      int best = -1;
      int ties = 0;
      for (int i = 0; i < c.size(); i++) {
        c.recordCost(i, c.activeRequests(i));
        int cmp = best < 0 ? -1 : compare(c, i, best);
        if (cmp < 0) {
          best = i;
          ties = 1;
        } else if (cmp == 0 && c.random().nextInt(++ties) == 0) {
          best = i; // reservoir sampling among ties
        }
      }
      return best;
    }

    private static int compare(Candidates c, int a, int b) {
      int byActive = Integer.compare(c.activeRequests(a), c.activeRequests(b));
      if (byActive != 0) {
        return byActive;
      }
      // The engines' own queues break ties when both reported them (requests from other routers show up there).
      EngineLoad la = c.engineLoad(a);
      EngineLoad lb = c.engineLoad(b);
      if (la != null && lb != null) {
        // In long: two counts near Integer.MAX_VALUE must not wrap into a negative queue.
        int byEngine = Long.compare((long) la.running() + la.waiting(), (long) lb.running() + lb.waiting());
        if (byEngine != 0) {
          return byEngine;
        }
      }
      return Long.compare(c.prefillTokens(a), c.prefillTokens(b));
    }

    @Override
    public String name() {
      return "leastLoaded";
    }
  }

  static class KvAware implements RouterPolicy {
    final KvAwareConfig config;
    private final String name;

    KvAware(KvAwareConfig config, String name) {
      this.config = Objects.requireNonNull(config, "config");
      this.name = name;
    }

    @Override
    public int select(Candidates c) {
      RouteRequest request = c.request();
      double weight = Double.isNaN(request.overlapWeight()) ? config.overlapWeight() : request.overlapWeight();
      double temperature = Double.isNaN(request.temperature()) ? config.temperature() : request.temperature();
      double min = Double.POSITIVE_INFINITY;
      double max = Double.NEGATIVE_INFINITY;
      for (int i = 0; i < c.size(); i++) {
        double cost = cost(c, i, weight);
        c.recordCost(i, cost);
        min = Math.min(min, cost);
        max = Math.max(max, cost);
      }
      if (temperature > 0) {
        return softmax(c, min, max, temperature);
      }
      double unseen = c.unseenPeerSelections();
      if (unseen > 0 && c.size() > 1) {
        return burstPosition(c, min, weight, unseen);
      }
      return lowestCost(c, min);
    }

    /**
     * With peers' selections expected in the delivery window that this view cannot show ({@code unseen}), where one
     * router would have put this request within the burst they make with it ({@link Bursts}): position 0 is the
     * lowest cost; each earlier request adds its uncached prefill and its blocks to the worker it would have gone to.
     */
    int burstPosition(Candidates c, double min, double weight, double unseen) {
      int position = Bursts.position(c, unseen);
      if (position == 0) {
        return lowestCost(c, min);
      }
      int n = c.size();
      double[] head = c.burstHead();
      double[] step = c.burstStep();
      for (int i = 0; i < n; i++) {
        head[i] = c.cost(i);
        step[i] = weight * (uncachedTokens(c, i) / c.blockSize()) + c.requestBlocks();
      }
      return Bursts.place(c, position);
    }

    double cost(Candidates c, int i, double weight) {
      double prefillBlocks = (c.prefillTokens(i) + uncachedTokens(c, i)) / c.blockSize();
      return weight * prefillBlocks + c.decodeBlocks(i);
    }

    /** The request's tokens candidate {@code i} must compute, host-cached blocks credited at the configured share. */
    private double uncachedTokens(Candidates c, int i) {
      double overlap = c.gpuOverlapBlocks(i) + config.hostOverlapCredit() * (c.overlapBlocks(i)
          - c.gpuOverlapBlocks(i));
      return Math.max(0, c.requestTokens() - overlap * c.blockSize());
    }

    /**
     * Lowest cost; ties to the smallest cached tree, then uniformly at random: the tied candidates are counted, then
     * one random draw picks among them (a draw per tie, as reservoir sampling makes, cost 63 bounded draws when 64
     * empty workers tie on a miss).
     */
    static int lowestCost(Candidates c, double min) {
      int best = -1;
      int ties = 0;
      for (int i = 0; i < c.size(); i++) {
        if (c.cost(i) != min) {
          continue;
        }
        if (best < 0 || c.cachedBlocks(i) < c.cachedBlocks(best)) {
          best = i;
          ties = 1;
        } else if (c.cachedBlocks(i) == c.cachedBlocks(best)) {
          ties++;
        }
      }
      if (ties <= 1) {
        return best;
      }
      int skip = c.random().nextInt(ties);
      long cached = c.cachedBlocks(best);
      for (int i = best; i < c.size(); i++) {
        if (c.cost(i) == min && c.cachedBlocks(i) == cached && skip-- == 0) {
          return i;
        }
      }
      throw new AssertionError("tie " + skip + " of " + ties + " not found");
    }

    private static int softmax(Candidates c, double min, double max, double temperature) {
      if (max == min) {
        return c.random().nextInt(c.size());
      }
      double range = max - min;
      // exp(-(cost - min) / range / T): the largest term is 1, so nothing overflows.
      double total = 0;
      for (int i = 0; i < c.size(); i++) {
        total += Math.exp(-(c.cost(i) - min) / range / temperature);
      }
      double draw = c.random().nextDouble() * total;
      for (int i = 0; i < c.size(); i++) {
        draw -= Math.exp(-(c.cost(i) - min) / range / temperature);
        if (draw <= 0) {
          return i;
        }
      }
      return c.size() - 1;
    }

    @Override
    public String name() {
      return name;
    }
  }

  static final class Approximate extends KvAware {
    final long ttlNanos;
    final int maxEntries;

    Approximate(KvAwareConfig config, Duration ttl, int maxEntries) {
      super(config, "approximate");
      this.ttlNanos = Checks.positive("ttl", ttl).toNanos();
      this.maxEntries = Checks.positive("maxEntries", maxEntries);
    }
  }

  static final class CacheAffinity implements RouterPolicy, PeerLearning {
    private static final double PLACEMENT_DECAY = 0.98;
    private static final long FRESH_LOAD_NANOS = 2_000_000_000L; // engine reports older than this are ignored
    private final CacheAffinityConfig config;
    // Decayed count of new prefixes placed on each worker; guarded by `this` (the router also serializes calls).
    private final PlacementCounts placements = new PlacementCounts(PLACEMENT_DECAY);

    CacheAffinity(CacheAffinityConfig config) {
      this.config = Objects.requireNonNull(config, "config");
    }

    @Override
    public synchronized int select(Candidates c) {
      int n = c.size();
      long totalActive = 0;
      for (int i = 0; i < n; i++) {
        totalActive += c.activeRequests(i);
      }
      // 1. The worker holding (or computing) most of the prompt, if it holds enough and is not overloaded.
      int best = -1;
      int bestOverlap = 0;
      for (int i = 0; i < n; i++) {
        int overlap = overlap(c, i);
        c.recordCost(i, -overlap);
        if (!overloaded(c, i, totalActive)
            && (best < 0 || overlap > bestOverlap
                || (overlap == bestOverlap && c.activeRequests(i) < c.activeRequests(best)))) {
          best = i;
          bestOverlap = overlap;
        }
      }
      int blocks = c.requestBlocks();
      if (best >= 0 && blocks > 0 && bestOverlap > 0 && bestOverlap >= config.minOverlapFraction() * blocks) {
        return best;
      }
      if (blocks == 0) {
        return best >= 0 ? best : leastActive(c);
      }
      // 2. A prefix nobody holds: the worker with the fewest recent placements of new prefixes, so that prefixes
      // spread evenly over the caches; ties by rendezvous hashing of the prefix, skipping overloaded workers.
      long key = c.sequenceHash(Math.min(config.homeBlocks(), blocks) - 1);
      int home = -1;
      double homePlaced = 0;
      long homeScore = 0;
      for (int i = 0; i < n; i++) {
        if (overloaded(c, i, totalActive)) {
          continue;
        }
        double placed = placements.get(c.worker(i).id());
        long score = rendezvous(key, c.worker(i).id());
        if (home < 0 || placed < homePlaced - 1e-9
            || (Math.abs(placed - homePlaced) <= 1e-9 && Long.compareUnsigned(score, homeScore) > 0)) {
          home = i;
          homePlaced = placed;
          homeScore = score;
        }
      }
      if (home < 0) {
        return leastActive(c);
      }
      placements.forgetAllBut(c);
      recordPlacement(c.worker(home).id());
      c.notePlacement(0, true);
      return home;
    }

    /** A peer replica's placement of a new prefix counts as this router's own (see {@link PeerLearning}). */
    @Override
    public synchronized void peerBooked(WorkerId worker, int blocks, int warmBlocks, long warmKey,
        boolean newPrefix, long nowNanos) {
      if (newPrefix) {
        recordPlacement(worker);
      }
    }

    @Override
    public void peerStepEnded(WorkerId worker, long nowNanos) {}

    @Override
    public void peerFirstToken(WorkerId worker, long queuedPrefillTokens, int activeRequests, long prefillTokens,
        long elapsedNanos) {}

    @Override
    public void peerClosed(WorkerId worker, long elapsedNanos, long nowNanos) {}

    /**
     * Whether candidate {@code i} is overloaded: its engine recently reported waiting requests, its cache could not
     * hold what its active requests pin plus this request, or it carries {@code (1 + loadFactor)} times the others'
     * mean active requests plus one (the plus one lets an idle cluster gather a new prefix's first requests). Comparing with the others rather than the overall mean keeps the bound
     * meaningful when there are few workers.
     */
    private boolean overloaded(Candidates c, int i, long totalActive) {
      int n = c.size();
      if (n == 1) {
        return false;
      }
      EngineLoad engine = c.engineLoad(i);
      if (engine != null && engine.waiting() > 0 && c.nowNanos() - engine.observedAtNanos() < FRESH_LOAD_NANOS) {
        return true; // the engine itself queues requests: its batch or cache is full
      }
      // Its cache could not hold the blocks its active requests pin plus this request's: the request would wait for
      // memory there. Once a worker has filled, its cached tree size stands for its capacity (engines evict beyond).
      if (c.cachedBlocks(i) >= 2L * c.requestBlocks() && c.decodeBlocks(i) > c.cachedBlocks(i)) {
        return true;
      }
      double othersMean = (double) (totalActive - c.activeRequests(i)) / (n - 1);
      return c.activeRequests(i) >= (1 + config.loadFactor()) * (othersMean + 1);
    }

    private static int overlap(Candidates c, int i) {
      return Math.max(c.overlapBlocks(i), c.activeOverlapBlocks(i));
    }

    private void recordPlacement(WorkerId worker) {
      placements.record(worker);
    }

    /** Workers whose placements are remembered, for tests. */
    synchronized int trackedWorkers() {
      return placements.size();
    }

    private static int leastActive(Candidates c) {
      int best = 0;
      for (int i = 1; i < c.size(); i++) {
        if (c.activeRequests(i) < c.activeRequests(best)) {
          best = i;
        }
      }
      return best;
    }

    @Override
    public String name() {
      return "cacheAffinity";
    }
  }
}
