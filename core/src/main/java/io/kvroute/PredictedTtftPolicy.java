package io.kvroute;

import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;

/**
 * {@link RouterPolicy#predictedTtft}: the worker with the lowest predicted time to first token plus the price of the
 * warm cache its placement would evict, among workers within a bounded load; thread-safe (selection and the
 * outcome callbacks synchronize on the policy; the router calls {@link #select} one at a time anyway).
 *
 * <p>Per candidate {@code i}, in nanoseconds:
 * <pre>{@code
 * ttft_i  = a_i + b_i x (queued prefill tokens_i + this request's uncached tokens at i) + memoryWait_i
 * price_i = evictionPrice x b_i x blockSize x duplicatedBlocks_i x fullness_i
 * }</pre>
 * where {@code a_i, b_i} are fitted online to the worker's observed first-token times (least squares over an
 * exponential window, shrunk towards the fleet's fit while the worker has few observations), {@code memoryWait_i}
 * is the time until enough running requests finish to free the blocks this request would lack once the worker's
 * active requests pin more than its cache holds (its cache size learned as the largest cached tree seen before an
 * eviction), {@code duplicatedBlocks_i} are prompt blocks another candidate holds but {@code i} does not, and
 * {@code fullness_i} the share of the request's new blocks that must evict cached ones there. Two rules bound what
 * the price may buy: a worker whose predicted TTFT exceeds the lowest by more than this request's own prefill there
 * is passed over (no request waits for a cache longer than using it saves, which keeps the tail near the
 * latency-greedy choice's), and so is one whose queued prefill time exceeds {@code (1 + loadSlack)} times the mean
 * plus one cold prefill (bounded loads, in time). Among the rest the cost decides, cache included, so an imbalance
 * never falls back to load alone; a hot prefix gets a second holder as soon as its holder's queue makes recomputing
 * it elsewhere, eviction included, the cheaper choice. Costs closer than one engine step (the smallest fitted {@code a}) tie, and ties go to the worker
 * that took the fewest new prefixes lately, then by rendezvous hash of the prefix.
 */
final class PredictedTtftPolicy implements RouterPolicy, RouterListener {
  private static final double PLACEMENT_DECAY = 0.98;
  /** Pseudo-observations of the fleet's fit a worker's own fit is blended with. */
  private static final double PRIOR_WEIGHT = 8;

  private final PredictedTtftConfig config;
  private final double keep;
  private final Map<WorkerId, Model> models = new HashMap<>();
  private final PlacementCounts placements = new PlacementCounts(PLACEMENT_DECAY);
  private final Model fleet = new Model();

  PredictedTtftPolicy(PredictedTtftConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    this.keep = 1 - 1.0 / config.learningWindow();
  }

  /** What the policy has learned about one worker; guarded by the policy. */
  static final class Model {
    double n;
    double sx;
    double sy;
    double sxx;
    double sxy;
    double serviceNanos = Double.NaN;
    long maxCached;
    boolean filled;
    long lastSeen;

    void observe(double x, double y, double keep) {
      n = n * keep + 1;
      sx = sx * keep + x;
      sy = sy * keep + y;
      sxx = sxx * keep + x * x;
      sxy = sxy * keep + x * y;
    }

    /** Nanoseconds per prompt token, blended with {@code prior} by weight; {@code prior} if nothing is known. */
    double slope(double prior) {
      double own = ownSlope();
      if (Double.isNaN(own)) {
        return prior;
      }
      return Double.isNaN(prior) ? own : (n * own + PRIOR_WEIGHT * prior) / (n + PRIOR_WEIGHT);
    }

    double ownSlope() {
      if (n < 2) {
        return Double.NaN;
      }
      double mx = sx / n;
      double var = sxx / n - mx * mx;
      if (!(var > 1e-9 * (mx * mx + 1))) {
        return mx > 0 ? sy / sx : Double.NaN; // one load level seen: the time per token through the origin
      }
      double b = (sxy / n - mx * (sy / n)) / var;
      return b > 0 ? b : (sx > 0 ? sy / sx : Double.NaN);
    }

