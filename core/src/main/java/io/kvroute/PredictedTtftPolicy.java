package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * {@link RouterPolicy#predictedTtft}: the worker with the lowest predicted time to first token plus the price of the
 * warm cache its placement would evict, among workers within bounded loads; thread-safe (selection and the outcome
 * callbacks synchronize on the policy; the router calls {@link #select} one at a time anyway).
 *
 * <p>Per candidate {@code i}, in nanoseconds:
 * <pre>{@code
 * ttft_i  = a_i + b_i x (queued prefill tokens_i + this request's uncached tokens at i) + memoryWait_i
 * price_i = evictionPrice x b_i x blockSize x duplicatedBlocks_i x fullness_i
 * }</pre>
 * <ul>
 *   <li>queued prefill tokens: those routed to the worker without a first token yet, less what the prompt at the
 *       head of its queue has computed since it began, at least one engine step's worth (see
 *       {@link #queueLeftNanos}), and all of them where the worker has more booked than its cache holds (queued
 *       prompts then wait for memory, not compute).
 *   <li>{@code a_i, b_i}: fitted online to the worker's observed first-token times by least squares over an
 *       exponential window, shrunk towards the fleet's fit while the worker has few observations. The fit also has a
 *       term per active request (decode steps lengthen every step) so that {@code b} is the prefill speed alone; the
 *       cost leaves that term out, because in overload it mostly measures memory waits, which {@code memoryWait}
 *       and the load bound already count.
 *   <li>{@code memoryWait_i}: once the worker's active requests would pin more blocks than its cache holds, the time
 *       until enough of them finish (they finish at about {@code active / serviceTime}; a block is freed only with
 *       its last holder, from the router's count of active blocks by holder number; at least one whole finish,
 *       see {@link #atLeastOneFinish}). The cache size is the
 *       largest cached tree seen, which is known to be the capacity once the tree shrank (an eviction) or the
 *       engine reported waiting requests with fewer free blocks than a prompt needs (it waits for memory, see
 *       {@code learnFullFromReport}), and is assumed to be until then (see {@code memoryCapacity}); the pinned
 *       blocks are the router's bookings
 *       times a footprint learned from the engine's reported KV usage against the bookings at the report's instant
 *       (outputs and partial blocks are not booked; learned when the report arrives, see {@link #loadReported}),
 *       or, where the worker's decoding requests have grown more output than that average holds, the bookings plus
 *       their decode age times an output rate fitted to the same reports (see {@link #pinnedBlocks}). The wait is
 *       weighed by the probability that the engine pins more than its cache in fact, for a normal error whose
 *       variance is the estimate's squared error against the same reports (see {@link #memoryWaitProbability}), so
 *       that a worker a few blocks either side of full costs its expected wait.
 *   <li>the uncached tokens count as cached at {@code i} only the blocks that survive the prompts queued there before
 *       this one: where the cache is known full, their new blocks evict first the warm prefixes used before it that
 *       are freed (the LRU model below; at most the free blocks), then its own, tail first, unless active requests
 *       pin it (see {@link #survivesQueuedPrefills}).
 *   <li>{@code duplicatedBlocks_i}: prompt blocks another candidate holds but {@code i} does not; {@code fullness_i}:
 *       the share of them that must evict warm prefixes there, from an LRU model of the shared prefixes routed to
 *       the worker (unique tails are freed first by the engine and evict nothing warm), at most those warm
 *       prefixes; before the cache is known full, only while the worker has more booked than its largest tree
 *       (see {@code evictedShare}).
 * </ul>
 * The cost also charges what a choice costs the other requests (marginal-cost routing): the delay its prefill adds
 * to those that arrive at the worker and wait behind it ({@link #externality}), the delay its KV blocks beyond a full
 * cache add to them ({@link #memoryExternality}), and, when the prompt's longest
 * cached prefix is reused for the first time at a full holder, the room the holder's copy keeps taking once a copy
 * elsewhere leaves it without users ({@link #holderCopyGoesStale}), and, where the request would wait behind a prompt
 * queued there, the wait of the second successor of the pair the two make when they finish together (closed-loop
 * clients send their next requests as they finish; {@link #lockstepCollision}, from decode gaps the policy samples).
 * Three rules bound what the cost may buy: a worker whose predicted TTFT exceeds the lowest by more than this
 * request's own prefill there plus what the fastest choice would cost the others is passed over (no request waits
 * for a cache longer than using it saves, see {@link #waitsNoLongerThanTheCacheSaves}); so is one
 * whose queued prefill time exceeds {@code (1 + loadSlack)} times the mean plus one cold prefill (bounded loads in
 * time); and so is one whose active requests would exceed {@code ceil((1 + loadSlack) x speed share x all active)}
 * (bounded loads in requests, as in Mirrokni, Thorup and Zadimoghaddam), but only while some worker under its bound
 * could take the request without evicting a warm prefix or leaving a stale copy, so balance never costs the cache.
 * Over the stream of requests, a worker given more than {@code (1 + loadSlack)} times the mean share of the recent
 * selections is passed over while another is not ({@link #pastItsShare}) and could take the request without leaving
 * a stale copy (a warm prefix it evicts is in its cost; see {@link #cheapestWithinShare}): the balance that
 * instantaneous bounds cannot see at low load, where nothing queues. Either bound moves a request only where the move costs it at
 * most {@code loadSlack} times a service time ({@link #movesCheaplyForBalance}).
 * Among the rest the cost
 * decides, cache included: an imbalance never falls back to load alone, and a hot prefix gets a second holder as soon
 * as its holder is over the bound or its queue makes recomputing elsewhere, eviction included, the cheaper choice.
 * Costs closer than one engine step tie: the smallest fitted {@code a}, or the smallest prefill spread (see
 * {@link #tieTolerance}) where a prefill that grows faster than linearly clamps the fitted {@code a} at 0. Between two
 * workers that hold different amounts of the prompt, the tie goes to the one that holds more (no copy the cost cannot
 * tell from serving it where it is cached, see {@link #holdsMoreInATie}). Between two workers that both hold as much
 * of the prompt as any, the tie goes to the one with fewer prompt tokens waiting for a first token (they share this
 * request's prefill step), then to the one with less of its engine step in progress left to wait out (see
 * {@link #stepLeftNanos}: known only within one step of the last step end the router saw), then fewer active
 * requests (each lengthens every step), then the one further into its step; otherwise, and then, to the one
 * that took the fewest new prefixes lately, then by rendezvous hash of the prefix, so that copies and new prefixes
 * land consistently rather than wherever is least busy.
 */
final class PredictedTtftPolicy implements RouterPolicy, RouterListener, PeerLearning, ReportLearning {
  private static final double PLACEMENT_DECAY = 0.98;
  static final int MAX_PREFIXES = 4096;
  /** Pseudo-observations of the fleet's fit a worker's own fit is blended with. */
  private static final double PRIOR_WEIGHT = 8;
  /**
   * The window of the served shares ({@link #pastItsShare}), in learning windows: 8 x 64 = 512 selections, an
   * exponential window that weighs about 1,000 selections, so a sixth's share is measured within about 0.012 (one
   * standard error), under a third of the 0.042 the bound allows above it at the default slack, while a fleet change
   * (a worker added, removed, slowed) is followed within a few hundred requests.
   */
  static final int SERVED_WINDOWS = 8;
  /**
   * The decode gaps kept ({@link #learnDecodeGap}): the latest pairs sampled across the fleet, whose mean of
   * {@link #lockstepCollision} terms weighs each one a sixteenth.
   */
  static final int DECODE_GAPS = 16;
  /** Mean service times after which a sampled pair still open is dropped (see learnDecodeGap). */
  static final int ABANDON_SERVICES = 8;

  private final PredictedTtftConfig config;
  private final double keep;
  private final double servedKeep;
  private final Map<WorkerId, Model> models = new HashMap<>();
  private final PlacementCounts placements = new PlacementCounts(PLACEMENT_DECAY);
  private final Model fleet = new Model();
  /**
   * The latest sampled decode gaps, in nanoseconds (see {@link #learnDecodeGap}): for two requests whose first
   * tokens came on one worker within a prefill of each other, the second's decode time less the first's.
   */
  private final double[] decodeGaps = new double[DECODE_GAPS];
  private int decodeGapCount;
  private int decodeGapNext;

  PredictedTtftPolicy(PredictedTtftConfig config) {
    this.config = Objects.requireNonNull(config, "config");
    this.keep = 1 - 1.0 / config.learningWindow();
    this.servedKeep = 1 - 1.0 / (config.learningWindow() * SERVED_WINDOWS);
  }

  /** A shared prefix in a worker's LRU model ({@link Model#warm}); not thread-safe (guarded by the policy's lock). */
  static final class Warm {
    final long key;
    int blocks;
    /** When the router last sent a request using it there (the request holds it until about a service time later). */
    long touchedAt;
    Warm older;
    Warm newer;

    Warm(long key, int blocks) {
      this.key = key;
      this.blocks = blocks;
    }
  }

  /**
   * What the policy has learned about one worker (or the whole fleet); guarded by the policy.
   *
   * <p>First-token time is fitted as {@code y = a + b x + d z} by least squares over an exponential window, where
   * {@code x} is the prompt tokens to prefill before the first token (queued plus own uncached) and {@code z} the
   * requests active on the worker (each decoding sequence lengthens every engine step, the prefill's included).
   */
  static final class Model {
    double n;
    double sx;
    double sz;
    double sy;
    double sxx;
    double szz;
    double sxz;
    double sxy;
    double szy;
    /**
     * The fit's squared one-step-ahead errors on first tokens of requests admitted with nothing active on the worker,
     * and their weight, in the same exponential window as the fit (see {@link #prefillSpread}).
     */
    double idleSq;
    double idleN;
    // The fit, refreshed on each observation; NaN until there are enough of them.
    double a = Double.NaN;
    double b = Double.NaN;
    double d = Double.NaN;
    double serviceNanos = Double.NaN;
    double footprint = 1; // engine-reported pinned blocks over the router's booked blocks
    /**
     * The mean squared error of {@link #pinnedBlocks} against the engine's reports, in blocks squared (an exponential
     * window, see {@link #learnPinnedError}); NaN before any.
     */
    double pinnedSquaredError = Double.NaN;
    /**
     * The requests decoding here (first token seen, not closed; this router's and, through {@link PeerLearning},
     * its peers'), the sum of their booking times less {@code decodeEpoch} and the sum of their first-token times
     * (from booking): their summed decode age at {@code t} is {@code decoding x (t - epoch) - bookedSum -
     * firstTokenSum} (see {@link #decodeAgeSeconds}).
     */
    int decoding;
    long decodeBookedSum;
    double decodeFirstTokenSum;
    long decodeEpoch;
    /**
     * The fit {@code pinned = growthFootprint x booked + outputRate x decode age} (blocks; age in seconds) over the
     * engine's reports, by least squares over an exponential window (see {@link #learnGrowth}); NaN until it is
     * determined.
     */
    double gbb;
    double gba;
    double gaa;
    double gby;
    double gay;
    double growthFootprint = Double.NaN;
    double outputRate = Double.NaN;
    /**
     * The share of recent selections (an exponential window of {@code learningWindow}) at which this worker's memory
     * was predicted to bind for a request joining a prefix it holds: such a request would have waited there for
     * running requests to free blocks (see {@link #heldAgainstOthers}).
     */
    double memoryBound;
    long maxCached;
    boolean filled;
    long lastSeen;
    /**
     * This worker's share of the router's recent selections (an exponential window of {@code learningWindow}
     * selections), for the rate at which requests arrive there (see {@code externality}).
     */
    double routedShare;
    /**
     * This worker's share of the router's selections over a long window ({@link #SERVED_WINDOWS} learning windows),
     * not normalised (the candidates' shares are divided by their sum): the load it has been given, for the
     * bound on served requests ({@link #pastItsShare}).
     */
    double servedShare;
    /**
     * When the router last saw this worker end an engine step: its latest first token or completion (both are
     * emitted at the end of a step); {@link Long#MIN_VALUE} before any.
     */
    long lastStepEndAt = Long.MIN_VALUE;
    /**
     * When the prefill at the head of this worker's queue began (see {@link #queueLeftNanos}): the selection that
     * sent a request there with nothing queued, the latest first token seen there (the next queued prompt starts
     * at that step), or the selection that first saw a queue begun unseen ({@link #learnQueueStart});
     * {@link Long#MIN_VALUE} before any.
     */
    long prefillStartedAt = Long.MIN_VALUE;
    /** The prompt tokens queued here without a first token when this policy last looked (see queueLeftNanos). */
    long queueSeen;
    /**
     * The mean prefill work, in nanoseconds, of the requests the router sent here (their uncached tokens at the
     * learned speed, as the cost counted them; an exponential window of {@code learningWindow}); NaN before any.
     */
    double prefillWork = Double.NaN;
    /**
     * A pair of this router's requests whose first tokens came here within one {@link #prefillWork} of each other,
     * sampled for how far apart they finish (see {@link #learnDecodeGap}): the first and second, their first-token
     * and completion times (completion {@link Long#MIN_VALUE} until closed).
     */
    Routing pairFirst;
    Routing pairSecond;
    long pairFirstTokenAt;
    long pairSecondTokenAt;
    long pairFirstEnd = Long.MIN_VALUE;
    long pairSecondEnd = Long.MIN_VALUE;
    /**
     * The shared prefixes routed here, by the sequence hash of their last shared block, with their length in blocks:
     * an LRU model of the warm part of the worker's cache (unique tails are freed first by the engine and are not
     * tracked), linked from {@link #oldestWarm} (least recently used) to {@link #newestWarm} so that it is walked
     * without an iterator. Bounded by the cache size in blocks and {@link #MAX_PREFIXES}.
     */
    final Long2ObjectOpenHashMap<Warm> warm = new Long2ObjectOpenHashMap<>(); // primitive keys: no boxing per lookup
    Warm oldestWarm;
    Warm newestWarm;
    long warmBlocks;

    void touchWarm(long key, int blocks, long capacity, long nowNanos) {
      Warm e = warm.get(key);
      if (e == null) {
        e = new Warm(key, blocks);
        warm.put(key, e);
        warmBlocks += blocks;
      } else {
        if (e.blocks < blocks) {
          warmBlocks += blocks - e.blocks;
          e.blocks = blocks;
        }
        unlink(e);
      }
      e.older = newestWarm;
      if (newestWarm == null) {
        oldestWarm = e;
      } else {
        newestWarm.newer = e;
      }
      newestWarm = e;
      e.touchedAt = nowNanos;
      while (oldestWarm != null && (warmBlocks > capacity || warm.size() > MAX_PREFIXES)) {
        Warm gone = oldestWarm;
        warmBlocks -= gone.blocks;
        warm.remove(gone.key);
        unlink(gone);
      }
    }

    private void unlink(Warm e) {
      if (e.older == null) {
        oldestWarm = e.newer;
      } else {
        e.older.newer = e.newer;
      }
      if (e.newer == null) {
        newestWarm = e.older;
      } else {
        e.newer.older = e.older;
      }
      e.older = null;
      e.newer = null;
    }

    void observe(double x, double z, double y, double keep) {
      idleSq *= keep;
      idleN *= keep;
      if (z == 0 && n >= PRIOR_WEIGHT && !Double.isNaN(b)) {
        double error = y - (a + b * x);
        idleSq += error * error;
        idleN += 1;
      }
      n = n * keep + 1;
      sx = sx * keep + x;
      sz = sz * keep + z;
      sy = sy * keep + y;
      sxx = sxx * keep + x * x;
      szz = szz * keep + z * z;
      sxz = sxz * keep + x * z;
      sxy = sxy * keep + x * y;
      szy = szy * keep + z * y;
      fit();
    }

    private void fit() {
      if (n < 3) {
        return;
      }
      // Centred normal equations for (b, d); a from the means.
      double mx = sx / n;
      double mz = sz / n;
      double my = sy / n;
      double cxx = sxx / n - mx * mx;
      double czz = szz / n - mz * mz;
      double cxz = sxz / n - mx * mz;
      double cxy = sxy / n - mx * my;
      double czy = szy / n - mz * my;
      double det = cxx * czz - cxz * cxz;
      double fb = Double.NaN;
      double fd = 0;
      if (det > 1e-9 * (cxx * czz + 1e-30)) {
        fb = (cxy * czz - czy * cxz) / det;
        fd = (czy * cxx - cxy * cxz) / det;
      }
      if (!(fb > 0) || !(fd >= 0)) {
        fd = 0; // one regressor: tokens only
        fb = cxx > 1e-9 * (mx * mx + 1) ? cxy / cxx : Double.NaN;
        if (!(fb > 0)) {
          fb = mx > 0 ? my / mx : Double.NaN; // one load level seen: time per token through the origin
        }
      }
      if (!(fb > 0)) {
        return;
      }
      b = fb;
      d = fd;
      a = Math.max(0, my - fb * mx - fd * mz);
    }

    /**
     * How far the fit's prediction fell from the first tokens of requests that found the worker idle, in
     * nanoseconds (the root-mean-square one-step-ahead error); NaN while the window holds 3 or fewer of them.
     *
     * <p>A request admitted with nothing active waits for no queue, no memory and no other sequence's decode, so its
     * first token is its own prefill alone, the one thing the fit models; the error there is how well the line
     * {@code a + b x} describes a prefill. It is what is left when the intercept cannot be the engine's step: a
     * prefill that grows faster than linearly (attention over the chunk) makes the least-squares line steeper than
     * the short prompts' and its intercept negative, clamped at 0. Each error is taken against the fit before the
     * observation joins it (a prediction, not a residual the observation pulled towards itself), and only once the
     * fit carries at least {@link #PRIOR_WEIGHT} observations. Requests that waited are left out on purpose: their
     * errors are mostly memory waits and queueing, which the cost models separately (the residual of the whole fit
     * was 400-530 ms at 3 workers, c32, 7 kinds, against 0.7 ms for this spread at 6 workers, c8).
     */
    double prefillSpread() {
      return idleN > 3 ? Math.sqrt(idleSq / idleN) : Double.NaN;
    }

    /** {@code own} blended with {@code prior} by this model's weight; whichever exists if only one does. */
    double blend(double own, double prior) {
      if (Double.isNaN(own)) {
        return prior;
      }
      return Double.isNaN(prior) ? own : (n * own + PRIOR_WEIGHT * prior) / (n + PRIOR_WEIGHT);
    }
  }

  @Override
  public synchronized int select(Candidates c) {
    int n = c.size();
    long sweep = ++selections;
    learnArrivalGap(c.nowNanos());
    int blockSize = c.blockSize();
    int maxHitBlocks = c.requestTokens() > 0 ? (c.requestTokens() - 1) / blockSize : 0;
    // The fleet's fit, the prior of every worker's own.
    // Nothing observed yet: costs in token units (b = 1), which compare the same way.
    double fleetSlope = Double.isNaN(fleet.b) ? 1 : fleet.b;
    double fleetIntercept = Double.isNaN(fleet.a) ? 0 : fleet.a;
    double minIntercept = Double.POSITIVE_INFINITY;
    double minSpread = Double.POSITIVE_INFINITY;
    if (costs.length < n) {
      costs = new double[Math.max(n, costs.length * 2)];
      ttfts = new double[costs.length];
      owns = new double[costs.length];
      fulls = new double[costs.length];
      overs = new boolean[costs.length];
      pastShare = new boolean[costs.length];
      exts = new double[costs.length];
      excess = new double[costs.length];
      stales = new double[costs.length];
      works = new double[costs.length];
      queued = new double[costs.length];
      byCandidate = new Model[costs.length];
      copied = new double[costs.length];
      survives = new double[costs.length];
    }
    for (int i = 0; i < n; i++) {
      Model m = model(c.worker(i).id(), sweep);
      byCandidate[i] = m;
      learnTree(m, c.cachedBlocks(i));
      learnQueueStart(m, c.prefillTokens(i), c.nowNanos());
      minIntercept = Math.min(minIntercept, m.blend(m.a, fleetIntercept));
      double spread = m.prefillSpread();
      minSpread = Math.min(minSpread, Double.isNaN(spread) ? fleet.prefillSpread() : spread);
      survives[i] = survivesQueuedPrefills(c, i, m);
    }
    // The longest prefix a candidate will still hold when this request is scheduled there (see
    // survivesQueuedPrefills), and the longest the index shows (the prefix's length, whoever holds it).
    double bestHit = 0;
    double indexedHit = 0;
    for (int i = 0; i < n; i++) {
      bestHit = Math.max(bestHit, hit(c, i, maxHitBlocks));
      indexedHit = Math.max(indexedHit, indexedHit(c, i, maxHitBlocks));
    }
    double tolerance = tieTolerance(minIntercept, minSpread);
    stepNanos = tolerance;
    double minTtft = Double.POSITIVE_INFINITY;
    holderCopyGoesStale = holderCopyGoesStale(c, n, indexedHit, maxHitBlocks);
    double shareSum = 0;
    for (int i = 0; i < n; i++) {
      shareSum += byCandidate[i].routedShare;
    }
    int fastest = 0;
    for (int i = 0; i < n; i++) {
      Model m = byCandidate[i];
      cost(c, i, m, m.blend(m.b, fleetSlope), m.blend(m.a, fleetIntercept), maxHitBlocks, bestHit);
      exts[i] = externality(i, m, shareSum) + memoryExternality(i, m, shareSum);
      costs[i] += exts[i] + lockstep(c, i, m);
      minTtft = Math.min(minTtft, ttfts[i]);
      if (ttfts[i] < ttfts[fastest]) {
        fastest = i;
      }
    }
    // What the latency-greedy choice would cost the others: the delay its prefill adds behind it and the holder's
    // copy it leaves stale (see waitsNoLongerThanTheCacheSaves).
    double othersHarm = exts[fastest] + stales[fastest];
    double totalWork = 0;
    for (int i = 0; i < n; i++) {
      totalWork += ttfts[i] - owns[i];
    }
    double meanWork = totalWork / n;
    // Bounded loads in requests (Mirrokni et al.), by learned speed share, enforced only where balancing is free:
    // when some worker under its bound can take the request without evicting anything.
    long totalActive = 1;
    double totalSpeed = 0;
    for (int i = 0; i < n; i++) {
      totalActive += c.activeRequests(i);
      Model m = byCandidate[i];
      totalSpeed += 1 / m.blend(m.b, fleetSlope);
    }
    // The lowest cost among workers under the bound that can take the request without evicting a warm prefix or
    // leaving the holder's copy stale: where balancing is free.
    double roomCost = Double.POSITIVE_INFINITY;
    markPastTheirShare(n, sweep);
    double shareRoomCost = cheapestWithinShare(n);
    for (int i = 0; i < n; i++) {
      Model m = byCandidate[i];
      double share = (1 / m.blend(m.b, fleetSlope)) / totalSpeed;
      overs[i] = c.activeRequests(i) + 1 > Math.ceil((1 + config.loadSlack()) * share * totalActive)
          && !holdsItWithoutAWait(hit(c, i, maxHitBlocks), bestHit, ttfts[i] - owns[i]);
      if (!overs[i] && fulls[i] == 0 && stales[i] == 0) {
        roomCost = Math.min(roomCost, costs[i]);
      }
    }
    int best = -1;
    double bestCost = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      Model m = byCandidate[i];
      double coldOwn = m.blend(m.a, fleetIntercept) + m.blend(m.b, fleetSlope) * c.requestTokens();
      // A request never waits for a cache longer than using it saves (its own prefill there, plus what the
      // latency-greedy choice would cost the others), and a worker whose queued work exceeds the bound (in time, by
      // its learned speed) is passed over.
      boolean eligible = waitsNoLongerThanTheCacheSaves(ttfts[i], minTtft, owns[i], othersHarm, exts[i])
          && ttfts[i] - owns[i] <= (1 + config.loadSlack()) * meanWork + coldOwn
          && !(overs[i] && movesCheaplyForBalance(roomCost, costs[i], serviceNanos(m)))
          && !(pastShare[i] && movesCheaplyForBalance(shareRoomCost, costs[i], serviceNanos(m)));
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
    if (best < 0) {
      // Every cost infinite or NaN (a model gone degenerate): the lowest predicted TTFT, or the first candidate.
      best = 0;
      for (int i = 1; i < n; i++) {
        if (ttfts[i] < ttfts[best] || Double.isNaN(ttfts[best])) {
          best = i;
        }
      }
      bestCost = costs[best];
    }
    // Ties (within one engine step): between two workers holding different amounts of the prompt, the one holding
    // more; between two workers that both hold as much of the prompt as any, the one with
    // the fewest prompt tokens waiting for their first token (they share this request's prefill step), then the one
    // further into its current step, then the fewest active requests (each lengthens every step); otherwise, and
    // then, the one that took the fewest new prefixes lately, then by rendezvous hash of the prefix (so copies and
    // new prefixes land consistently).
    int blocks = c.requestBlocks();
    long key = blocks == 0 ? 0 : c.sequenceHash(Math.min(8, blocks) - 1);
    int choice = best;
    for (int i = 0; i < n; i++) {
      if (i == best || !(costs[i] <= bestCost + tolerance)
          || (anyEligible && c.cost(i) == Double.POSITIVE_INFINITY)) {
        continue;
      }
      boolean holders = bestHit > 0 && hit(c, i, maxHitBlocks) == bestHit && hit(c, choice, maxHitBlocks) == bestHit;
      int byHeld = holdsMoreInATie(c, i, choice, maxHitBlocks);
      if (byHeld != 0 ? byHeld > 0 : breaksTie(c, i, choice, key, holders)) {
        choice = i;
      }
    }
    double unseen = c.unseenPeerSelections();
    if (unseen > 0 && n > 1) {
      int position = Bursts.position(c, unseen);
      if (position > 0) {
        choice = burstChoice(c, n, choice, position, anyEligible, maxHitBlocks, fleetSlope);
      }
    }
    Model chosen = byCandidate[choice];
    double chosenHit = hit(c, choice, maxHitBlocks);
    if (c.prefillTokens(choice) == 0) {
      chosen.prefillStartedAt = c.nowNanos(); // nothing queued: its prefill begins now
    }
    chosen.queueSeen = c.prefillTokens(choice) + Math.max(0, c.requestTokens() - Math.round(chosenHit * blockSize));
    learnRoutedShares(n, choice);
    chosen.prefillWork = Double.isNaN(chosen.prefillWork) ? works[choice]
        : chosen.prefillWork * keep + (1 - keep) * works[choice];
    learnPromptBlocks(c.requestBlocks());
    // The prefix this request shares, as long as the index shows it: where the holder's copy is evicted before its
    // turn, the request computes it again, and the worker caches it whole.
    int shared = (int) Math.max(indexedHit, chosenHit);
    if (shared > 0) {
      chosen.touchWarm(c.sequenceHash(shared - 1), shared, chosen.filled ? chosen.maxCached : Long.MAX_VALUE,
          c.nowNanos());
    }
    boolean placed = blocks > 0 && 2 * chosenHit < blocks;
    if (placed) {
      placements.forgetAllBut(c);
      placements.record(c.worker(choice).id());
    }
    c.notePlacement(shared, placed);
    c.noteQueued(Math.round(queued[choice]));
    c.notePrefill(Math.round(Math.max(0, c.requestTokens() - chosenHit * blockSize)));
    if (models.size() > 2 * n + 8) {
      forgetDeparted(sweep);
    }
    return choice;
  }

  /**
   * With peers' selections this view cannot show yet, the candidate one router would have given this request at
   * {@code position} (at least 1) of the burst they make with it ({@link Bursts}): each earlier request like this
   * one, placed where its cost was lowest, adds its uncached prefill at that worker's learned speed to the queue the
   * later ones wait behind there. The first goes to {@code first}, this selection's choice with the tie rules above;
   * the later ones to the lowest cost with the queue added. Candidates passed over ({@code anyEligible} and not
   * eligible) stay passed over. The other terms of the cost (memory, the externality) are left as the view has them:
   * the queue is what a request placed behind another waits for first.
   */
  private int burstChoice(Candidates c, int n, int first, int position, boolean anyEligible, int maxHitBlocks,
      double fleetSlope) {
    double[] head = c.burstHead();
    double[] step = c.burstStep();
    for (int i = 0; i < n; i++) {
      Model m = byCandidate[i];
      head[i] = anyEligible && c.cost(i) == Double.POSITIVE_INFINITY ? Double.POSITIVE_INFINITY : costs[i];
      double uncached = Math.max(0, c.requestTokens() - hit(c, i, maxHitBlocks) * c.blockSize());
      double prefill = m.blend(m.b, fleetSlope) * uncached;
      step[i] = prefill > 0 ? prefill : Double.MIN_VALUE;
    }
    head[first] += step[first];
    return Bursts.place(c, position - 1);
  }

  /**
   * Costs closer than this tie, in nanoseconds: one engine step, the smallest fitted intercept ({@code minIntercept},
   * the first-token time of a request with nothing to prefill), or where that is less, the smallest prefill spread
   * among the candidates ({@code minSpread}, see {@link Model#prefillSpread}); 0 if neither is known (NaN for a
   * spread counts as unknown: every candidate's must be known).
   *
   * <p>The intercept is a step only while the fit is linear in the tokens. An engine's prefill is not: vLLM's
   * attention over a chunk grows with its square, and the simulator's step is {@code 4.5 ms + 25 us x P + 1 ns x P^2}
   * for {@code P} tokens in the step (at most 8,192). Over the Mooncake trace's 20-40k-token prompts the line's slope
   * is the chunked rate (33.6 us per token) and its intercept, extrapolated to a prompt of no tokens, falls below
   * zero and clamps at 0: the tolerance was 0 on 2,049 of the trace's 3,993 selections, and two costs 0.6 ms apart
   * in 545 decided where a new prefix lived (branch {@code policy13}). The prefill spread is the resolution the fit
   * has where it models everything the request waits for; costs closer than that are not told apart by it. It is
   * taken from requests that found their worker idle, so it stays small where memory waits and queues inflate the
   * fit's residuals (those the cost models by its own terms), and on the article's grid it is under the intercept
   * (0.7 ms against 4.5), which then decides as before.
   */
  static double tieTolerance(double minIntercept, double minSpread) {
    double step = Double.isFinite(minIntercept) ? minIntercept : 0;
    return Double.isFinite(minSpread) ? Math.max(step, minSpread) : step;
  }

  /**
   * Whether a candidate holding {@code hit} blocks of the prompt is a holder of its longest cached prefix
   * ({@code bestHit}) at which this request would not wait ({@code wait}, its predicted TTFT less its own prefill:
   * no prompt queued before it, no memory wait). The bound in active requests does not pass such a holder over.
   *
   * <p>Passing a holder over for balance makes a copy: this request recomputes the prefix cold (a whole prefill,
   * about 56 ms more than a hit on the article's grid), and the copy takes a second cache's room for the rest of the
   * run. What it buys, where the holder makes nobody wait, is only the holder's count of active requests, one above
   * the bound until its next finish: an engine serves a request at its next step whatever the count, and one more
   * decoding sequence lengthens each step by about a sixth. That excess is mostly chance: at 8 clients on 6 workers
   * the bound is 2 active requests, and with 7 kinds drawn uniformly one kind has 3 or more active requests about
   * a tenth of the time, so the bound fired all through a run and every kind ended with about 3 holders, one copy
   * (one cold request) for every 16 requests of a 240-request run (the README's main job: 90.4 / 89.6 / 74.2% hits
   * at 7 / 12 / 24 kinds, against about 98% in the suite's 1,000-request runs, which made as many copies in all).
   * An imbalance that lasts is the bound over the requests served ({@link #pastItsShare}) to catch, and one that
   * queues still passes the holder over here: a holder with prompts queued before this one, or predicted to wait
   * for memory, makes this request wait, which a copy elsewhere saves (bursts, a hot Zipf prefix). A worker that
   * does not hold the prefix is still bounded: placing a new prefix or a copy there costs the same cold prefill on
   * any worker, so balance is free.
   */
  static boolean holdsItWithoutAWait(double hit, double bestHit, double wait) {
    return bestHit > 0 && hit == bestHit && !(wait > 0);
  }

  private double[] costs = new double[8];
  private double[] ttfts = new double[8];
  private double[] owns = new double[8];
  private double[] fulls = new double[8];
  private boolean[] overs = new boolean[8];
  private boolean[] pastShare = new boolean[8];
  private double[] exts = new double[8];
  // Per candidate: the blocks this request would pin beyond the cache there, at most its own new ones (see
  // memoryExternality).
  private double[] excess = new double[8];
  private double[] stales = new double[8];
  // Per candidate: the prompt blocks another candidate holds that this one would copy (see heldAgainstOthers).
  private double[] copied = new double[8];
  private double[] works = new double[8];
  private double[] queued = new double[8];
  // Per candidate: the blocks of its cached prefix that survive the prefills queued there (see survivesQueuedPrefills).
  private double[] survives = new double[8];
  // Whether this selection's longest cached prefix is reused for the first time at its holder (see
  // holderCopyGoesStale).
  private boolean holderCopyGoesStale;
  private long lastSelectionAt = Long.MIN_VALUE;
  private double meanArrivalGapNanos = Double.NaN;
  // This selection's model of each candidate, by candidate index (one map lookup per candidate per selection).
  private Model[] byCandidate = new Model[8];
  private long selections;
  private double meanPromptBlocks = Double.NaN; // see learnPromptBlocks
  // This selection's tie tolerance (see tieTolerance): one engine step's fixed cost (see stepLeftNanos).
  private double stepNanos;

  private double cost(Candidates c, int i, Model m, double slope, double intercept, int maxHitBlocks,
      double bestHit) {
    int blockSize = c.blockSize();
    double hit = hit(c, i, maxHitBlocks);
    double uncached = Math.max(0, c.requestTokens() - hit * blockSize);
    int active = c.activeRequests(i);
    double own = intercept + slope * uncached;
    double queuedWhole = slope * c.prefillTokens(i);
    double ttft = own + queuedWhole;
    excess[i] = 0;
    copied[i] = 0;
    // The blocks booked there before this request (its active requests' blocks, counted once).
    long booked = c.decodeBlocks(i) - (c.requestBlocks() - c.activeOverlapBlocks(i));
    // This request's blocks not pinned there yet by active requests (see sharedWithActive).
    int newBlocks = c.requestBlocks() - sharedWithActive(c.activeOverlapBlocks(i), c.gpuOverlapBlocks(i),
        c.requestBlocks());
    double pinnedBefore = pinnedBlocks(m, booked, c.nowNanos()); // what the worker pins without this request
    if (!Double.isNaN(m.serviceNanos)) {
      // KV memory: blocks its active requests and this one would pin beyond the cache wait for running requests to
      // finish; they finish at about active / service time per nanosecond, and a block is freed only with its last
      // holder (a request's own tail and output with it, a shared prefix with the last request sharing it). The
      // cache holds at least the largest tree seen; until it is known to be full, that is also the size assumed
      // (see memoryCapacity).
      double pinned = pinnedBlocks(m, booked + newBlocks, c.nowNanos());
      double over = pinned - memoryCapacity(m);
      boolean modelled = active > 0 && !treeHoldsItsBookingsBeforeAnyReport(c, i, m, booked);
      copied[i] = Math.max(0, bestHit - hit) * m.footprint;
      // How often a request would wait for memory here if it joined a prefix held here (this one's blocks without
      // those it would copy): the share of the time in which the prefix blocks a copy pins here are blocks the
      // others wait for (see heldAgainstOthers).
      m.memoryBound = m.memoryBound * keep + (modelled && over - copied[i] > 0 ? 1 - keep : 0);
      // Weighed by the chance that the engine pins more than the cache in fact (see memoryWaitProbability).
      double waits = modelled ? memoryWaitProbability(over, m.pinnedSquaredError) : 0;
      if (waits > 0) {
        // Where the estimate has room (over <= 0), any finish frees enough: one whole finish, which finishing's
        // bisection would reach only after its 24 steps.
        double finishes = over > 0 ? atLeastOneFinish(finishing(c, i, active, pinnedBefore - booked, over)) : 1;
        ttft += waits * finishes * m.serviceNanos / active;
      }
      if (modelled && over > 0) {
        excess[i] = Math.min(over, newBlocks * m.footprint);
      }
    }
    // The head of the queue computes only if the engine has memory for what it was sent: with more booked there
    // than its cache holds, queued prompts wait for memory, and nothing is credited to them (without this, 3 workers,
    // c32, 24 kinds, seed 1: p99 4,080 -> 5,444 ms against kvAware's 3,899).
    boolean computing = !(pinnedBefore > memoryCapacity(m));
    double queueLeft = computing
        ? queueLeftNanos(queuedWhole, m.prefillStartedAt, c.nowNanos(), stepNanos) : queuedWhole;
    queued[i] = queueLeft / slope;
    ttft += queueLeft - queuedWhole;
    double price = 0;
    double duplicated = bestHit - hit;
    double fullness = duplicated > 0 ? evictedShare(c, i, m, duplicated) : 0;
    fulls[i] = fullness;
    if (duplicated > 0) {
      price = config.evictionPrice() * slope * blockSize * duplicated * fullness;
    }
    // A copy away from a holder whose copy then goes unused: that copy crowds the holder's cache too.
    stales[i] = duplicated > 0 && holderCopyGoesStale ? config.evictionPrice() * slope * blockSize * duplicated : 0;
    price += stales[i];
    ttfts[i] = ttft;
    owns[i] = own;
    works[i] = slope * uncached;
    costs[i] = ttft + price;
    return costs[i];
  }

  /**
   * The expected delay, in nanoseconds, that placing this request at candidate {@code i} adds to a successor of the
   * pair it would make there with the request ahead of it (see {@link #lockstepCollision}): with a prompt queued there,
   * the latest queued, whose first token comes one own prefill ({@code owns[i]}) before this one's. 0 with nothing
   * queued (pricing a pair with the request whose first token came there last as well moved the Mooncake trace's
   * cached-token ratio under its target; see docs/ROUTING.md) and before a decode gap is sampled.
   */
  private double lockstep(Candidates c, int i, Model m) {
    if (decodeGapCount == 0 || c.prefillTokens(i) <= 0) {
      return 0;
    }
    return lockstepCollision(decodeGaps, decodeGapCount, owns[i], m.prefillWork);
  }

  /**
   * The expected wait, in nanoseconds, of the second of two successors sent together when a request whose first
   * token comes {@code gap} nanoseconds after the one ahead of it on a worker finishes about when that one does:
   * the mean over the sampled decode gaps {@code e} (the later request's decode time less the earlier one's) of
   * {@code max(0, successorPrefill - |gap + e|)}, 0 with no sample or no prefill known.
   *
   * <p>In a closed loop each finish sends its client's next request. Two requests on one worker finish
   * {@code |gap + e|} apart; their successors are sent as far apart, and where both go to the worker the pair leaves
   * room on, the second waits for what is left of the first's prefill there, {@code successorPrefill} (the worker's
   * mean prefill work per request) less the head start. With output lengths drawn from a spread, {@code e} is seconds
   * and the term vanishes; with one output length for every request (the suite's 128 tokens), two requests batched
   * together decode in lockstep, {@code e} is a step or two, and a request joining a worker behind a queued prompt
   * makes a pair that finishes together. It is the wait if the second successor is sent there too, an upper bound on
   * what it pays elsewhere (it goes elsewhere only where that costs it less).
   */
  static double lockstepCollision(double[] gaps, int count, double gap, double successorPrefill) {
    if (count <= 0 || !(successorPrefill > 0)) {
      return 0;
    }
    double sum = 0;
    for (int k = 0; k < count; k++) {
      sum += Math.max(0, successorPrefill - Math.abs(gap + gaps[k]));
    }
    return sum / count;
  }

  /**
   * Samples how far apart two requests finish that began decoding together: at a first token on a worker with no
   * pair sampled, the request becomes the pair's first; the next first token there within the worker's mean prefill
   * work ({@link Model#prefillWork}) of it becomes the second (a later one starts a new pair); when both have closed,
   * the second's decode time less the first's joins {@link #decodeGaps}. A pair left open for
   * {@value #ABANDON_SERVICES} mean service times (a handle never closed) is dropped.
   */
  private void learnDecodeGap(Model m, Routing routing, long at, boolean firstToken) {
    if (firstToken) {
      if (m.pairFirst != null && m.pairSecond == null && at - m.pairFirstTokenAt <= m.prefillWork
          && m.pairFirstEnd == Long.MIN_VALUE) {
        m.pairSecond = routing;
        m.pairSecondTokenAt = at;
      } else if (m.pairFirst == null || m.pairSecond == null
          || (m.serviceNanos > 0 && at - m.pairFirstTokenAt > ABANDON_SERVICES * m.serviceNanos)) {
        m.pairFirst = routing;
        m.pairFirstTokenAt = at;
        m.pairSecond = null;
        m.pairFirstEnd = Long.MIN_VALUE;
        m.pairSecondEnd = Long.MIN_VALUE;
      }
      return;
    }
    if (routing == m.pairFirst) {
      m.pairFirstEnd = at;
    } else if (routing == m.pairSecond) {
      m.pairSecondEnd = at;
    } else {
      return;
    }
    if (m.pairSecond == null) {
      m.pairFirst = null; // closed before a partner came
    } else if (m.pairFirstEnd != Long.MIN_VALUE && m.pairSecondEnd != Long.MIN_VALUE) {
      decodeGaps[decodeGapNext] =
          (m.pairSecondEnd - m.pairSecondTokenAt) - (double) (m.pairFirstEnd - m.pairFirstTokenAt);
      decodeGapNext = (decodeGapNext + 1) % DECODE_GAPS;
      decodeGapCount = Math.min(DECODE_GAPS, decodeGapCount + 1);
      m.pairFirst = null;
      m.pairSecond = null;
    }
  }

  /**
   * The delay candidate {@code i}'s prefill would add to the requests that arrive at the worker after this one and
   * wait behind it, in nanoseconds: the part of a choice's cost that falls on others (marginal-cost routing, as in
   * Wardrop's system optimum, rather than each request minimising its own latency).
   *
   * <p>An engine prefills in arrival order, so this request's prefill work {@code w = b x uncached} delays every
   * request that reaches the worker before it is done: those arriving while it waits ({@code wait}, the predicted
   * TTFT less its own prefill) by all of {@code w}, those arriving during its prefill by what is left, {@code w / 2}
   * on average. With requests arriving at rate {@code lambda}, the expected added delay is
   * {@code lambda x w x (wait + w / 2)} (a first-order count: the delayed requests' own delay to those behind them
   * is left out, so it is a lower bound). {@code lambda} is learned: the mean gap between the router's selections
   * (an exponential window of {@code learningWindow}) and the worker's share of recent selections. The term is
   * small where prefills are short against the gaps between arrivals (2,371-token prompts at the article's load:
   * under a tenth of the prefill) and decisive where a recompute takes seconds (the Mooncake trace: 20-40k tokens
   * recomputed on an idle worker delay everyone who arrives there meanwhile, while waiting at the holder delays
   * few, because it adds little work).
   */
  private double externality(int i, Model m, double shareSum) {
    if (!(shareSum > 0) || !(meanArrivalGapNanos > 0)) {
      return 0;
    }
    return delayToOthers(arrivalRate(m, shareSum), works[i], ttfts[i] - owns[i]);
  }

  /**
   * The delay candidate {@code i}'s KV memory use would add to the requests that arrive at the worker while this one
   * runs, in nanoseconds: the memory counterpart of {@link #externality}, charged for the blocks it holds against
   * them ({@link #heldAgainstOthers}): those beyond the cache now ({@code excess}, at most its own new blocks), and
   * the prefix blocks it would copy there in the share of the time the worker's memory binds.
   *
   * <p>A worker whose cache is full admits a request only as running ones free their blocks: memory, not compute,
   * sets its pace, and it turns over its {@code capacity} blocks about once per service time {@code S}. This
   * request's excess blocks, held for {@code S}, are memory the requests queued behind it wait for: each of them is
   * admitted about {@code excess x S / capacity} later, and those are the requests that arrive while it runs,
   * {@code rate x S} of them. So {@link #memoryDelayToOthers} is {@code rate x S x excess x S / capacity}. A request
   * joining its prefix's holder adds only its tail there (21 of 148 blocks on the article's grid), a cold copy its
   * whole prompt, which the compute externality does not see: on 3 workers, c16, 7 kinds, every worker memory-bound,
   * predicted memory waits that differ by noise sent requests cold to the worker predicted to wait least, whose
   * cache they then crowded (hit rate 91% and falling as the waits were modelled more exactly; see docs/ROUTING.md).
   */
  private double memoryExternality(int i, Model m, double shareSum) {
    double held = heldAgainstOthers(excess[i], copied[i], m.memoryBound);
    if (!(held > 0) || !(shareSum > 0) || !(meanArrivalGapNanos > 0) || Double.isNaN(m.serviceNanos)) {
      return 0;
    }
    return memoryDelayToOthers(arrivalRate(m, shareSum), m.serviceNanos, held, memoryCapacity(m));
  }

  /**
   * The rate, per nanosecond, at which requests arrive at the worker of model {@code m}: its share of the recent
   * selections over the mean gap between them. The gap is taken as at least a nanosecond, the ticker's resolution:
   * selections that all read one instant (a coarse or stopped clock) drive the mean gap towards 0, and the rate's
   * reciprocal to an infinite cost at every candidate.
   */
  private double arrivalRate(Model m, double shareSum) {
    return m.routedShare / shareSum / Math.max(1, meanArrivalGapNanos);
  }

  /**
   * The blocks a request placed at a worker holds against the requests that arrive there while it runs: its
   * {@code excess} beyond the cache now, and of the prefix blocks it would copy there ({@code copied}: blocks another
   * candidate already holds), the share {@code memoryBound} of them that the worker's memory binds (the share of
   * recent selections at which a request joining a prefix held there would have waited for blocks to be freed).
   *
   * <p>A copy into a worker that has room at this instant exceeds nothing now, so the excess alone charged it
   * nothing. But where the memory binds most of the time, that room is what the next arrivals are waiting for: the
   * copied prefix is pinned for the request's stay (and for as long as requests of its kind keep coming there), and
   * for the share of that time in which the worker's memory binds, each of its blocks is a block some waiting request
   * cannot have. The copy's own tail and output are not charged this way: every candidate must hold them (a join
   * too), so they are memory the cluster needs wherever the request goes, while the copied prefix is memory the
   * cluster spends twice. At 3 workers, c32, 4 kinds (each cache holds about two kinds beside its active requests'
   * tails), the excess alone made a join at a memory-bound holder cost about 1 s more for the others than a copy
   * onto a worker that had a few blocks free at that instant, and about one request in 45 was a cold copy all
   * through the run; see docs/ROUTING.md.
   */
  static double heldAgainstOthers(double excess, double copied, double memoryBound) {
    return excess + memoryBound * Math.max(0, copied - excess);
  }

  /**
   * The expected delay, in nanoseconds, that {@code excess} blocks held beyond a full cache of {@code capacity}
   * blocks for a service time of {@code serviceNanos} add to requests arriving at {@code rate} per nanosecond (see
   * {@link #memoryExternality}): {@code rate x serviceNanos x excess x serviceNanos / capacity}.
   */
  static double memoryDelayToOthers(double rate, double serviceNanos, double excess, double capacity) {
    if (!(capacity > 0)) {
      return 0;
    }
    return rate * serviceNanos * (excess * serviceNanos / capacity);
  }

  /**
   * How many finishes a memory wait counts, given the fractional {@code k} of {@link #finishing}: at least one. An
   * engine frees a request's blocks only when it finishes, all at once, so a request that needs any block freed
   * waits for a whole finish; {@code k} in proportion predicted a small part of one where a whole one was waited
   * for (3 workers, c8, 12 kinds, seed 3: 0.13 of a finish, 43 ms predicted, 380 ms waited; 6 workers, c32, 12
   * kinds, seed 2: 106 ms predicted, 584-866 ms waited). Beyond one finish, {@code k} interpolates between
   * finishes, as the blocks needed are an expectation over which requests finish first; rounding every {@code k}
   * up (branch {@code policy8}) over-predicted the deep waits where several must finish (3 workers, c16, 7 kinds:
   * p99 263 -> 624 ms at seed 1).
   */
  static double atLeastOneFinish(double k) {
    return k > 0 ? Math.max(1, k) : k;
  }

  /**
   * The expected delay, in nanoseconds, that {@code work} nanoseconds of prefill started after {@code wait}
   * nanoseconds adds to requests arriving at {@code rate} per nanosecond and served after it (see
   * {@link #externality}): {@code rate x work x (wait + work / 2)}.
   */
  static double delayToOthers(double rate, double work, double wait) {
    return rate * work * (wait + work / 2);
  }

  /**
   * Whether a request may wait for candidate {@code i}'s cache: its predicted TTFT there exceeds the lowest by at
   * most its own prefill there plus what the latency-greedy choice would cost the others ({@code othersHarm}: that
   * choice's externality and stale-copy price), less the externality of this one. No request waits for a cache
   * longer than using it saves, counting what is saved for everyone: without the others' share, three quarters of
   * the cached blocks passed over on the Mooncake trace were passed over here (the holder busy with a long prompt,
   * the request recomputed 20-40k tokens on an idle worker and delayed that worker's next arrivals).
   */
  static boolean waitsNoLongerThanTheCacheSaves(double ttft, double minTtft, double own, double othersHarm,
      double externality) {
    return ttft <= minTtft + own + Math.max(0, othersHarm - externality);
  }

  /**
   * Whether this request's longest cached prefix is reused for the first time at its holder (the holder is known
   * full and the prefix is not among the shared prefixes the router has sent there): then a copy elsewhere leaves
   * the holder's copy stale, and the copy is priced twice, for what it evicts where it lands and for the room the
   * stale copy takes at the holder.
   *
   * <p>A prefix shared for the first time was, when it was cached, a request's own tail (the rest of a
   * conversation, a document, a branch of a prefix tree), and its next user is usually this one: moving this
   * request moves the prefix's future with it, and the holder's copy, recently used and so kept by LRU for a whole
   * residence time, displaces as much warm cache there as the new copy does where it lands. A prefix already shared
   * at the holder (a popular system prompt) keeps its users there, and its copy is priced as before. On the
   * Mooncake trace, where 1,565 of 1,782 reuses share a strict prefix of an earlier request, this is most reuses; on
   * the article's grid, only the first reuse of each kind at each worker.
   */
  private boolean holderCopyGoesStale(Candidates c, int n, double indexedHit, int maxHitBlocks) {
    if (!(indexedHit >= 1)) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (indexedHit(c, i, maxHitBlocks) == indexedHit) {
        // A copy the prompts queued there evict before this request's turn does not go stale: it goes.
        Model h = byCandidate[i];
        return h.filled && !(survives[i] < indexedHit) && !h.warm.containsKey(c.sequenceHash((int) indexedHit - 1));
      }
    }
    return false;
  }

  /**
   * Marks in {@code pastShare} the candidates {@linkplain #pastItsShare past their share} of the requests served and
   * returns whether some candidate is not (those past it are passed over when one of those could take the request
   * freely, see {@link #cheapestWithinShare}).
   */
  private boolean markPastTheirShare(int n, long sweep) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += byCandidate[i].servedShare;
    }
    double weighed = weighedSelections(servedKeep, sweep - 1);
    boolean anyWithin = false;
    for (int i = 0; i < n; i++) {
      pastShare[i] = sweep > config.learningWindow()
          && pastItsShare(byCandidate[i].servedShare, sum, n, config.loadSlack(), weighed);
      anyWithin |= !pastShare[i];
    }
    return anyWithin;
  }

  /**
   * The lowest cost among the candidates within their share of the requests served ({@code pastShare} marked by
   * {@link #markPastTheirShare}) that could take this request without leaving the holder's copy stale, or infinity
   * if none could: the candidates past their share are passed over only for one of those, and only where it costs
   * little more (see {@link #movesCheaplyForBalance}).
   *
   * <p>A copy that evicts warm prefixes there may take it: its cost includes the eviction price, and the move is
   * made only if that cost is within {@code loadSlack} of a service time of the worker passed over. Before, such a
   * copy never counted (branch {@code policy10} excluded both evictions and stale copies), so once every cache was
   * full and warm no candidate could take a request "freely" and nothing kept the promise of balance: at 6 workers,
   * c8, 12 kinds, a worker leaving at 4 s and coming back cold, seed 1, all six caches were known full by 42 s, the
   * worker holding three kinds served 237 of 1,000 requests (max/mean 1.42) with the fit corrected by
   * {@link #ownPrefillTokens}; before that correction the fitted slope was about 2.5 times too low and eviction
   * prices as much too small, which kept its balance (1.15) by chance. Stale copies stay excluded: they are what the
   * condition was made for (the Mooncake trace's conversations, most of whose reuses are a first reuse at a full
   * holder).
   *
   * <p>The bound on requests served keeps the promise of balance (max/mean {@code 1 + loadSlack}), and it is enforced
   * only where balance costs no stale copy: moving a request off a worker that holds its prefix and leaving the
   * holder's recently used copy taking room costs a recomputation later, which the bound would override. Where nothing
   * is lost (a copy into room, the case the bound was made for: 4 clients on 6 workers, every cache roomy) it fires.
   * On the Mooncake trace, where most reuses are a conversation's first reuse of a prefix at its holder (the copy
   * would leave it stale), the unconditional bound moved conversations off their holders: cached-token ratio 0.452
   * before the bound, 0.439 with it unconditional, 0.448 with this condition (1M tokens per worker); on the tight
   * cache 0.145, 0.146 and 0.144, within what variants that change a few decisions move it.
   */
  private double cheapestWithinShare(int n) {
    double cheapest = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      if (!pastShare[i] && stales[i] == 0) {
        cheapest = Math.min(cheapest, costs[i]);
      }
    }
    return cheapest;
  }

  /**
   * Whether a bound on load may pass over a candidate of cost {@code cost} for one that takes the request freely
   * at {@code roomCost} (no warm prefix evicted, no stale copy left): only if the move costs at most
   * {@code loadSlack} times a request's service time at the candidate ({@code serviceNanos}; 0 before one has
   * completed, so no move).
   *
   * <p>Both bounds on load (active requests, requests served) promise balance, and balance is worth what it saves:
   * a request over a worker's bound shares that worker's steps for a service time, and the slack is the share of
   * it the promise tolerates, so a move made for balance alone may cost this request no more than that share of
   * its stay. The bound on requests served had no such limit: it sees an excess that queues nothing (at low load
   * nobody waits for the busier worker), so what a move cost was never weighed against what it bought. On the
   * Mooncake trace (1M tokens per worker) it passed over idle holders 0.6-2.2 s cheaper than the copy (prefixes of
   * 930-2,850 blocks: 4-15 ms there against 0.5-1.7 s of recomputation elsewhere, for a balance the trace's max/mean
   * load of 1.09 did not need): 6 copies of 8.6k cached blocks, and with this limit the cached-token ratio rose
   * from 0.448 to 0.452. On the article's grid a balancing copy costs a cold prefill (about 56 ms more than a hit
   * at 6 workers, c4) against a quarter of a service time of about a second, so those moves are still made.
   */
  boolean movesCheaplyForBalance(double roomCost, double cost, double serviceNanos) {
    return roomCost - cost <= config.loadSlack() * serviceNanos;
  }

  /**
   * How many independent selections an exponential window ({@code keep} per selection) over the first {@code t}
   * selections weighs: {@code (sum w)^2 / sum w^2} of its weights {@code w_j = keep^j}, that is
   * {@code (1 - keep^t)^2 (1 + keep) / ((1 - keep)(1 - keep^2t))}: {@code t} while {@code t} is small against the
   * window, {@code (1 + keep) / (1 - keep)} (about twice the window) once it is filled.
   */
  static double weighedSelections(double keep, long t) {
    if (t <= 0) {
      return 0;
    }
    double kt = Math.pow(keep, t);
    return (1 - kt) * (1 - kt) * (1 + keep) / ((1 - keep) * (1 - kt * kt));
  }

  /**
   * Whether a worker has been given more than {@code (1 + loadSlack)} times the mean share of the requests: its
   * {@code served} share of the router's recent selections over the candidates' {@code sum}, against {@code 1 / n}.
   * Such a worker is passed over while some candidate within its share can take the request freely (see
   * {@link #cheapestWithinShare}; bounded loads over the
   * requests served: Mirrokni, Thorup and Zadimoghaddam's cap, {@code (1 + epsilon)} times the mean, applied to the
   * stream of requests rather than to what is active at one instant).
   *
   * <p>The bounds on active requests and queued work see an imbalance only while it queues: at low load (4 clients
   * on 6 workers, each worker with at most one request at a time) a worker that holds two popular prefixes serves
   * both, twice the mean, and no request ever waits for it, so no instantaneous bound fires (6 workers, c4, 7
   * kinds: one worker served 221 of 1,000 requests, max/mean 1.33 at seed 2). The cap is the mean, not the worker's
   * learned speed share: the balance promised is of requests served against the mean, and the learned speeds
   * include memory waits under overload (3 workers of equal speed learned 25, 37 and 51 us per token at c16), which
   * would mark a worker as past a share it was never given; a slower worker is kept from its excess by the cost and
   * the bound in time.
   *
   * <p>Only an excess that is evidence counts: the share must also exceed the mean by two standard errors of a
   * share measured over {@code weighed} selections ({@link #weighedSelections}), {@code sqrt(p (1 - p) / weighed)}
   * with {@code p = 1 / n}. Once the window is filled (about 1,000 selections weighed) that is 0.023 at 6 workers,
   * under the 0.042 the cap allows, and the cap decides; early on it is larger than the cap's allowance (0.092
   * after 66 selections), so the first requests' chance imbalance does not force copies: at 6 workers, c8, 2 kinds,
   * seed 1, a cap applied from the 65th selection on (in a run with a tighter bound on active requests, not kept)
   * passed both holders of one prefix over at the 66th selection (their shares 0.25 and 0.23) and copied the prefix
   * cold, a slow request with nothing to show for it. And never before the router has made a learning window of
   * selections, the least history the policy learns anything from.
   */
  static boolean pastItsShare(double served, double sum, int n, double loadSlack, double weighed) {
    if (!(sum > 0) || !(weighed > 0)) {
      return false;
    }
    double share = served / sum;
    double mean = 1.0 / n;
    return share > (1 + loadSlack) * mean && share - mean > 2 * Math.sqrt(mean * (1 - mean) / weighed);
  }

  private void learnArrivalGap(long now) {
    if (lastSelectionAt != Long.MIN_VALUE && now >= lastSelectionAt) {
      double gap = now - lastSelectionAt;
      meanArrivalGapNanos = Double.isNaN(meanArrivalGapNanos) ? gap
          : meanArrivalGapNanos + (gap - meanArrivalGapNanos) / config.learningWindow();
    }
    lastSelectionAt = now;
  }

  private void learnRoutedShares(int n, int choice) {
    for (int i = 0; i < n; i++) {
      byCandidate[i].routedShare *= keep;
      byCandidate[i].servedShare *= servedKeep;
    }
    byCandidate[choice].routedShare += 1 - keep;
    byCandidate[choice].servedShare += 1 - servedKeep;
  }

  /**
   * The share of {@code duplicated} copied blocks that would evict warm prefixes at candidate {@code i}: the part of
   * the copy beyond the cache's room next to the warm prefixes (the LRU model of the shared prefixes routed there),
   * and never more than those warm prefixes (a copy into a cache holding nothing warm evicts nothing warm).
   *
   * <p>The room is known once the cache is known to be full. Before that, it is taken to be what the largest tree
   * shows (as for the memory wait, see {@link #memoryCapacity}) only while the worker has more blocks booked than its
   * largest tree: then the engine has not shown room even for what it has been sent, which is the first instant
   * of a cold start (every tree empty or filling, every worker busy with its first prompts). Without this, a copy
   * of a prefix onto a busy worker that is computing other prefixes cost nothing, and the first burst scattered
   * prefixes over busy workers by queue length alone: at 3 workers, c16, 7 kinds, one kind went to all 3 workers
   * at t = 0 and one worker took 6 requests of 4 kinds, 3 of which then waited 1.25 s for memory. A worker whose
   * tree holds all its bookings has shown room, and a copy there is free as before (at 4 clients on 6 workers, the
   * trees stay small and copies into them keep the load balanced).
   */
  private static double evictedShare(Candidates c, int i, Model m, double duplicated) {
    if (!m.filled && !(c.decodeBlocks(i) * m.footprint > memoryCapacity(m))) {
      return 0;
    }
    double evicted = Math.min(m.warmBlocks, m.warmBlocks + duplicated - m.maxCached);
    return Math.min(1, Math.max(0, evicted / duplicated));
  }

  /**
   * The cache size, in blocks, the memory wait assumes for a worker: the largest cached tree seen, also before the
   * cache is known to be full (a shrink or an engine report of waiting for memory, which only {@code filled}
   * records).
   *
   * <p>Nothing else bounds it: the index shows what the engine cached, not what it could, and an engine report
   * gives a usage fraction, not a size. Assuming a bigger cache than the engine has shown is the optimistic error,
   * and it is the one that costs a tail: at 6 workers, c32, 12 kinds, at 1.66 s two workers whose trees had reached
   * 555 and 578 blocks (585 in fact) had 592 and 620 blocks booked, had never evicted nor reported a wait, and were
   * predicted to have room; requests sent there waited up to 1.3 s for memory. The pessimistic error is
   * small: a worker's tree only lags the blocks booked there while prompts are queued for prefill, which the cost
   * already counts, and the wait needs a learned service time, so the first instant (no completion yet) is
   * unaffected. The eviction price uses this size before the cache is known full only where the worker has more
   * booked than it (see {@link #evictedShare}): a copy into a tree that holds its bookings has shown room.
   */
  private static double memoryCapacity(Model m) {
    return m.maxCached;
  }

  /**
   * The leading blocks of a request of {@code count} blocks that a worker's active requests already pin, from the
   * booking digest's matched depth {@code depth} ({@link LoadTracker#activeDepth}) and the index's exact GPU
   * overlap {@code gpuOverlap}. The digest checks only every {@link LoadTracker#SAMPLE}th block and the last, so a
   * prefix an active request shares that ends between two checked blocks matches only up to the first of them, and
   * up to {@code SAMPLE - 1} blocks the worker does pin were counted as this request's new ones. Where the digest
   * matched a checked block and the worker's GPU holds the prompt beyond it, the blocks before the next checked
   * block (which did not match, so no active request holds the prefix through it) are taken as pinned, as far as
   * the GPU holds them: an active request holds the prefix through the matched block, and a prefix's blocks
   * after it are cached there. With nothing matched there is no active request of the prefix to count on (the
   * GPU's copy may be a warm prefix nobody pins). Without this, a request joining a holder whose active requests
   * share a prefix ending inside a stride was predicted to pin up to 7 more blocks than it does, enough for a
   * whole finish of memory wait (a service time) at a worker with room.
   */
  static int sharedWithActive(int depth, int gpuOverlap, int count) {
    if (depth <= 0 || depth >= count || gpuOverlap <= depth) {
      return Math.max(0, depth);
    }
    int nextChecked = Math.min(depth + LoadTracker.SAMPLE - 1, count - 1);
    return Math.min(gpuOverlap, nextChecked);
  }

  /**
   * Whether the memory wait is left out for candidate {@code i}: its cache is not known to be full, its engine has
   * not reported its load yet, and its largest tree holds the {@code booked} blocks already booked there (times the
   * footprint), so everything it was sent so far has found room.
   *
   * <p>Before the first report the largest tree is the only evidence of a cache's size, and while the tree holds
   * every booking it is evidence of room, not of a limit: it is as large as what the worker was sent, because that
   * is all it was sent. Taking it as the size anyway predicted a whole finish of memory wait for any request joining
   * a worker with one request active: at 6 workers, c8, 7 kinds, at 0.77 s (the first completions, before the first
   * report at 1 s), a holder with a 156-block tree and 148 blocks booked was predicted to wait 0.77 s for a 21-block
   * tail and was passed over for a cold copy, in two of the main job's three runs. Where the bookings already exceed
   * the tree (the first instant of a loaded cold start, see {@link #memoryCapacity}) the wait is still predicted.
   * Once the engine reports, the rule is as before: a report says how full the cache is, and the largest tree then
   * bounds the size the wait assumes until the cache is known full (leaving the wait out after the first report
   * too, until the cache is known full, let requests pile onto workers whose trees grew with them: max/mean load
   * 1.39 for the Zipf scenario and 1.41 with a worker out and back, at seed 1).
   */
  static boolean treeHoldsItsBookingsBeforeAnyReport(Candidates c, int i, Model m, long booked) {
    return !m.filled && c.engineLoad(i) == null && !(booked * m.footprint > memoryCapacity(m));
  }

  /**
   * How many of candidate {@code i}'s {@code active} requests must finish, in no particular order, before
   * {@code over} blocks are free: the smallest {@code k} whose expected freed blocks reach it. A block held by
   * {@code h} requests is freed once all {@code h} are among the {@code k} finished, with probability
   * {@code k/A x (k-1)/(A-1) x ... x (k-h+1)/(A-h+1)} (drawing without replacement); the {@code unbooked} blocks
   * (outputs, partial blocks: one holder each) are freed in proportion, {@code k/A}. At most {@code active}: once
   * all have finished, everything is free.
   */
  static double finishing(Candidates c, int i, int active, double unbooked, double over) {
    if (freed(c, i, active, unbooked, active) < over) {
      return active;
    }
    double lo = 0;
    double hi = active;
    for (int iteration = 0; iteration < 24; iteration++) {
      double mid = (lo + hi) / 2;
      if (freed(c, i, active, unbooked, mid) >= over) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  /** Expected blocks freed once {@code k} of the {@code active} requests have finished; see {@link #finishing}. */
  private static double freed(Candidates c, int i, int active, double unbooked, double k) {
    double total = unbooked * k / active;
    double all = 1; // probability that all h holders of a block are among the k finished
    int top = Math.min(active, LoadTracker.MAX_HOLDERS);
    for (int h = 1; h <= top; h++) {
      all *= Math.max(0, (k - h + 1) / (active - h + 1));
      if (all == 0) {
        break;
      }
      total += c.holderBlocks(i, h) * all;
    }
    return total;
  }

  /**
   * Learns from an engine's report when it arrives (see {@link ReportLearning}): whether its cache is full
   * ({@link #learnFullFromReport}) and how many blocks it pins per block booked ({@link #learnFootprint}).
   *
   * <p>A report is a fact about the worker at one instant, so it is compared with what was booked at that instant,
   * the router's own bookings and its peers' alike. Compared at a selection instead, with that selection's request
   * and the bookings its replica's last selection had left, N gateway replicas read the same report at different
   * moments and learned different footprints and "full" flags, so their memory models, and their choices, drifted
   * apart (4 synced replicas at concurrency 24,
   * 24 kinds, seeds 1-5: warm p99 323 ms against one router's 170; with both learnings disabled, four replicas
   * reproduced one router). Learned here, every replica learns the same from the same report.
   */
  @Override
  public synchronized void loadReported(WorkerId worker, EngineLoad load, long bookedBlocks, long cachedBlocks) {
    Model m = models.get(worker);
    if (m == null || Double.isNaN(meanPromptBlocks)) {
      return; // not a candidate yet: no prompt to compare the report with
    }
    learnTree(m, cachedBlocks);
    learnFullFromReport(load, m, meanPromptBlocks);
    learnPinnedError(load, m, bookedBlocks, meanPromptBlocks, config.learningWindow());
    learnFootprint(load, m, bookedBlocks, meanPromptBlocks);
    learnGrowth(load, m, bookedBlocks, meanPromptBlocks, config.learningWindow());
  }

  /**
   * The blocks a worker's engine pins with {@code booked} blocks booked there, at {@code nowNanos}: the bookings
   * times the average footprint ({@link #learnFootprint}), or, where its decoding requests have grown more output
   * than that average holds, the bookings times the footprint per booked block plus that output
   * ({@link #learnGrowth}).
   *
   * <p>Each bound is right where the other is wrong. The average prices every request's output at its mean over
   * the window, so it misses a worker whose requests happen to decode long (the case the growth fit is for); the
   * growth term prices only what has been decoded so far, so a worker whose requests just began looks emptier than
   * it will be during the stay of the request being placed (their output only grows until they finish): taken
   * alone it raised preemptions at 6 workers, c24, 48 multi-turn conversations from 27 / 25 / 23 / 25 / 27 to 39 /
   * 37 / 29 / 36 / 31 (seeds 1-5), and the suite's misses over seeds 1-5 were 30 against 26 with the larger of the
   * two. The average alone is used until the fit is determined and while it finds no growth (a fit without growth
   * is a ratio of pinned to booked blocks, which the footprint measures already).
   */
  static double pinnedBlocks(Model m, long booked, long nowNanos) {
    double average = booked * m.footprint;
    if (!(m.outputRate > 0)) {
      return average;
    }
    return Math.max(average, booked * m.growthFootprint + m.outputRate * decodeAgeSeconds(m, nowNanos));
  }

  /**
   * Whether an engine report measures the blocks pinned for what is booked, which the footprint, the growth fit and
   * the estimate's error learn from: the cache is known full (its largest tree is its size, so usage converts to
   * blocks), nothing waits (a waiting request is booked but holds no blocks yet), and more than a mean prompt
   * ({@code promptBlocks}) is booked (less is too little for a meaningful ratio).
   */
  static boolean measuresPinned(EngineLoad load, Model m, long booked, double promptBlocks) {
    return m.filled && load.waiting() == 0 && !(booked <= promptBlocks);
  }

  /**
   * Learns how far {@link #pinnedBlocks} is off what the engine pins, from an engine report against the blocks booked
   * at the report's instant ({@code booked}): the squared difference between the reported pinned blocks (usage times
   * the cache size) and the estimate before this report updates the footprint and the growth fit (an out-of-sample
   * error), over an exponential window of the footprint's length, and starting from the first report's. The same
   * reports as the footprint are used (cache known full, nothing waiting, more booked than a mean prompt).
   *
   * <p>The error is the estimate's, whatever its cause: the booking digest counts the last stride of a shared prefix
   * once per holder and the output a decoding request grows is not booked, and the two cancel only on average. At 6
   * workers, c16, 7 kinds, seed 1, the estimate at selections was off by a standard deviation of 2.4 to 5.9 blocks
   * (1 to 7 requests active), and the holder with 7 active that took a hit at 20.56 s had 3.7 blocks to spare by the
   * estimate and 3 too few in fact: the request waited 187 ms for a finish, where another holder, idle, was
   * predicted 16.7 ms.
   */
  static void learnPinnedError(EngineLoad load, Model m, long booked, double promptBlocks, int learningWindow) {
    if (!measuresPinned(load, m, booked, promptBlocks)) {
      return;
    }
    double error = load.kvCacheUsage() * m.maxCached - pinnedBlocks(m, booked, load.observedAtNanos());
    double squared = error * error;
    m.pinnedSquaredError = Double.isNaN(m.pinnedSquaredError) ? squared
        : m.pinnedSquaredError + (squared - m.pinnedSquaredError) * Math.min(1, 8.0 / learningWindow);
  }

  /**
   * The probability that a worker whose estimated pinned blocks exceed its cache by {@code over} blocks (below 0:
   * that many to spare) makes a request wait for memory, where the estimate's mean squared error against the
   * engine's reports is {@code squaredError} ({@link #learnPinnedError}): the chance that the blocks pinned in fact
   * exceed the cache, for a normal error with that variance. The memory wait is weighed by it, so that the predicted
   * TTFT is the expected one under the estimate's measured error; without an error measured yet (NaN or 0), the wait
   * counts whole where the estimate exceeds the cache and not at all elsewhere, as the estimate alone says.
   */
  static double memoryWaitProbability(double over, double squaredError) {
    if (!(squaredError > 0)) {
      return over > 0 ? 1 : 0;
    }
    return normalCdf(over / Math.sqrt(squaredError));
  }

  /**
   * The standard normal distribution function at {@code z}, from the error function's rational approximation in
   * Abramowitz and Stegun, formula 7.1.26 (absolute error under 1.5e-7).
   */
  static double normalCdf(double z) {
    double x = Math.abs(z) / Math.sqrt(2);
    double t = 1 / (1 + 0.3275911 * x);
    double poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
    double erf = 1 - poly * Math.exp(-x * x);
    return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
  }

  /** The summed decode age, in seconds, of the requests decoding on the worker at {@code nowNanos}. */
  static double decodeAgeSeconds(Model m, long nowNanos) {
    if (m.decoding == 0) {
      return 0;
    }
    return Math.max(0, (double) m.decoding * (nowNanos - m.decodeEpoch) - m.decodeBookedSum
        - m.decodeFirstTokenSum) / 1e9;
  }

  /**
   * Learns how a worker's pinned KV blocks grow with its requests' output, from an engine report against the blocks
   * booked at the report's instant ({@code booked}) and the summed decode age of the requests decoding there: a
   * decoding sequence appends one token per engine step, so the blocks it pins beyond its booked prompt grow with
   * the time since its first token, and the fit {@code pinned = f x booked + r x age} separates the per-block
   * footprint {@code f} (partial blocks, the digest's overcount) from the output rate {@code r}, in blocks per second
   * of decode age. The average footprint alone ({@link #learnFootprint}) prices every request's output as the mean
   * one, so a worker whose requests happen to decode long looks as empty as one whose requests just began: with
   * output lengths log-uniform over 16-1,024 tokens, a holder of 8 requests that had decoded 2,559 tokens (160
   * blocks, the average predicting 79) was predicted 571 blocks of 584 with the next request, was full, and preempted
   * (6 workers, c16, 12 kinds, seed 2: p99 465 ms against kvAware's 79). The same reports as the footprint are used
   * (cache known full, nothing waiting, more booked than a mean prompt); {@code f} is kept within [1, 4] as the
   * footprint is, {@code r} at 0 or more, and the fit is used once booked blocks and decode age are not collinear
   * and where it finds growth ({@link #pinnedBlocks}). Its window is twice the footprint's (16 reports at the default
   * learning window of 64, where the footprint moves by 8 / 64 per report): two parameters need more reports to
   * separate than one ratio does, and at one report a second a worker's rate is still followed within a quarter
   * minute.
   */
  static void learnGrowth(EngineLoad load, Model m, long booked, double promptBlocks, int learningWindow) {
    if (!measuresPinned(load, m, booked, promptBlocks)) {
      return;
    }
    double y = load.kvCacheUsage() * m.maxCached;
    double a = decodeAgeSeconds(m, load.observedAtNanos());
    double keep = Math.max(0, 1 - 4.0 / learningWindow);
    m.gbb = m.gbb * keep + (double) booked * booked;
    m.gba = m.gba * keep + booked * a;
    m.gaa = m.gaa * keep + a * a;
    m.gby = m.gby * keep + booked * y;
    m.gay = m.gay * keep + a * y;
    double det = m.gbb * m.gaa - m.gba * m.gba;
    if (!(det > 1e-3 * m.gbb * m.gaa)) {
      return; // booked blocks and decode age move together: the fit cannot tell their shares apart
    }
    double f = (m.gby * m.gaa - m.gay * m.gba) / det;
    double r = (m.gay * m.gbb - m.gby * m.gba) / det;
    if (f < 1 || f > 4) {
      f = Math.max(1, Math.min(4, f));
      r = (m.gay - f * m.gba) / m.gaa;
    }
    if (r < 0) {
      r = 0;
      f = Math.max(1, Math.min(4, m.gby / m.gbb));
    }
    m.growthFootprint = f;
    m.outputRate = r;
  }

  /**
   * Learns the largest cached tree seen on the worker, at a selection or when a report arrives (the report is then
   * compared with the tree at its instant): once the tree shrank, the engine evicted, so its largest tree is its
   * capacity.
   */
  private static void learnTree(Model m, long cached) {
    if (cached < m.maxCached) {
      m.filled = true;
    }
    m.maxCached = Math.max(m.maxCached, cached);
  }

  /**
   * Learns that a worker's cache is full before the index has seen its tree shrink. The index sees a shrink only
   * between two selections, and at a cold start the first selections after the caches filled can already find them
   * full, so for the first seconds of a loaded cluster the memory wait was not modelled at all (6 workers, c24 and
   * c32: requests placed on workers pinning more blocks than they hold waited a whole service time, over a second).
   * An engine that reports waiting requests while its free blocks could not hold a prompt of the mean size routed
   * lately ({@code promptBlocks}) is waiting for KV memory: every block is pinned or cached, so the largest tree seen
   * is its capacity. The free blocks are {@code (1 - usage) x capacity}, and since the pinned blocks
   * ({@code usage x capacity}) are cached blocks, the capacity is at most {@code tree / usage}: the test uses that
   * bound, so a small tree early on (a cache mostly empty) is never taken for a full one.
   */
  static void learnFullFromReport(EngineLoad load, Model m, double promptBlocks) {
    if (m.filled || load.waiting() == 0 || !(load.kvCacheUsage() > 0)) {
      return;
    }
    double usage = load.kvCacheUsage();
    if ((1 - usage) * m.maxCached / usage < promptBlocks) {
      m.filled = true;
    }
  }

  /**
   * Learns how many blocks the engine pins per block the router booked (output tokens and partial blocks, which the
   * router does not book, make it above 1), from an engine report against the blocks booked on the worker at the
   * report's instant, {@code booked}. A report with requests waiting is not used: a waiting request is booked but
   * holds no blocks yet, so the ratio would not be the footprint of what is booked; nor is one with less booked
   * than a prompt of the mean size ({@code promptBlocks}), too little for a meaningful ratio. It is kept at 1 or
   * more, although the booking digest counts a shared prefix's last stride of {@link LoadTracker#SAMPLE} blocks once
   * per holder and can book more than the engine pins: letting it fall to 0.5 cost more than it gained (43
   * scenarios at seeds 1-3, misses 29 -> 30, p50 geometric mean 0.747 / 0.756 / 0.762 -> 0.767 / 0.756 / 0.770 of
   * {@code kvAware}'s).
   *
   * <p>Compared at the report's instant, a report counts the blocks of requests that closed just before a
   * selection as the bookings no longer do (a closed-loop client sends its next request the moment the previous one
   * completes); a comparison at the selection that read the report biased the footprint up (at 3 workers, c16,
   * 7 kinds, seed 1, by 14 blocks at selection, enough to predict a whole finish of memory wait where the engine
   * had room).
   */
  void learnFootprint(EngineLoad load, Model m, long booked, double promptBlocks) {
    if (!measuresPinned(load, m, booked, promptBlocks)) {
      return;
    }
    double observed = load.kvCacheUsage() * m.maxCached / booked;
    observed = Math.max(1, Math.min(4, observed));
    m.footprint += (observed - m.footprint) / config.learningWindow() * 8;
  }

  /**
   * Learns the mean prompt size, in blocks, of the requests routed lately (this router's and its peers', an
   * exponential window of {@code learningWindow} selections): what a waiting request needs ({@link
   * #learnFullFromReport}) when a report arrives, when there is no request at hand.
   */
  private void learnPromptBlocks(int blocks) {
    meanPromptBlocks = Double.isNaN(meanPromptBlocks) ? blocks
        : meanPromptBlocks + (blocks - meanPromptBlocks) * (1 - keep);
  }

  /**
   * Whether tied candidate {@code i} is preferred to {@code j}. Between two {@code holders} of the prompt's longest
   * cached prefix: fewer prompt tokens waiting for a first token, then the less of its engine step in progress left
   * to wait out ({@link #stepLeftNanos}), then fewer active requests, then {@linkplain #furtherIntoItsStep further
   * into its current engine step}. Then (and between
   * others, where the tie decides where a copy or a new prefix lives, not which holder serves it): fewer new
   * prefixes placed lately, then the higher rendezvous hash of the prefix.
   */
  private boolean breaksTie(Candidates c, int i, int j, long key, boolean holders) {
    if (holders) {
      int cmp = Long.compare(c.prefillTokens(i), c.prefillTokens(j));
      if (cmp == 0) {
        cmp = Double.compare(
            stepLeftNanos(c.activeRequests(i), byCandidate[i].lastStepEndAt, c.nowNanos(), stepNanos),
            stepLeftNanos(c.activeRequests(j), byCandidate[j].lastStepEndAt, c.nowNanos(), stepNanos));
      }
      if (cmp == 0) {
        cmp = Integer.compare(c.activeRequests(i), c.activeRequests(j));
      }
      if (cmp == 0) {
        cmp = furtherIntoItsStep(byCandidate[i], byCandidate[j]);
      }
      if (cmp != 0) {
        return cmp < 0;
      }
    }
    double pi = placements.get(c.worker(i).id());
    double pj = placements.get(c.worker(j).id());
    if (Math.abs(pi - pj) > 1e-9) {
      return pi < pj;
    }
    return Long.compareUnsigned(Policies.rendezvous(key, c.worker(i).id()),
        Policies.rendezvous(key, c.worker(j).id())) > 0;
  }

  /**
   * Between two tied candidates that hold different amounts of the prompt: positive if {@code i} holds more than
   * {@code j}, negative if less, 0 if the same (then the other tie rules decide).
   *
   * <p>A tie means the cost cannot tell the two apart within one engine step, so this request's TTFT does not
   * choose between them; what differs is what the choice leaves behind. Sending it to the worker that holds less
   * copies the prefix there: the copy takes cache room the cost prices only once that cache is known to be full
   * (and not at all in a cache that looks roomy because it is still filling), and it leaves the holder's copy
   * unused. The holder serves it without a copy. Before this rule these ties went to the worker that took the
   * fewest new prefixes lately, which is how copies spread: with the tie tolerance fitted from a first burst's
   * queueing (an intercept of 92 ms at 6 workers, c32, 12 kinds, where one step takes 5-8 ms), a holder 26 ms
   * cheaper than a cold copy tied with it and lost. A copy still happens whenever the cost or a bound calls for
   * it: when the holder is dearer by more than a step, or passed over by the tail guard or a load bound.
   */
  private int holdsMoreInATie(Candidates c, int i, int j, int maxHitBlocks) {
    return Double.compare(hit(c, i, maxHitBlocks), hit(c, j, maxHitBlocks));
  }

  /**
   * Negative if the worker of model {@code i} is further into its current engine step than that of {@code j}: the
   * router saw its last step end (a first token or a completion) earlier; 0 if both are unknown or equal.
   *
   * <p>An engine schedules a new request at its next step boundary, so a request sent to a busy worker first waits
   * out the step in progress: a whole step if that step has just begun, almost nothing if it is about to end. A
   * worker that has just returned a token (a first token, or a request's last) has just begun its next step. A
   * closed-loop client sends its next request the moment its previous one completes, so without this rule the
   * request goes back to the worker that just finished it (that worker now has the fewest active requests) and
   * waits a whole step there: 3 workers, c8, 2 kinds, 691 of 1,000 requests waited a whole decode step, p50 22 ms
   * against {@code kvAware}'s 20. The time since the last step end is the best signal the router has of the phase
   * (an older one means further into the step, or idle); it outweighs the active requests, each of which adds only
   * its decode to the step (a small part of one). Spreading holders' requests by phase also cycles through the
   * holders like a round robin, which balances load among them.
   */
  private static int furtherIntoItsStep(Model i, Model j) {
    return Long.compare(i.lastStepEndAt, j.lastStepEndAt);
  }

  /**
   * The expected time, in nanoseconds, until a holder's engine step in progress ends, which a request sent there
   * waits out before its own step begins: 0 for an idle worker ({@code active} 0); {@code step - elapsed} while the
   * router saw the worker end a step ({@code lastStepEndAt}, a first token or completion) less than one
   * {@code step} ago; and half a step once that was a step or more ago, or never.
   *
   * <p>The router sees a worker end a step only when it emits a first token or a completion, not at each decode
   * step in between. Within one step of such an end the phase is known: the worker is in the step that began
   * then. Beyond it the router has missed the step ends since, so the time since the last one it saw says nothing
   * of where the worker is in its current step: the wait is uniform over a step, half a step on average, for
   * every such holder alike. The rule before ranked holders by that time whatever its age (the one seen longest
   * ago won, as if further into its step), so between two holders of unknown phase it chose by noise and let the
   * active count, which decides how long this request's own step is (each decoding sequence adds its decode to
   * it, about 1 ms of a 5.5-7.5 ms step in the simulator), decide only exact ties. At 6 workers, c8, 2 kinds, seed
   * 2, this request's first step carried 0.98 decoding sequences on average against {@code kvAware}'s 0.64 (which
   * sends it to the holder with the fewest decode blocks), 0.35 ms more per hit, and the median TTFT was 16.1 ms
   * against 15.4. With this estimate, a holder that has just begun a step (a whole step left) still loses to one of
   * unknown phase, and between holders of unknown phase the one with fewer active requests wins
   * ({@link #breaksTie}). {@code step} is this selection's tie tolerance ({@link #tieTolerance}): the smallest fitted
   * intercept, the fixed cost of a step, or the prefill spread where the fit clamps that at 0 (0 when neither is
   * known, which leaves the active count to decide).
   */
  static double stepLeftNanos(int active, long lastStepEndAt, long nowNanos, double step) {
    if (active == 0) {
      return 0;
    }
    if (lastStepEndAt != Long.MIN_VALUE) {
      double elapsed = nowNanos - lastStepEndAt;
      if (elapsed < step) {
        return step - elapsed;
      }
    }
    return step / 2;
  }

  /**
   * The queued prefill time left before this request's own at a worker, in nanoseconds: {@code queued} (the fitted
   * time of the prompt tokens routed there without a first token yet) less what the prompt at the head of the queue
   * has computed since it began ({@code startedAt}, see {@code Model.prefillStartedAt}), and at least one engine
   * {@code step} (at least 1 ns), never more than {@code queued}; all of {@code queued} if the start is unknown.
   *
   * <p>The router books a prompt's prefill until its first token, so it counts the head of a queue whole however
   * much of it the engine has computed. An engine prefills its queue in arrival order, so the head began when it
   * was sent to a worker with nothing queued, or at the previous prompt's first token (the step that ended that one
   * starts the next), and every nanosecond since is prefill done. On the Mooncake trace a holder is typically
   * computing one 20-50k-token prompt for a second or more: counted whole, the wait at such holders was
   * over-predicted (measured over predicted first-token time 0.82 / 0.77 / 0.63 for chosen workers with under 20k,
   * 20-50k and over 50k tokens queued, tight cache), and requests recomputed their prefix cold elsewhere. The floor
   * of one step: until its first token is seen, the step that ends the head is still to come, and a request sent
   * there waits for it; without the floor, a holder whose queued tail was due looked as if it made nobody wait,
   * which exempts it from the bound in active requests ({@link #holdsItWithoutAWait}), and on the article's grid
   * (6 workers, c8, 2 kinds, seed 1) the hot prefix kept one holder with 6 active requests (p99 25 -> 38 ms).
   */
  static double queueLeftNanos(double queued, long startedAt, long now, double step) {
    if (!(queued > 0) || startedAt == Long.MIN_VALUE) {
      return queued;
    }
    return Math.max(Math.min(queued, Math.max(1, step)), queued - Math.max(0, now - startedAt));
  }

  /**
   * Learns where the prefill at the head of a worker's queue began, from the prompt tokens routed there without a
   * first token ({@code queued}) at a selection: a queue that was empty at the policy's last look and is not now
   * began in between, by a peer replica's booking, at an instant this router did not see, so it is taken to begin
   * now (nothing is credited to it).
   */
  static void learnQueueStart(Model m, long queued, long now) {
    if (queued > 0 && m.queueSeen == 0) {
      m.prefillStartedAt = now;
    }
    m.queueSeen = queued;
  }

  /** The worker's mean request duration, or 0 (no balancing moves) before one has completed. */
  private static double serviceNanos(Model m) {
    return Double.isNaN(m.serviceNanos) ? 0 : m.serviceNanos;
  }

  /**
   * Blocks candidate {@code i} can serve from cache: held or being computed there, at most all but the last token,
   * and at most those that survive the prompts queued there (see {@link #survivesQueuedPrefills}).
   */
  private double hit(Candidates c, int i, int maxHitBlocks) {
    return Math.min(indexedHit(c, i, maxHitBlocks), survives[i]);
  }

  /** The blocks credited as cached at candidate {@code i} from the index alone (see {@link #hit}). */
  private double indexedHit(Candidates c, int i, int maxHitBlocks) {
    int gpu = Math.max(c.gpuOverlapBlocks(i), c.activeOverlapBlocks(i));
    int any = Math.max(c.overlapBlocks(i), gpu);
    return Math.min(maxHitBlocks, gpu + config.hostOverlapCredit() * (any - gpu));
  }

  /**
   * The blocks of the request's cached prefix at candidate {@code i} that survive the prefills queued there before
   * it ({@link #survivingBlocks}, from the worker's LRU model of warm prefixes), or {@code +inf} where nothing is
   * predicted evicted (the cache is not known full, nothing is queued, the queue's new blocks fit in the room the
   * tree has not filled, the prefix is not in the model, or active requests pin all of it).
   *
   * <p>An engine allocates a prompt's blocks when it schedules the prompt and reports the evictions only when the
   * step ends, so the index still shows a prefix that a prefill in progress (or queued) is about to take: the
   * queue's new blocks beyond the tree's room take the free queue's head. Ahead of this prefix there are the warm
   * prefixes used before it, but only those freed: a prefix touched within the worker's mean service time
   * ({@code serviceNanos}, booking to close) is still held by the request that touched it, so it is not in the free
   * queue (with no service time known, no prefix is known freed and none is counted ahead); and never more than
   * the free blocks less this prefix ({@link #pinnedBlocks} with the booked blocks: the model keeps prefixes the
   * engine has already evicted, and the free queue holds only what active requests do not pin). Both were found
   * at 6 workers, c16, Zipf over 24 kinds, seed 1, where two requests joined their prefix's holder 15-20 ms after
   * a cold prompt of another kind had been placed there, found none of its 127 blocks and waited 129-138 ms behind a
   * prefill they then repeated: counting every prefix routed before theirs as free and ahead of it, the model had
   * put 127 and 325 blocks ahead and predicted 110 and 127 blocks kept (see docs/ROUTING.md, "Where it misses").
   */
  static double survivesQueuedPrefills(Candidates c, int i, Model m) {
    if (!m.filled || c.prefillTokens(i) <= 0 || m.warm.isEmpty()) {
      return Double.POSITIVE_INFINITY;
    }
    long newBlocks = (c.prefillTokens(i) + c.blockSize() - 1) / c.blockSize();
    long evicted = newBlocks - Math.max(0, m.maxCached - c.cachedBlocks(i));
    if (evicted <= 0) {
      return Double.POSITIVE_INFINITY;
    }
    int blocks = c.requestBlocks();
    long before = 0;
    long recent = Double.isNaN(m.serviceNanos) ? Long.MIN_VALUE : c.nowNanos() - Math.round(m.serviceNanos);
    for (Warm e = m.oldestWarm; e != null; e = e.newer) {
      int length = e.blocks;
      if (length <= blocks && e.key == c.sequenceHash(length - 1)) {
        // Blocks active requests there pin are not in the free queue and are not evicted.
        int pinned = sharedWithActive(c.activeOverlapBlocks(i), c.gpuOverlapBlocks(i), blocks);
        if (pinned >= length) {
          return Double.POSITIVE_INFINITY;
        }
        long booked = c.decodeBlocks(i) - (blocks - c.activeOverlapBlocks(i));
        double ahead = Math.max(0, memoryCapacity(m) - pinnedBlocks(m, booked, c.nowNanos()) - length);
        return Math.max(pinned, survivingBlocks(length, (long) Math.min(before, ahead), evicted));
      }
      if (e.touchedAt < recent) {
        before += length;
      }
    }
    return Double.POSITIVE_INFINITY;
  }

  /**
   * The blocks of a warm prefix of {@code length} blocks left cached after {@code evicted} new blocks are allocated
   * in a full cache, where {@code before} blocks of warm prefixes were used less recently than it: allocation takes
   * the least recently freed blocks first, so those go first, and then this prefix's, tail first (an engine frees a
   * request's blocks tail first, so a prefix's last block is the least recently freed of it, as vLLM's free queue
   * orders them).
   */
  static long survivingBlocks(long length, long before, long evicted) {
    return Math.max(0, Math.min(length, length - (evicted - before)));
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

  /**
   * Forgets workers that are not among this selection's candidates; called only once they could make up half the
   * models, so it costs amortised O(1) per selection and the models stay O(live workers).
   */
  private void forgetDeparted(long sweep) {
    models.values().removeIf(m -> m.lastSeen != sweep);
  }

  /**
   * A peer replica's selection teaches this policy what its own would (see {@link PeerLearning}): an arrival (the
   * arrival rate behind the externality counts every replica's requests), the worker's shares of the selections
   * (recent, and served over the long window of {@link #pastItsShare}, whose selection count includes the peers'),
   * its warm prefix and a new prefix's placement. What it cannot learn from a booking is the time model: that is
   * fitted from this replica's own first tokens (a 1/N sample of the same workers' behaviour).
   */
  @Override
  public synchronized void peerBooked(WorkerId worker, int blocks, int warmBlocks, long warmKey, boolean newPrefix,
      long nowNanos) {
    learnArrivalGap(nowNanos);
    learnPromptBlocks(blocks);
    selections++; // a selection of the fleet's: the served-share window counts it (see pastItsShare)
    Model chosen = models.get(worker);
    if (chosen == null) {
      chosen = model(worker, selections);
    }
    for (Model m : models.values()) {
      m.routedShare *= keep;
      m.servedShare *= servedKeep;
    }
    chosen.routedShare += 1 - keep;
    chosen.servedShare += 1 - servedKeep; // the peer's request is load this worker serves too (see pastItsShare)
    if (warmBlocks > 0) {
      chosen.touchWarm(warmKey, warmBlocks, chosen.filled ? chosen.maxCached : Long.MAX_VALUE, nowNanos);
    }
    if (newPrefix) {
      placements.record(worker);
    }
  }

  /** A peer's first token on the worker ends one of its engine steps, as the router's own would. */
  @Override
  public synchronized void peerStepEnded(WorkerId worker, long nowNanos) {
    Model m = models.get(worker);
    if (m != null && (m.lastStepEndAt == Long.MIN_VALUE || nowNanos - m.lastStepEndAt > 0)) {
      m.lastStepEndAt = nowNanos;
      m.prefillStartedAt = nowNanos; // a first token: the next queued prompt starts
    }
  }

  /**
   * A peer's first token is an observation of the worker's first-token time as the router's own is: fitted the
   * same way, so that each of N replicas fits its time model to every replica's first tokens, not its own 1/N.
   */
  @Override
  public synchronized void peerFirstToken(WorkerId worker, long queuedPrefillTokens, int activeRequests,
      long prefillTokens, long elapsedNanos) {
    Model m = models.get(worker);
    if (m == null || elapsedNanos < 0) {
      return;
    }
    observeFirstToken(m, queuedPrefillTokens + prefillTokens, activeRequests, elapsedNanos);
  }

  /**
   * A peer's request decodes on the worker as the router's own do: its decode age counts in the worker's, so that
   * every replica prices the same growth from the same engine report (see {@link #learnGrowth}).
   */
  @Override
  public synchronized void peerDecodeStarted(WorkerId worker, long arrivedAtNanos, long firstTokenAtNanos) {
    Model m = models.get(worker);
    if (m != null) {
      decodeStarted(m, arrivedAtNanos, firstTokenAtNanos - arrivedAtNanos);
    }
  }

  /** A peer's decoding request closed: its first-token time is known here, so it is taken off exactly. */
  @Override
  public synchronized void peerDecodeEnded(WorkerId worker, long arrivedAtNanos, long firstTokenAtNanos) {
    Model m = models.get(worker);
    if (m != null && m.decoding > 0) {
      decodeEnded(m, arrivedAtNanos, firstTokenAtNanos - arrivedAtNanos);
    }
  }

  /** A request booked at {@code bookedAt} began decoding {@code firstTokenNanos} later. */
  private static void decodeStarted(Model m, long bookedAt, double firstTokenNanos) {
    if (m.decoding == 0) {
      m.decodeEpoch = bookedAt;
      m.decodeBookedSum = 0;
      m.decodeFirstTokenSum = 0;
    }
    m.decoding++;
    m.decodeBookedSum += bookedAt - m.decodeEpoch;
    m.decodeFirstTokenSum += firstTokenNanos;
  }

  /** A decoding request booked at {@code bookedAt}, {@code firstTokenNanos} before its first token, closed. */
  private static void decodeEnded(Model m, long bookedAt, double firstTokenNanos) {
    m.decodeFirstTokenSum -= firstTokenNanos;
    m.decodeBookedSum -= bookedAt - m.decodeEpoch;
    m.decoding--;
  }

  /** A peer's close gives the worker's service time as the router's own does. */
  @Override
  public synchronized void peerClosed(WorkerId worker, long elapsedNanos, long nowNanos) {
    closed(worker, nowNanos - elapsedNanos, elapsedNanos);
  }

  @Override
  public synchronized void onFirstToken(Routing routing, long elapsedNanos) {
    Model m = models.get(routing.workerId());
    if (m == null || elapsedNanos < 0) {
      return;
    }
    m.lastStepEndAt = routing.bookedAtNanos + elapsedNanos;
    learnDecodeGap(m, routing, m.lastStepEndAt, true);
    m.prefillStartedAt = m.lastStepEndAt; // the step that ended this prefill starts the next queued one
    if (!routing.decodeCounted) {
      routing.decodeCounted = true;
      decodeStarted(m, routing.bookedAtNanos, elapsedNanos);
    }
    // The queued tokens are those the cost counted (noted at selection): the fit regresses on what it predicts.
    observeFirstToken(m, routing.queuedPrefillTokens() + ownPrefillTokens(routing), routing.activeAtAdmission(),
        elapsedNanos);
  }

  private void observeFirstToken(Model m, double x, double z, long elapsedNanos) {
    m.observe(x, z, elapsedNanos, keep);
    fleet.observe(x, z, elapsedNanos, 1 - 1.0 / (config.learningWindow() * 8.0));
  }

  /**
   * The prompt tokens a request's own prefill was fitted with: the uncached tokens the cost counted for it at
   * selection ({@code Candidates.notePrefill}), so that the fit's regressor is the quantity the cost multiplies by
   * {@code b}; the router's booked prefill if the policy noted none.
   *
   * <p>The cost counts the blocks an active request is computing on the worker as cached ({@link #hit}: the engine
   * registers them as the prefill computes them, and a request scheduled after it hits them, as in vLLM v1), while
   * the router books a request's prefill against the blocks the index holds. A request joining a worker that is
   * prefilling its prefix is booked cold, and fitting its first token against that put a whole cold prompt on the
   * regressor of a request that prefilled its tail: at 6 workers, c16, 7 kinds, seed 1, the first instant's joins
   * were observed as 4,742 and 7,113 tokens in 92 ms (a cold prefill of 2,371 takes 69 ms), the fit gave
   * 10.8 us per token and a 28 ms intercept against about 28 us and 4.5 ms, and it predicted 56 ms for a cold
   * prefill measured at 70 (82 in its batch) and 22 ms for a hit measured at 13-16. Joining requests then looked dear
   * and cold copies cheap, and a cold copy batched with a join at 2.9 s was the run's 11th slowest request (86 ms
   * against {@code kvAware}'s p99 of 76).
   */
  static long ownPrefillTokens(Routing routing) {
    int noted = routing.policyPrefillTokens();
    return noted >= 0 ? noted : routing.bookedPrefillTokens;
  }

  @Override
  public synchronized void onClosed(Routing routing, long elapsedNanos) {
    Model m = models.get(routing.workerId());
    if (routing.decodeCounted && m != null && m.decoding > 0) {
      // The handle keeps no first-token time (a long would add 8 bytes to every handle): the closing request's is
      // taken to be the mean of those decoding, a few tens of milliseconds against decode ages of seconds.
      routing.decodeCounted = false;
      decodeEnded(m, routing.bookedAtNanos, m.decodeFirstTokenSum / m.decoding);
    }
    if (m != null && elapsedNanos >= 0) {
      learnDecodeGap(m, routing, routing.bookedAtNanos + elapsedNanos, false);
    }
    closed(routing.workerId(), routing.bookedAtNanos, elapsedNanos);
  }

  /** A request booked on {@code worker} at {@code bookedAtNanos} completed after {@code elapsedNanos}. */
  synchronized void closed(WorkerId worker, long bookedAtNanos, long elapsedNanos) {
    Model m = models.get(worker);
    if (m == null || elapsedNanos < 0) {
      return;
    }
    m.lastStepEndAt = bookedAtNanos + elapsedNanos;
    m.serviceNanos = Double.isNaN(m.serviceNanos) ? elapsedNanos
        : m.serviceNanos + (elapsedNanos - m.serviceNanos) / config.learningWindow();
  }

  /** Workers the policy keeps a model of, for tests. */
  synchronized int trackedWorkers() {
    return models.size();
  }

  /** The share of recent selections at which a join would have waited for memory at a worker; for tests. */
  synchronized double memoryBoundShare(WorkerId worker) {
    Model m = models.get(worker);
    return m == null ? Double.NaN : m.memoryBound;
  }

  /** The summed decode age, in seconds, of the requests decoding on a worker (this router's and peers'); for tests. */
  synchronized double decodeAgeSeconds(WorkerId worker, long nowNanos) {
    Model m = models.get(worker);
    return m == null ? Double.NaN : decodeAgeSeconds(m, nowNanos);
  }

  /** The sampled decode gaps, in nanoseconds, oldest first while fewer than {@link #DECODE_GAPS}; for tests. */
  synchronized double[] sampledDecodeGaps() {
    return java.util.Arrays.copyOf(decodeGaps, decodeGapCount);
  }

  /** The learned nanoseconds per prompt token of a worker, NaN if unknown; for tests. */
  synchronized double learnedSlope(WorkerId worker) {
    Model m = models.get(worker);
    return m == null ? Double.NaN : m.b;
  }

  @Override
  public String name() {
    return "predictedTtft";
  }
}
