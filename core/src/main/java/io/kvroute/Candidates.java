package io.kvroute;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/**
 * The workers a request may go to, with what the router knows about each; not thread-safe, and valid only during
 * the {@link RouterPolicy#select} call it is passed to (the router reuses one per selecting thread).
 *
 * <p>Loads are the router's own bookings: {@link #prefillTokens} counts prompt tokens of routed requests that have
 * not produced their first token yet; {@link #decodeBlocks} projects the blocks the worker would hold with this
 * request added, counting blocks shared by its active requests once (as Dynamo does). With a shared load
 * ({@link Router.Builder#sharedLoad}) they include the peers' bookings delivered so far and, while this router's own
 * bookings are younger than the port's delivery window, those counted once more per peer in {@link #prefillTokens}
 * and {@link #activeRequests}: the estimate of the peers' bookings no delivery has brought yet (see
 * {@link SharedLoad#peerCount}).
 */
public final class Candidates {
  private static final long[] NO_HOLDERS = new long[LoadTracker.MAX_HOLDERS + 1];

  private int size;
  private Worker[] workers = new Worker[8];
  private int[] overlap = new int[8];
  private int[] gpuOverlap = new int[8];
  private int[] activeOverlap = new int[8];
  private long[] prefill = new long[8];
  private long[] decode = new long[8];
  // holders[i]: the tracker's own row for candidate i (read, never written here), or NO_HOLDERS; valid only under the
  // admission lock, which is held from setLoad to the booking, so a row is never copied on the select path.
  private long[][] holders = new long[8][];
  private int[] active = new int[8];
  private long[] cached = new long[8];
  private @Nullable EngineLoad[] engineLoads = new EngineLoad[8];
  private double[] costs = new double[8];
  // Health as ordinals: a byte store instead of a reference store (and its G1 write barrier) per candidate.
  private byte[] health = new byte[8];
  private static final HealthState[] HEALTH_STATES = HealthState.values();
  private boolean[] approximate = new boolean[8];
  private int requestTokens;
  private int blockSize;
  private int requestBlocks;
  private @Nullable RouteRequest request;
  private @Nullable SplittableRandom random;
  private long nowNanos;
  private long[] hashes = new long[0];
  // What the policy noted of its choice for peer replicas (see notePlacement); reset per selection.
  private int noteWarmBlocks;
  private boolean noteNewPrefix;
  // The prompt tokens the policy predicts its choice will prefill (see notePrefill); -1 if it noted none.
  private int notePrefillTokens = -1;
  // The prompt tokens the policy counts as still queued before its choice's prefill (see noteQueued); -1 if none.
  private long noteQueuedTokens = -1;

  Candidates() {}

  void reset(RouteRequest request, int requestTokens, int blockSize, long[] hashes) {
    this.size = 0;
    this.hashes = hashes;
    this.request = request;
    this.requestTokens = requestTokens;
    this.blockSize = blockSize;
    this.requestBlocks = requestTokens / blockSize;
    this.noteWarmBlocks = 0;
    this.noteNewPrefix = false;
    this.notePrefillTokens = -1;
    this.noteQueuedTokens = -1;
  }

  /**
   * A built-in policy notes what its choice taught it, for peer replicas' policies to learn the same (see
   * {@link PeerLearning}): the prompt's blocks it counted as a warm prefix on the chosen worker, and whether it
   * placed a new prefix there. Package-private: only the router's own policies call it.
   */
  void notePlacement(int warmBlocks, boolean newPrefix) {
    this.noteWarmBlocks = Math.max(0, Math.min(warmBlocks, requestBlocks));
    this.noteNewPrefix = newPrefix;
  }

  /**
   * A built-in policy notes how many of the prompt's tokens it predicts the chosen worker will prefill, for its own
   * learning from the request's first token ({@code Routing.policyPrefillTokens}); clamped to the prompt.
   * Package-private: only the router's own policies call it.
   */
  void notePrefill(long tokens) {
    this.notePrefillTokens = (int) Math.max(0, Math.min(tokens, requestTokens));
  }