    /** Fixed nanoseconds of a first token (one engine step and what the tokens do not explain), at least 0. */
    double intercept(double slope, double prior) {
      double own = n < 2 ? Double.NaN : Math.max(0, (sy - slope * sx) / n);
      if (Double.isNaN(own)) {
        return Double.isNaN(prior) ? 0 : prior;
      }
      return Double.isNaN(prior) ? own : (n * own + PRIOR_WEIGHT * prior) / (n + PRIOR_WEIGHT);
    }
  }

  @Override
  public synchronized int select(Candidates c) {
    int n = c.size();
    long sweep = ++selections;
    int blockSize = c.blockSize();
    int maxHitBlocks = c.requestTokens() > 0 ? (c.requestTokens() - 1) / blockSize : 0;
    double bestHit = 0;
    for (int i = 0; i < n; i++) {
      bestHit = Math.max(bestHit, hit(c, i, maxHitBlocks));
    }
    // The fleet's fit, the prior of every worker's own.
    double fleetSlope = fleet.slope(Double.NaN);
    if (Double.isNaN(fleetSlope)) {
      fleetSlope = 1; // nothing observed yet: costs in token units, which compare the same way
    }
    double fleetIntercept = fleet.intercept(fleetSlope, Double.NaN);
    double minIntercept = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      Model m = model(c.worker(i).id(), sweep);
      long cached = c.cachedBlocks(i);
      if (cached < m.maxCached) {
        m.filled = true; // the tree shrank: the engine evicted, so its largest tree is its capacity
      }
      m.maxCached = Math.max(m.maxCached, cached);
      minIntercept = Math.min(minIntercept, m.intercept(m.slope(fleetSlope), fleetIntercept));
    }
    double tolerance = Double.isFinite(minIntercept) ? minIntercept : 0;
    if (costs.length < n) {
      costs = new double[Math.max(n, costs.length * 2)];
      ttfts = new double[costs.length];
      owns = new double[costs.length];
    }
    double minTtft = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      Model m = models.get(c.worker(i).id());
      cost(c, i, m, m.slope(fleetSlope), fleetIntercept, maxHitBlocks, bestHit);
      minTtft = Math.min(minTtft, ttfts[i]);
    }
    double totalWork = 0;
    for (int i = 0; i < n; i++) {
      totalWork += ttfts[i] - owns[i];
    }
    double meanWork = totalWork / n;
    int best = -1;
    double bestCost = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      Model m = models.get(c.worker(i).id());
      double slope = m.slope(fleetSlope);
      double coldOwn = m.intercept(slope, fleetIntercept) + slope * c.requestTokens();
      // A request never waits for a cache longer than its own prefill there takes (so its TTFT stays within its own
      // prefill time of the latency-greedy choice's), and a worker whose queued work exceeds the bound (in time, by
      // its learned speed) is passed over.
      boolean eligible = ttfts[i] <= minTtft + owns[i]
          && ttfts[i] - owns[i] <= (1 + config.loadSlack()) * meanWork + coldOwn;
      c.recordCost(i, eligible ? costs[i] : Double.POSITIVE_INFINITY);
      if (eligible && costs[i] < bestCost) {
        bestCost = costs[i];
        best = i;
      }
    }
    boolean anyEligible = best >= 0;
    if (best < 0) {
      for (int i = 0; i < n; i++) {
        c.recordCost(i, costs[i]);
        if (costs[i] < bestCost) {
          bestCost = costs[i];
          best = i;
        }
      }
    }
    // Ties (within one engine step) go to the worker that took the fewest new prefixes, then by rendezvous hash.
    int blocks = c.requestBlocks();
    long key = blocks == 0 ? 0 : c.sequenceHash(Math.min(8, blocks) - 1);
    int choice = best;
    double choicePlaced = placements.get(c.worker(best).id());
    long choiceScore = rendezvous(key, c.worker(best).id());
    for (int i = 0; i < n; i++) {
      if (i == best || !(costs[i] <= bestCost + tolerance)
          || (anyEligible && c.cost(i) == Double.POSITIVE_INFINITY)) {
        continue;
      }
      double placed = placements.get(c.worker(i).id());
      long score = rendezvous(key, c.worker(i).id());
      if (placed < choicePlaced - 1e-9
          || (Math.abs(placed - choicePlaced) <= 1e-9 && Long.compareUnsigned(score, choiceScore) > 0)) {
        choice = i;
        choicePlaced = placed;
        choiceScore = score;
      }
    }
    if (blocks > 0 && 2 * hit(c, choice, maxHitBlocks) < blocks) {
      placements.forgetAllBut(c);
      placements.record(c.worker(choice).id());
    }
    if (models.size() > 2 * n + 8) {
      forgetDeparted(sweep);
    }
    return choice;
  }

  private double[] costs = new double[8];
  private double[] ttfts = new double[8];
  private double[] owns = new double[8];
  private long selections;

  private double cost(Candidates c, int i, Model m, double slope, double fleetIntercept, int maxHitBlocks,
      double bestHit) {
    int blockSize = c.blockSize();
    double hit = hit(c, i, maxHitBlocks);
    double uncached = Math.max(0, c.requestTokens() - hit * blockSize);
    double own = m.intercept(slope, fleetIntercept) + slope * uncached;
    double ttft = own + slope * c.prefillTokens(i);
    int active = c.activeRequests(i);
    if (m.filled && !Double.isNaN(m.serviceNanos)) {
      // KV memory: blocks its active requests and this one would pin beyond the cache wait for running requests to
      // finish; they finish at about active / service time per nanosecond.
      double over = c.decodeBlocks(i) - m.maxCached;
      if (over > 0) {
        double perRequest = (double) c.decodeBlocks(i) / (active + 1);
        ttft += over / perRequest * m.serviceNanos / Math.max(1, active);
      }
    }
    double price = 0;
    double duplicated = bestHit - hit;
    if (duplicated > 0 && m.filled) {
      double newBlocks = c.requestBlocks() - hit;
      double fullness = Math.min(1, Math.max(0, (c.cachedBlocks(i) + newBlocks - m.maxCached) / newBlocks));
      price = config.evictionPrice() * slope * blockSize * duplicated * fullness;
    }
    ttfts[i] = ttft;
    owns[i] = own;
    costs[i] = ttft + price;
    return costs[i];
  }

  /** Blocks candidate {@code i} can serve from cache: held or being computed there, at most all but the last token. */
  private double hit(Candidates c, int i, int maxHitBlocks) {
    int gpu = Math.max(c.gpuOverlapBlocks(i), c.activeOverlapBlocks(i));
    int any = Math.max(c.overlapBlocks(i), gpu);
    return Math.min(maxHitBlocks, gpu + config.hostOverlapCredit() * (any - gpu));
  }

  private Model model(WorkerId id, long sweep) {
    Model m = models.get(id);
    if (m == null) {
      m = new Model();
      models.put(id, m);
    }
    m.lastSeen = sweep;
    return m;
  }

  /** Forgets workers not seen as candidates for as many selections as there are workers tracked. */
  private void forgetDeparted(long sweep) {
    long horizon = models.size();
    for (Iterator<Model> it = models.values().iterator(); it.hasNext(); ) {
      if (sweep - it.next().lastSeen > horizon) {
        it.remove();
      }
    }
  }

  private static long rendezvous(long key, WorkerId worker) {
    long h = key ^ worker.hashCode() * 0x9E3779B97F4A7C15L;
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    return h ^ (h >>> 33);
  }

  @Override
  public synchronized void onFirstToken(Routing routing, long elapsedNanos) {
    Model m = models.get(routing.workerId());
    if (m == null || elapsedNanos < 0) {
      return;
    }
    double x = routing.queuedPrefillTokens + routing.bookedPrefillTokens;
    m.observe(x, elapsedNanos, keep);
    fleet.observe(x, elapsedNanos, 1 - 1.0 / (config.learningWindow() * 8.0));
  }

  @Override
  public synchronized void onClosed(Routing routing, long elapsedNanos) {
    Model m = models.get(routing.workerId());
    if (m == null || elapsedNanos < 0) {
      return;
    }
    m.serviceNanos = Double.isNaN(m.serviceNanos) ? elapsedNanos
        : m.serviceNanos + (elapsedNanos - m.serviceNanos) / config.learningWindow();
  }

  /** Workers the policy keeps a model of, for tests. */
  synchronized int trackedWorkers() {
    return models.size();
  }

  /** The learned nanoseconds per prompt token of a worker, NaN if unknown; for tests. */
  synchronized double learnedSlope(WorkerId worker) {
    Model m = models.get(worker);
    return m == null ? Double.NaN : m.ownSlope();
  }

  @Override
  public String name() {
    return "predictedTtft";
  }
}
