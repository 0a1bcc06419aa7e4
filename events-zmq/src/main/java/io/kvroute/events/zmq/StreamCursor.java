package io.kvroute.events.zmq;

import io.kvroute.Ticker;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import net.openhft.hashing.LongHashFunction;

/**
 * The recovery logic of one event stream (one data-parallel rank of one engine) as a pure state machine; not
 * thread-safe, confined to the subscriber's I/O thread (or a test).
 *
 * <p>It is driven by frames ({@link #onLive}, {@link #onReplayReply}, {@link #onReplayEnd}, {@link
 * #onReplayMalformed}), by connection changes ({@link #onConnected}, {@link #onDisconnected}) and by time ({@link
 * #tick}, read from a {@link Ticker}); it has no sockets. What it decides goes to an {@link Output}: apply a batch,
 * purge the worker, request or close a replay. Phases: {@link Phase#LIVE} (applying in order), {@link
 * Phase#REPLAYING} (a replay is in flight; live batches are buffered, bounded by count and bytes), {@link
 * Phase#COOLING} (a replay failed; gaps purge until the cooldown ends) and {@link Phase#PURGED} (the entries were
 * dropped and the stream waits for new batches to rebuild).
 *
 * <p><b>Identity.</b> The cursor keeps a fingerprint (XXH3-64 of the payload bytes, which include the engine's
 * timestamp) of the last {@value #FINGERPRINTS} applied batches. A batch numbered at or below the last one is a
 * duplicate when its fingerprint equals the one applied under that number, or, for numbers older than the
 * fingerprints reach, when a replay covered that number recently; otherwise the engine restarted. After a gap or a
 * reconnection, the replay is asked from {@value #OVERLAP} batches before the last applied one, and the replayed
 * copies of batches already applied are compared with their fingerprints: a mismatch means a new engine, whatever
 * its sequence numbers, and the worker is purged before the new engine's state is applied.
 */
final class StreamCursor {
  static final long NONE = -1;
  /** Batches re-read before the last applied one when a replay checks the engine's identity. */
  static final int OVERLAP = 4;
  /** Applied batches whose fingerprints are kept. */
  static final int FINGERPRINTS = 4096;
  /** Requests without any reply at the same point before the replay fails (or the batch is skipped). */
  static final int MAX_ATTEMPTS = 2;
  private static final LongHashFunction FINGERPRINT = LongHashFunction.xx3();

  /** The phase of a stream. */
  enum Phase { LIVE, REPLAYING, COOLING, PURGED }

  /** Where the cursor's decisions go; calls happen synchronously inside the cursor's methods. */
  interface Output {
    /** Applies a batch (decode it and feed the sink). */
    void apply(long seq, byte[] payload, boolean replayed);

    /** Purges the worker's entries. */
    void purge(PurgeReason reason);

    /** Sends a replay request from {@code fromSeq} over a fresh connection, dropping any earlier one. */
    void requestReplay(long fromSeq);

    /** Closes the replay connection. */
    void closeReplay();

    /** Reports a gap: batches {@code expected} to {@code received - 1} were not seen live. */
    default void gap(long expected, long received) {}

    /** Reports a restart detected between {@code lastSeq} and {@code seq}. */
    default void restart(long lastSeq, long seq, String how) {}

    default void replayStarted(long fromSeq) {}

    default void replayFinished(int batches) {}

    default void replayFailed(String reason) {}
  }

  /** Tunables of a cursor; an immutable value. */
  record Settings(boolean replayEnabled, long replayTimeoutNanos, long cooldownNanos, int maxBufferedBatches,
      long maxBufferedBytes, long staleAfterNanos, long purgeAfterNanos) {
    long duplicateWindowNanos() {
      return Math.max(replayTimeoutNanos * 4, 10_000_000_000L);
    }
  }

  private record Pending(long seq, byte[] payload) {}

  private final Settings settings;
  private final Ticker ticker;
  private final Output out;

  private volatile long lastSeq = NONE;
  private final long[] fpSeq = new long[FINGERPRINTS];
  private final long[] fpValue = new long[FINGERPRINTS];
  private long coveredFrom = NONE;
  private long coveredTo = NONE;
  private long coveredUntil;