  int notePrefillTokens() {
    return notePrefillTokens;
  }

  /**
   * A built-in policy notes how many prompt tokens it counts as still queued on the chosen worker before this
   * request's prefill ({@code Routing.queuedPrefillTokens}, for its own learning from the first token); at most the
   * tokens routed there without a first token. Package-private: only the router's own policies call it.
   */
  void noteQueued(long tokens) {
    this.noteQueuedTokens = tokens;
  }

  long noteQueuedTokens() {
    return noteQueuedTokens;
  }

  int noteWarmBlocks() {
    return noteWarmBlocks;
  }

  boolean noteNewPrefix() {
    return noteNewPrefix;
  }

  // The peers' selections expected within the port's view delay, not in this view yet (Admission.unseenPeerSelections);
  // and the scratch for placing the burst they make with this one (Bursts; burstHead sizes all four).
  private double unseenPeerSelections;
  private double[] burstHead = new double[8];
  private double[] burstStep = new double[8];
  private int[] burstHeap = new int[8];
  private int[] burstPassed = new int[8];

  /** Sets the peers' selections expected that this view cannot show yet; under the lock, after {@link #admit}. */
  void unseenPeerSelections(double expected) {
    this.unseenPeerSelections = expected;
  }

  double unseenPeerSelections() {
    return unseenPeerSelections;
  }

  double[] burstHead() {
    if (burstHead.length < size) {
      int length = Math.max(size, 2 * burstHead.length);
      burstHead = new double[length];
      burstStep = new double[length];
      burstHeap = new int[length];
      burstPassed = new int[length];
    }
    return burstHead;
  }

  double[] burstStep() {
    return burstStep;
  }

  int[] burstHeap() {
    return burstHeap;
  }

  int[] burstPassed() {
    return burstPassed;
  }

  /** Called under the router's admission lock, before the loads are filled in. */
  void admit(SplittableRandom random, long nowNanos) {
    this.unseenPeerSelections = 0;
    this.random = random;
    this.nowNanos = nowNanos;
  }

  /** Adds an event-mode candidate; see the six-argument form. */
  void add(Worker worker, int overlapBlocks, int gpuOverlapBlocks, long cachedBlocks, @Nullable EngineLoad load) {
    add(worker, overlapBlocks, gpuOverlapBlocks, cachedBlocks, load, false);
  }

  /** Adds a candidate with what the index knows; its loads are filled in under the admission lock. */
  void add(Worker worker, int overlapBlocks, int gpuOverlapBlocks, long cachedBlocks, @Nullable EngineLoad load,
      boolean approximateMode) {
    if (size == workers.length) {
      int n = size * 2;
      workers = Arrays.copyOf(workers, n);
      overlap = Arrays.copyOf(overlap, n);
      gpuOverlap = Arrays.copyOf(gpuOverlap, n);
      activeOverlap = Arrays.copyOf(activeOverlap, n);
      prefill = Arrays.copyOf(prefill, n);
      decode = Arrays.copyOf(decode, n);
      holders = Arrays.copyOf(holders, n);
      active = Arrays.copyOf(active, n);
      cached = Arrays.copyOf(cached, n);
      engineLoads = Arrays.copyOf(engineLoads, n);
      costs = Arrays.copyOf(costs, n);
      health = Arrays.copyOf(health, n);
      approximate = Arrays.copyOf(approximate, n);
    }
    int i = size++;
    // A reference is stored only when it changed since the previous selection (see clear): most selections see
    // the same workers and loads in the same order, and a reference store costs a GC write barrier.
    if (workers[i] != worker) {
      workers[i] = worker;
    }
    overlap[i] = overlapBlocks;
    gpuOverlap[i] = gpuOverlapBlocks;
    cached[i] = cachedBlocks;
    if (engineLoads[i] != load) {
      engineLoads[i] = load;
    }
    costs[i] = Double.NaN;
    health[i] = (byte) HealthState.HEALTHY.ordinal();
    approximate[i] = approximateMode;
  }

