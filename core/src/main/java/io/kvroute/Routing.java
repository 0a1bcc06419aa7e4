package io.kvroute;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of one {@link Router#select} call and the handle of the request's booked load; thread-safe:
 * {@link #firstToken()} and {@link #close()} may be called from any thread, any number of times.
 *
 * <p>Call {@link #firstToken()} when the first output token arrives (releases the request's pending prompt tokens)
 * and {@link #close()} when it completes, fails or is cancelled (releases its blocks). A handle never closed is
 * released when its booking expires (see {@link Router.Builder#bookingTimeout}).
 */
public final class Routing implements AutoCloseable {
  static final int OPEN = 0;
  static final int PREFILLED = 1;
  static final int CLOSED = 2;

  private final Admission admission;
  private final WorkerRegistry.WorkerState state;
  private final int matchedBlocks;
  private final int gpuMatchedBlocks;
  private final int promptTokens;
  final long bookedPrefillTokens;
  final long bookedAtNanos;
  final long[] hashes;
  final int hashCount;
  private final String policy;
  private final List<CandidateScore> explanation;
  private static final VarHandle PHASE;
  static final VarHandle RELEASE_QUEUED;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      PHASE = lookup.findVarHandle(Routing.class, "phase", int.class);
      RELEASE_QUEUED = lookup.findVarHandle(Routing.class, "releaseQueued", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private volatile int phase = OPEN; // also accessed through PHASE, which saves an AtomicInteger per request
  // What the router has released so far; guarded by the router's admission lock.
  boolean prefillReleased;
  boolean blocksReleased;
  // Whether this request is an ejected worker's half-open probe; set before the handle is published.
  boolean probe;
  // The chosen worker's load when this request was admitted (see admittedLoad), for policies that learn from
  // outcomes; set before the handle is published.
  long admittedLoad;
  // The admission's list of open bookings, oldest first; guarded by the admission lock.
  @Nullable Routing older;
  @Nullable Routing newer;
  boolean tracked;
  // The admission's id of this booking, shared with peer replicas; 0 until booked. Guarded by the admission lock.
  long bookingId;
  // Whether a policy that tracks decode ages counts this request as decoding (see PredictedTtftPolicy#onFirstToken);
  // a boolean fits the handle's alignment padding (a long would add 8 bytes). Guarded by that policy.
  boolean decodeCounted;
  // The admission's queue of handles to release is a stack linked through this field (see Admission.released), so
  // that a release allocates no queue node: whether this handle is on it (through RELEASE_QUEUED), and the next one.
  volatile boolean releaseQueued;
  @Nullable Routing nextRelease;

  Routing(Admission admission, WorkerRegistry.WorkerState state, int matchedBlocks, int gpuMatchedBlocks,
      int promptTokens, long bookedPrefillTokens, long bookedAtNanos, long[] hashes, int hashCount, String policy,
      List<CandidateScore> explanation) {
    this.admission = admission;
    this.state = state;
    this.matchedBlocks = matchedBlocks;
    this.gpuMatchedBlocks = gpuMatchedBlocks;
    this.promptTokens = promptTokens;
    this.bookedPrefillTokens = bookedPrefillTokens;
    this.bookedAtNanos = bookedAtNanos;
    this.hashes = hashes;
    this.hashCount = hashCount;
    this.policy = policy;
    this.explanation = explanation;
  }

  /**
   * Packs a worker's load at admission, and the prefill the policy predicted, into one long (one field instead of
   * three keeps the handle 8 bytes smaller): prompt tokens queued there (up to 2^27 - 1) in the high 27 bits, its
   * active requests (up to 2^16 - 1) in the next 16, and one more than the prompt tokens the policy predicted this
   * request would prefill there (up to 2^21 - 2; 0 if it noted none, see {@code Candidates.notePrefill}) in the low 21.
   * Larger values are clamped.
   */
  static long admittedLoad(long queuedPrefillTokens, int activeRequests, int policyPrefillTokens) {
    long queued = Math.min(Math.max(0, queuedPrefillTokens), (1L << 27) - 1);
    long active = Math.min(Math.max(0, activeRequests), (1 << 16) - 1);
    long prefill = Math.min(Math.max(0, policyPrefillTokens + 1L), (1 << 21) - 1);
    return queued << 37 | active << 21 | prefill;
  }

  /**
   * Prompt tokens queued on the chosen worker, not yet prefilled, when this request was admitted: as the policy
   * counted them if it noted them ({@code Candidates.noteQueued}), else the router's bookings without a first token.
   */
  long queuedPrefillTokens() {
    return admittedLoad >>> 37;
  }

  /** Requests active on the chosen worker when this request was admitted. */
  int activeAtAdmission() {
    return (int) ((admittedLoad >>> 21) & ((1 << 16) - 1));
  }

  /** The prompt tokens the policy predicted this request would prefill (Candidates.notePrefill), -1 if none noted. */
  int policyPrefillTokens() {
    return (int) (admittedLoad & ((1 << 21) - 1)) - 1;
  }

  /**
   * The chosen worker, as registered when it was chosen.
   *
   * @return the worker, with its endpoints and labels
   */
  public Worker worker() {
    return state.worker;
  }

  /**
   * The chosen worker's id.
   *
   * @return the id, never null
   */
  public WorkerId workerId() {
    return state.worker.id();
  }

  /**
   * Consecutive prompt blocks from the start the chosen worker was known to hold, in any tier.
   *
   * @return the block count, zero or more
   */
  public int matchedBlocks() {
    return matchedBlocks;
  }

  /**
   * Consecutive prompt blocks from the start the chosen worker was known to hold on its GPU.
   *
   * @return the block count, at most {@link #matchedBlocks()}
   */
  public int gpuMatchedBlocks() {
    return gpuMatchedBlocks;
  }

  /**
   * Prompt tokens the chosen worker should find cached: matched blocks times the block size, but at most the full
   * blocks before the prompt's last token. An engine must compute the last prompt token to sample the first output
   * token, so vLLM looks up at most {@code (promptTokens - 1) / blockSize} blocks: a fully cached 368-token prompt
   * (23 blocks of 16) reports 352 cached tokens, not 368.
   *
   * @return the token count, from 0 to {@code promptTokens() - 1}
   */
  public int predictedCachedTokens() {
    int blockSize = admission.blockSize; // not a field here: it would cost 8 bytes per handle
    return Math.min(matchedBlocks, (promptTokens - 1) / blockSize) * blockSize;
  }

  /**
   * The prompt length in tokens.
   *
   * @return the token count, at least 1
   */
  public int promptTokens() {
    return promptTokens;
  }

  /**
   * The policy's name.
   *
   * @return the policy's name, as {@link RouterPolicy#name()} gave it
   */
  public String policy() {
    return policy;
  }

  /**
   * Every candidate's overlap, load and cost, if the request asked for an explanation; else empty.
   *
   * @return an immutable list, one entry per candidate (and per worker left out for health); empty unless explained
   */
  public List<CandidateScore> explanation() {
    return explanation;
  }

  /**
   * Whether {@link #close()} was called or the booking expired.
   *
   * @return true once closed or expired
   */
  public boolean isClosed() {
    return phase == CLOSED;
  }

  WorkerRegistry.WorkerState state() {
    return state;
  }

  /**
   * Marks the first output token: the worker's pending prompt tokens for this request are released. If the worker
   * is not {@link HealthState#HEALTHY}, this also reports a success for it ({@link Router#reportSuccess}): a token
   * proves it alive, and readmits it if this request was its half-open probe.
   */
  public void firstToken() {
    if (PHASE.compareAndSet(this, OPEN, PREFILLED)) {
      admission.released(this);
      if (state.health.state() != HealthState.HEALTHY) {
        admission.health().success(state); // a token arrived: the worker is alive
      }
      admission.health().firstTokenArrived(this);
    }
  }

  /** Releases everything booked for this request. Idempotent. */
  @Override
  public void close() {
    if ((int) PHASE.getAndSet(this, CLOSED) != CLOSED) {
      admission.released(this);
      admission.health().closed(this);
    }
  }

  /** Closes a stale booking; the admission applies the release itself, under its lock. */
  void expire() {
    PHASE.setVolatile(this, CLOSED);
  }

  int phase() {
    return phase;
  }

  @Override
  public String toString() {
    return "Routing{worker=" + workerId() + ", matchedBlocks=" + matchedBlocks + ", promptTokens=" + promptTokens
        + ", policy=" + policy + (isClosed() ? ", closed" : "") + "}";
  }
}