  // Replay in flight (replayNext == NONE: none).
  private volatile long replayNext = NONE;
  private long replayVerifyUpTo = NONE;
  private boolean replayAnswered; // a valid reply arrived for the current request
  private long replayDeadline;
  private long replayFirstSeq = NONE;
  private int replayBatches;
  private long stuckAt = NONE;
  private int stuckCount;
  private long lastEvidence;
  private boolean overflowed;

  private final List<Pending> buffered = new ArrayList<>();
  private long bufferedBytes;
  private volatile long cooldownUntil;
  private boolean failing;
  private boolean verifyNext;
  private volatile boolean purged;

  private volatile long disconnectedSince;
  private volatile boolean stale;
  private volatile long lastBatchAt = NONE;

  // Counters: written on the I/O thread only, read by stats from any thread.
  volatile long applied;
  volatile long replayedBatches;
  volatile long duplicates;
  volatile long gaps;
  volatile long replays;
  volatile long replayFailures;
  volatile long restarts;
  volatile long purges;
  volatile long holes;
  volatile long skippedBatches;
  volatile long bufferOverflows;
  volatile long malformedReplies;

  StreamCursor(Settings settings, Ticker ticker, Output out) {
    this.settings = settings;
    this.ticker = ticker;
    this.out = out;
    long now = ticker.read();
    this.cooldownUntil = now;
    this.disconnectedSince = now; // not connected until the transport says so or a batch arrives
    Arrays.fill(fpSeq, NONE);
  }

  // ------------------------------------------------------------------------------------------------ queries

  Phase phase() {
    if (replayNext != NONE) {
      return Phase.REPLAYING;
    }
    if (settings.replayEnabled() && ticker.read() - cooldownUntil < 0) {
      return Phase.COOLING;
    }
    return purged && lastSeq == NONE ? Phase.PURGED : Phase.LIVE;
  }

  long lastSeq() {
    return lastSeq;
  }

  boolean replaying() {
    return replayNext != NONE;
  }

  boolean connected() {
    return disconnectedSince == NONE;
  }

  /** Whether the engine has been disconnected longer than the stale time. */
  boolean stale() {
    return stale;
  }

  /** Nanoseconds since the last batch was applied, or -1 if none was. */
  long lastBatchAgeNanos() {
    return lastBatchAt == NONE ? -1 : Math.max(0, ticker.read() - lastBatchAt);
  }

  long bufferedBytes() {
    return bufferedBytes;
  }

  int bufferedBatches() {
    return buffered.size();
  }

  // ------------------------------------------------------------------------------------------------ transport

  void onConnected() {
    disconnectedSince = NONE;
    stale = false;
  }

  void onDisconnected() {
    if (disconnectedSince == NONE) {
      disconnectedSince = ticker.read();
    }
    verifyNext = true; // the engine on the other side may be a new one
  }

  /**
   * Forgets the cursor's position without purging (the batches were dropped elsewhere, for example for a worker the
   * sink does not accept): the next batch is handled as a stream's first one, which replays from 0.
   */
  void forget() {
    lastSeq = NONE;
    clearFingerprints();
  }

  // ------------------------------------------------------------------------------------------------ live

  void onLive(long seq, byte[] payload) {
    long now = ticker.read();
    lastEvidence = now;
    if (disconnectedSince != NONE) {
      onConnected();
    }
    if (replayNext != NONE) {
      buffer(seq, payload);
      return;
    }
    if (lastSeq == NONE) {
      if (seq > 0 && canReplay(now)) {
        buffer(seq, payload);
        startReplay(0, NONE);
        return;
      }
      verifyNext = false;
      apply(seq, payload, false);
      return;
    }
    if (seq <= lastSeq) {
      if (isDuplicate(seq, payload, now)) {
        duplicates++;
        return;
      }
      restart(seq, "sequence went back from " + lastSeq + " to " + seq);
      onLive(seq, payload);
      return;
    }
    long expected = lastSeq + 1;
    if (seq > expected) {
      gaps++;
      out.gap(expected, seq);
    }
    if ((seq > expected || verifyNext) && canReplay(now)) {
      verifyNext = false;
      buffer(seq, payload);
      startReplay(Math.max(0, lastSeq - OVERLAP + 1), lastSeq);
      return;
    }
    verifyNext = false;
    if (seq > expected) {
      purge(PurgeReason.GAP_NOT_RECOVERABLE);
    }
    apply(seq, payload, false);
  }