  /** Sets candidate {@code i}'s health, read under the admission lock. */
  void setHealth(int i, HealthState state) {
    health[i] = (byte) state.ordinal();
  }

  /** Removes candidate {@code i}, keeping the others' order; a rare path (a worker left or became unhealthy). */
  void remove(int i) {
    int tail = size - i - 1;
    System.arraycopy(workers, i + 1, workers, i, tail);
    System.arraycopy(overlap, i + 1, overlap, i, tail);
    System.arraycopy(gpuOverlap, i + 1, gpuOverlap, i, tail);
    System.arraycopy(activeOverlap, i + 1, activeOverlap, i, tail);
    System.arraycopy(prefill, i + 1, prefill, i, tail);
    System.arraycopy(decode, i + 1, decode, i, tail);
    System.arraycopy(holders, i + 1, holders, i, tail);
    System.arraycopy(active, i + 1, active, i, tail);
    System.arraycopy(cached, i + 1, cached, i, tail);
    System.arraycopy(engineLoads, i + 1, engineLoads, i, tail);
    System.arraycopy(costs, i + 1, costs, i, tail);
    System.arraycopy(health, i + 1, health, i, tail);
    System.arraycopy(approximate, i + 1, approximate, i, tail);
    size--;
    workers[size] = null;
    engineLoads[size] = null;
    holders[size] = null;
  }

  /** Sets candidate {@code i}'s booked loads, with no active blocks by holder count; under the admission lock. */
  void setLoad(int i, int activeOverlapBlocks, long prefillTokens, long decodeBlocks, int activeRequests) {
    setLoad(i, activeOverlapBlocks, prefillTokens, decodeBlocks, activeRequests, NO_HOLDERS);
  }

  /**
   * Sets candidate {@code i}'s booked loads and points it at its worker's active blocks by holder count (see
   * {@link #setHolderBlocks}); under the admission lock.
   */
  void setLoad(int i, int activeOverlapBlocks, long prefillTokens, long decodeBlocks, int activeRequests,
      long[] histogram) {
    activeOverlap[i] = activeOverlapBlocks;
    prefill[i] = prefillTokens;
    decode[i] = decodeBlocks;
    active[i] = activeRequests;
    if (holders[i] != histogram) {
      holders[i] = histogram;
    }
  }

  /**
   * Points candidate {@code i} at its worker's active blocks by holder count (see
   * {@link LoadTracker#holderHistogram}), the tracker's live row: no copy, read only while the admission lock is held.
   */
  void setHolderBlocks(int i, long[] histogram) {
    holders[i] = histogram;
  }

  /**
   * Candidate {@code i}'s active blocks held by exactly {@code h} active requests (this one not included; {@code h}
   * from 1 to {@link LoadTracker#MAX_HOLDERS}, the last bucket counting at least that many): a block is freed only
   * with its last holder. Package-private: only the router's own policies read it.
   */
  long holderBlocks(int i, int h) {
    return holders[check(i)][h];
  }

  /**
   * Ends a selection. The worker, engine-load and holder references stay in place, to be compared with the next
   * selection's instead of stored again (a removed worker's {@link Worker} and a replaced {@link EngineLoad} stay
   * reachable from this thread's scratch until a later selection overwrites them, or {@link #remove} drops them).
   */
  void clear() {
    request = null;
    random = null;
    size = 0;
  }

  /**
   * The number of candidates, at least 1.
   *
   * @return the candidate count
   */
  public int size() {
    return size;
  }

  /**
   * The candidate's worker, as registered.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the worker
   */
  public Worker worker(int i) {
    return workers[check(i)];
  }

  /**
   * Consecutive prompt blocks from the start that candidate {@code i} holds, in any tier.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the block count, from 0 to {@link #requestBlocks()}
   */
  public int overlapBlocks(int i) {
    return overlap[check(i)];
  }

  /**
   * Consecutive prompt blocks from the start that candidate {@code i} holds on its GPU.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the block count, at most {@link #overlapBlocks}
   */
  public int gpuOverlapBlocks(int i) {
    return gpuOverlap[check(i)];
  }