  private boolean isDuplicate(long seq, byte[] payload, long now) {
    int i = (int) (seq & (FINGERPRINTS - 1));
    if (fpSeq[i] == seq) {
      return fpValue[i] == FINGERPRINT.hashBytes(payload);
    }
    return coveredFrom != NONE && seq >= coveredFrom && seq <= coveredTo && now - coveredUntil < 0;
  }

  private void buffer(long seq, byte[] payload) {
    if (buffered.size() >= settings.maxBufferedBatches()
        || bufferedBytes + payload.length > settings.maxBufferedBytes()) {
      bufferOverflows++;
      overflowed = true; // recovered by a replay once the buffer drains
      return;
    }
    buffered.add(new Pending(seq, payload));
    bufferedBytes += payload.length;
  }

  private boolean canReplay(long now) {
    return settings.replayEnabled() && !failing && now - cooldownUntil >= 0;
  }

  // ------------------------------------------------------------------------------------------------ replay

  private void startReplay(long from, long verifyUpTo) {
    replays++;
    replayNext = from;
    replayVerifyUpTo = verifyUpTo;
    replayFirstSeq = NONE;
    replayBatches = 0;
    stuckAt = NONE;
    stuckCount = 0;
    out.replayStarted(from);
    request(from);
  }

  private void request(long from) {
    replayNext = from;
    replayAnswered = false;
    replayDeadline = ticker.read() + settings.replayTimeoutNanos();
    out.requestReplay(from);
  }

  /** A reply whose frames or sequence number were malformed: counted, and it does not keep the replay alive. */
  void onReplayMalformed() {
    malformedReplies++;
  }

  void onReplayReply(long seq, byte[] payload) {
    if (replayNext == NONE || seq < replayNext) {
      return; // late, or a copy of what this replay already delivered: not progress
    }
    long now = ticker.read();
    if (seq > replayNext) {
      if (replayAnswered) {
        // A hole in the middle: the engine dropped replies (send limit). Ask again from the hole.
        holes++;
        request(replayNext);
        return;
      }
      // The first reply starts later than asked: the engine's ring no longer reaches back that far.
      if (lastSeq != NONE && seq > lastSeq + 1) {
        purge(PurgeReason.REPLAY_INCOMPLETE);
        replayVerifyUpTo = NONE;
      } else if (lastSeq == NONE) {
        replayVerifyUpTo = NONE;
      }
      replayNext = seq;
    }
    replayAnswered = true;
    replayDeadline = now + settings.replayTimeoutNanos();
    lastEvidence = now;
    if (replayFirstSeq == NONE) {
      replayFirstSeq = seq;
    }
    if (seq <= replayVerifyUpTo) {
      int i = (int) (seq & (FINGERPRINTS - 1));
      if (fpSeq[i] == seq && fpValue[i] != FINGERPRINT.hashBytes(payload)) {
        long from = replayFirstSeq;
        restart(seq, "replayed batch " + seq + " differs from the one applied");
        replayVerifyUpTo = NONE;
        if (from == 0) {
          apply(seq, payload, true); // this replay reaches the new engine's start: carry on applying
          replayBatches++;
          replayNext = seq + 1;
        } else {
          replayFirstSeq = NONE;
          request(0);
        }
        return;
      }
      replayNext = seq + 1;
      return;
    }
    replayVerifyUpTo = NONE;
    apply(seq, payload, true);
    replayedBatches++;
    replayBatches++;
    replayNext = seq + 1;
  }

  void onReplayEnd() {
    if (replayNext == NONE) {
      return;
    }
    if (replayVerifyUpTo != NONE && replayNext <= replayVerifyUpTo) {
      // The engine's stream ends before what was applied from it: a new engine (or one that lost its history).
      restart(replayNext, "the replay ended at " + (replayNext - 1) + " before the last applied " + lastSeq);
      replayVerifyUpTo = NONE;
      replayFirstSeq = NONE;
      request(0);
      return;
    }
    long now = ticker.read();
    lastEvidence = now;
    if (replayFirstSeq != NONE) {
      coveredFrom = replayFirstSeq;
      coveredTo = replayNext - 1;
      coveredUntil = now + settings.duplicateWindowNanos();
    }
    int batches = replayBatches;
    replayNext = NONE;
    out.closeReplay();
    out.replayFinished(batches);
    drainBuffered();
  }

  private void replayFailed(String reason) {
    replayFailures++;
    out.replayFailed(reason);
    out.closeReplay();
    cooldownUntil = ticker.read() + settings.cooldownNanos();
    replayNext = NONE;
    if (lastSeq != NONE) {
      purge(PurgeReason.REPLAY_FAILED);
    }
    failing = true; // no new replay while draining, even with a zero cooldown
    try {
      drainBuffered();
    } finally {
      failing = false;
    }
  }

  private void drainBuffered() {
    List<Pending> pending = new ArrayList<>(buffered);
    buffered.clear();
    bufferedBytes = 0;
    pending.sort(Comparator.comparingLong(Pending::seq));
    for (Pending p : pending) {
      onLive(p.seq, p.payload); // buffers again if a new replay started
    }
    if (overflowed && replayNext == NONE && lastSeq != NONE && canReplay(ticker.read())) {
      overflowed = false;
      startReplay(lastSeq + 1, NONE); // live batches dropped while buffering: fetch them
    } else if (replayNext == NONE) {
      overflowed = false;
    }
  }

  // ------------------------------------------------------------------------------------------------ time

  void tick() {
    long now = ticker.read();
    if (replayNext != NONE && now - replayDeadline >= 0) {
      onDeadline(now);
    }
    if (disconnectedSince != NONE) {
      long age = now - disconnectedSince;
      if (!stale && age >= settings.staleAfterNanos()) {
        stale = true;
      }
      if (age >= settings.staleAfterNanos() + settings.purgeAfterNanos() && lastSeq != NONE
          && replayNext == NONE) {
        purge(PurgeReason.DISCONNECTED);
      }
    }
  }

  private void onDeadline(long now) {
    if (replayNext != stuckAt) {
      stuckAt = replayNext;
      stuckCount = 0;
    }
    if (replayAnswered) {
      stuckCount = 0; // this request made progress, then stalled (a connection dropped mid-replay): ask again
    }
    stuckCount++;
    if (stuckCount < MAX_ATTEMPTS || replayAnswered) {
      request(replayNext);
      return;
    }
    boolean alive = now - lastEvidence < settings.replayTimeoutNanos() * (MAX_ATTEMPTS + 1);
    if (alive && replayFirstSeq != NONE) {
      // The engine answers, but never with this batch: it cannot cross the connection (over the message size
      // limit). Skip it; the batch's removals are lost with it, so what was applied before must go.
      skippedBatches++;
      long skipped = replayNext;
      if (lastSeq != NONE) {
        purge(PurgeReason.BATCH_UNRECEIVABLE);
      }
      lastSeq = skipped;
      replayVerifyUpTo = NONE;
      stuckAt = NONE;
      request(skipped + 1);
      return;
    }
    replayFailed("replay from " + replayNext + " got no answer after " + MAX_ATTEMPTS + " requests");
  }

  // ------------------------------------------------------------------------------------------------ effects

  private void apply(long seq, byte[] payload, boolean replayed) {
    lastSeq = seq;
    purged = false;
    int i = (int) (seq & (FINGERPRINTS - 1));
    fpSeq[i] = seq;
    fpValue[i] = FINGERPRINT.hashBytes(payload);
    lastBatchAt = ticker.read();
    applied++;
    out.apply(seq, payload, replayed);
  }

  private void restart(long seq, String how) {
    long last = lastSeq;
    restarts++;
    out.restart(last, seq, how);
    purge(PurgeReason.RESTART);
    coveredFrom = NONE;
    coveredTo = NONE;
  }

  private void purge(PurgeReason reason) {
    purges++;
    purged = true;
    lastSeq = NONE;
    clearFingerprints();
    out.purge(reason);
  }

  private void clearFingerprints() {
    Arrays.fill(fpSeq, NONE);
  }
}