  /**
   * Consecutive prompt blocks from the start shared with requests routed to candidate {@code i} and still active:
   * blocks it is computing or holds pinned, which KV events may not have reported yet.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the block count, from 0 to {@link #requestBlocks()}
   */
  public int activeOverlapBlocks(int i) {
    return activeOverlap[check(i)];
  }

  /**
   * Prompt tokens routed to candidate {@code i} that have not produced a first token yet.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the token count, zero or more (peers' bookings, and the estimate of those not delivered yet, included
   *     with a shared load)
   */
  public long prefillTokens(int i) {
    return prefill[check(i)];
  }

  /**
   * Blocks candidate {@code i} would hold for active requests if this request were added.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the block count, zero or more
   */
  public long decodeBlocks(int i) {
    return decode[check(i)];
  }

  /**
   * Requests routed to candidate {@code i} and not yet closed.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the request count, zero or more (peers' bookings, and the estimate of those not delivered yet, included
   *     with a shared load)
   */
  public int activeRequests(int i) {
    return active[check(i)];
  }

  /**
   * Blocks the index holds for candidate {@code i} (its cached tree size).
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the block count, zero or more
   */
  public long cachedBlocks(int i) {
    return cached[check(i)];
  }

  /**
   * The load candidate {@code i}'s engine last reported, or null.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the load, or null if none was reported (or the last scrape failed)
   */
  public @Nullable EngineLoad engineLoad(int i) {
    return engineLoads[check(i)];
  }

  /**
   * Candidate {@code i}'s health: {@link HealthState#HEALTHY} or {@link HealthState#SUSPECT}, or
   * {@link HealthState#EJECTED} when it is an ejected worker whose backoff has passed (choosing it sends the one
   * probe request).
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @return the candidate's health state, never null
   */
  public HealthState health(int i) {
    return HEALTH_STATES[health[check(i)]];
  }

  /** Whether candidate {@code i}'s overlap comes from the router's predictions rather than KV events. */
  boolean approximate(int i) {
    return approximate[i];
  }

  /**
   * Records the score a policy gave candidate {@code i}, shown when the request asked for an explanation.
   *
   * @param i the candidate's index, from 0 to {@code size() - 1}
   * @param cost the score, in the policy's own unit (lower is better for kvroute's policies)
   */
  public void recordCost(int i, double cost) {
    costs[check(i)] = cost;
  }

  double cost(int i) {
    return costs[i];
  }

  /**
   * The request's prompt length in tokens.
   *
   * @return the token count, at least 1
   */
  public int requestTokens() {
    return requestTokens;
  }

  /**
   * The router's sequence hash of the request's block {@code block}: it identifies the whole prefix up to and
   * including that block.
   *
   * @param block the block's position, from 0 to {@code requestBlocks() - 1}
   * @return the sequence hash
   */
  public long sequenceHash(int block) {
    if (block < 0 || block >= requestBlocks) {
      throw new IndexOutOfBoundsException("block " + block + " of " + requestBlocks);
    }
    return hashes[block];
  }

  /**
   * The request's full blocks.
   *
   * @return the count of full blocks, {@code requestTokens() / blockSize()}
   */
  public int requestBlocks() {
    return requestBlocks;
  }

  /**
   * The router's block size: tokens per KV block.
   *
   * @return the block size, positive
   */
  public int blockSize() {
    return blockSize;
  }

  /**
   * The request being routed.
   *
   * @return the request, with its tokens, model, adapter and options
   */
  public RouteRequest request() {
    return request;
  }

  /**
   * The router's random source; use it for every random choice so that seeded routers are reproducible.
   *
   * @return the random source; use it only during {@link RouterPolicy#select}
   */
  public SplittableRandom random() {
    return random;
  }

  /**
   * The router's ticker reading when selection started.
   *
   * @return nanoseconds, by the router's ticker
   */
  public long nowNanos() {
    return nowNanos;
  }

  private int check(int i) {
    if (i < 0 || i >= size) {
      throw new IndexOutOfBoundsException("candidate " + i + " of " + size);
    }
    return i;
  }
}
