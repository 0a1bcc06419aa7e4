package io.kvroute.events.zmq;

import io.kvroute.Ticker;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.util.ArrayList;
import java.util.Arrays;
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
 * timestamp) of the last {@value #FINGERPRINTS} applied batches. A live batch numbered at or below the last applied
 * one is a duplicate when its fingerprint equals the one applied under that number, and a new engine's when it
 * differs; when its number is older than the fingerprints reach, a replay decides. Every replay connection may
 * reach a new engine, so a replay starts {@value #OVERLAP} batches before the last applied one and compares those
 * with their fingerprints: a mismatch means a new engine, whatever its sequence numbers, and the worker is purged
 * before the new engine's batches (fetched from its start) are applied. Held live batches that arrived before a
 * replay request, under numbers that replay covered, are the engine's duplicates or an earlier engine's strays.
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
      long maxBufferedBytes, long staleAfterNanos, long purgeAfterNanos) {}

  /** A held live batch and the number of replay requests sent before it arrived. */
  private record Pending(long seq, byte[] payload, int request) {}

  private final Settings settings;
  private final Ticker ticker;
  private final Output out;

  private volatile long lastSeq = NONE;
  private final long[] fpSeq = new long[FINGERPRINTS];
  private final long[] fpValue = new long[FINGERPRINTS];

  // Replay in flight (replayNext == NONE: none).
  private volatile long replayNext = NONE;
  private long replayVerifyUpTo = NONE;
  private boolean replayAnswered; // a valid reply arrived for the current request
  private long replayDeadline;
  private long replayFirstSeq = NONE;
  private int replayBatches;
  private int replayVerified; // applied batches this replay showed unchanged
  private long stuckAt = NONE;
  private int stuckCount;
  private boolean overflowed;
  private boolean probing; // a probe for the batch before a stall is in flight
  private boolean probeAnswered;
  private int probeAttempts;
  private long floor; // replays start at or above it: the batch below it cannot cross the connection
  private int requests; // replay requests sent, to tell held batches received before the last one

  private final List<Pending> buffered = new ArrayList<>();
  private long bufferedBytes;
  private volatile long cooldownUntil;
  private boolean failing;
  private boolean verifyNext;
  private volatile boolean purged;
  private int epoch; // restarts detected

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
  volatile long strayBatches;

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

  /** Whether the entries were purged and nothing has been applied since. */
  boolean purgedSinceApplied() {
    return purged && lastSeq == NONE;
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
    long now = ticker.read();
    if (disconnectedSince == NONE) {
      disconnectedSince = now;
    }
    verifyNext = true; // the engine on the other side may be a new one
    if (!buffered.isEmpty()) {
      // Held live batches came over the old connection; kept, they could mix with a new engine's. Those of the
      // same engine are in its ring: fetch them after the replay.
      buffered.clear();
      bufferedBytes = 0;
      overflowed = true;
    }
    if (replayNext != NONE) {
      // The replay's connection is as suspect as the live one, and so is what a probe showed: ask again, checking.
      stuckAt = NONE;
      resume();
    }
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
      int verdict = classify(seq, payload, now);
      if (verdict == DUPLICATE) {
        duplicates++;
        return;
      }
      if (verdict == UNKNOWN && canReplay(now) && lastSeq >= floor) {
        // Older than anything this cursor can compare: a late copy, or a new engine? Ask the engine.
        verifyNext = false;
        buffer(seq, payload);
        startReplay(Math.max(0, lastSeq - OVERLAP + 1), lastSeq);
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
      if (lastSeq < floor) {
        startReplay(lastSeq + 1, NONE); // nothing applied since a skip purged the worker: nothing to compare
      } else {
        startReplay(Math.max(0, lastSeq - OVERLAP + 1), lastSeq);
      }
      return;
    }
    if (seq > expected) {
      verifyNext = false;
      purge(PurgeReason.GAP_NOT_RECOVERABLE);
    } else if (verifyNext) {
      // Reconnected, and no replay to check that this is still the same engine: a new one would look the same.
      verifyNext = false;
      purge(PurgeReason.RECONNECTED);
    }
    apply(seq, payload, false);
  }

  private static final int DUPLICATE = 0;
  private static final int DIFFERENT = 1;
  private static final int UNKNOWN = 2;

  /** Whether a batch numbered at or below the last applied one is a copy of the one applied under its number. */
  private int classify(long seq, byte[] payload, long now) {
    int i = (int) (seq & (FINGERPRINTS - 1));
    if (fpSeq[i] == seq) {
      return fpValue[i] == FINGERPRINT.hashBytes(payload) ? DUPLICATE : DIFFERENT;
    }
    return UNKNOWN;
  }

  private void buffer(long seq, byte[] payload) {
    if (buffered.size() >= settings.maxBufferedBatches()
        || bufferedBytes + payload.length > settings.maxBufferedBytes()) {
      bufferOverflows++;
      overflowed = true; // recovered by a replay once the buffer drains
      return;
    }
    buffered.add(new Pending(seq, payload, requests));
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
    replayVerified = 0;
    stuckAt = NONE;
    stuckCount = 0;
    out.replayStarted(from);
    request(from);
  }

  private void request(long from) {
    from = Math.max(from, floor); // never ask through a batch that cannot cross the connection
    replayNext = from;
    probing = false;
    send(from);
  }

  /**
   * Asks again, over a new connection, from where the replay stands. A new connection may reach a new engine, so
   * when batches were applied the request starts {@value #OVERLAP} batches before the last one to compare them.
   */
  private void resume() {
    long from = Math.max(floor, lastSeq - OVERLAP + 1);
    if (lastSeq != NONE && from <= lastSeq) {
      replayVerifyUpTo = lastSeq;
      replayVerified = 0;
      request(from);
    } else if (lastSeq != NONE) {
      // Right after a skipped batch nothing applied can be compared, and nothing from before it is held (the skip
      // purged it): whatever engine answers, what it sends from here on is a contiguous tail of its stream.
      replayVerifyUpTo = NONE;
      request(lastSeq + 1);
    } else {
      request(replayNext);
    }
  }

  private void send(long from) {
    requests++;
    replayAnswered = false;
    replayDeadline = ticker.read() + settings.replayTimeoutNanos();
    out.requestReplay(from);
  }

  /** A reply whose frames or sequence number were malformed: counted, and it does not keep the replay alive. */
  void onReplayMalformed() {
    malformedReplies++;
  }

  /**
   * A replayed batch over the message size limit arrived (the replay socket admits more than the limit, so the
   * batches before it survive). If it is the next batch needed it is skipped as unreceivable, with one counted
   * purge; otherwise it changes nothing, and the stall handling below still applies.
   */
  void onReplayOversized(long seq) {
    if (replayNext == NONE || lastSeq == NONE || seq != lastSeq + 1 || seq < floor) {
      return;
    }
    skipUnreceivable();
  }

  void onReplayReply(long seq, byte[] payload) {
    if (replayNext == NONE) {
      return; // late
    }
    if (probing) {
      if (seq == lastSeq && !probeAnswered) {
        probe(seq, payload);
        return;
      }
      if (seq != lastSeq + 1) {
        return;
      }
      probing = false; // the batch came after all: carry on
    }
    if (seq < replayNext) {
      return; // a copy of what this replay already delivered: not progress
    }
    long now = ticker.read();
    if (seq > replayNext) {
      if (replayAnswered) {
        // A hole in the middle: the engine dropped replies (send limit). Ask again from the hole.
        holes++;
        resume();
        return;
      }
      // The first reply starts later than asked: the engine's ring no longer reaches back that far. If it does not
      // reach what was applied (or, when checking identity, no applied batch can be compared), what the index
      // holds can be neither completed nor trusted.
      boolean unverifiable = replayVerifyUpTo != NONE && seq > replayVerifyUpTo;
      if (lastSeq != NONE && (seq > lastSeq + 1 || unverifiable)) {
        purge(PurgeReason.REPLAY_INCOMPLETE);
      }
      if (lastSeq == NONE) {
        replayVerifyUpTo = NONE;
      }
      replayNext = seq;
    }
    replayAnswered = true;
    replayDeadline = now + settings.replayTimeoutNanos();
    if (replayFirstSeq == NONE) {
      replayFirstSeq = seq;
    }
    if (seq <= replayVerifyUpTo) {
      if (verifyReplayed(seq, payload)) {
        replayNext = seq + 1;
      }
      return;
    }
    if (unverified()) {
      return;
    }
    replayVerifyUpTo = NONE;
    apply(seq, payload, true);
    replayedBatches++;
    replayBatches++;
    replayNext = seq + 1;
  }

  /**
   * Whether the replay has passed the batches it was to compare without comparing any (none had a fingerprint, as
   * after a skipped batch): then the engine may be a new one, so the worker is purged and fetched from its start.
   */
  private boolean unverified() {
    if (replayVerifyUpTo == NONE || replayVerified > 0 || lastSeq == NONE) {
      return false;
    }
    purge(PurgeReason.UNVERIFIED);
    floor = 0; // perhaps another engine: what could not cross before says nothing about it
    replayVerifyUpTo = NONE;
    replayFirstSeq = NONE;
    request(0);
    return true;
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
    if (unverified()) {
      return;
    }
    long now = ticker.read();
    int batches = replayBatches;
    long end = replayNext - 1;
    replayNext = NONE;
    out.closeReplay();
    out.replayFinished(batches);
    // A held batch received before the last request, numbered beyond where the engine's replay ended, was not
    // published by this engine (its ring holds everything it published before the request): an earlier engine's.
    int request = requests;
    int before = buffered.size();
    buffered.removeIf(p -> p.request < request && p.seq > end);
    strayBatches += before - buffered.size();
    drainBuffered();
  }

  private void replayFailed(String reason) {
    replayFailures++;
    probing = false;
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
    // In arrival order: across a reconnection the buffer may hold two engines' batches, and sorting would mix them.
    int start = epoch;
    int request = requests;
    for (Pending p : pending) {
      if (epoch != start) {
        break; // a restart was detected: the rest may be the old engine's (see restart)
      }
      if (replayNext == NONE && p.request < request && lastSeq != NONE && p.seq <= lastSeq) {
        // Received before the last replay request, and that replay covered its number: what was applied under it
        // came from the engine there now. A different batch under that number was an earlier engine's.
        if (classify(p.seq, p.payload, ticker.read()) == DIFFERENT) {
          strayBatches++;
        } else {
          duplicates++;
        }
        continue;
      }
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
    if (probing) {
      if (probeAnswered) {
        skipUnreceivable();
      } else if (++probeAttempts < MAX_ATTEMPTS) {
        send(lastSeq); // a fresh connection may stall its handshake (see KvEventSubscriber): ask once more
      } else {
        replayFailed("replay stalled after " + lastSeq + ", and the engine did not answer a probe for it");
      }
      return;
    }
    long point = lastSeq != NONE ? lastSeq + 1 : replayNext;
    if (point != stuckAt) {
      stuckAt = point;
      stuckCount = 0;
    }
    boolean progressed = replayAnswered && replayNext > replayVerifyUpTo + 1;
    if (progressed) {
      stuckCount = 0; // this request made progress, then stalled (a connection dropped mid-replay): ask again
    }
    stuckCount++;
    if (stuckCount < MAX_ATTEMPTS) {
      resume();
      return;
    }
    if (lastSeq != NONE && lastSeq >= floor && replayFirstSeq != NONE) {
      // Asked twice without getting past the last applied batch, though this replay has delivered: probe the
      // engine by asking for that batch alone. If it comes (and is the same batch), the engine is alive and only
      // the next batch cannot reach us.
      probing = true;
      probeAnswered = false;
      probeAttempts = 0;
      send(lastSeq);
      return;
    }
    replayFailed("replay from " + replayNext + " got no answer after " + MAX_ATTEMPTS + " requests");
  }

  /** The probe for the batch before a stall was answered. */
  private void probe(long seq, byte[] payload) {
    if (!verifyReplayed(seq, payload)) {
      return; // request(0) ended the probe
    }
    probeAnswered = true; // alive; now see whether the next batch follows
    replayAnswered = true;
    replayNext = seq + 1;
    replayDeadline = ticker.read() + settings.replayTimeoutNanos();
  }

  /**
   * The engine answered the probe but the batch after it still did not come: it cannot cross the connection (over
   * the message size limit). Skip it; its removals are lost with it, so what was applied before must go.
   */
  private void skipUnreceivable() {
    probing = false;
    skippedBatches++;
    long skipped = lastSeq + 1;
    purge(PurgeReason.BATCH_UNRECEIVABLE);
    lastSeq = skipped;
    floor = skipped + 1;
    replayVerifyUpTo = NONE;
    stuckAt = NONE;
    request(skipped + 1);
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

  /**
   * Compares a replayed batch with the applied batch of the same number, if its fingerprint is still held: the
   * same batch counts as verified; a different one is a new engine, whose batches before this one went by unchecked
   * (or not at all), so it is fetched again from its start.
   *
   * @return false if the batch differed and the cursor restarted
   */
  private boolean verifyReplayed(long seq, byte[] payload) {
    int i = (int) (seq & (FINGERPRINTS - 1));
    if (fpSeq[i] != seq) {
      return true;
    }
    if (fpValue[i] != FINGERPRINT.hashBytes(payload)) {
      restart(seq, "replayed batch " + seq + " differs from the one applied");
      replayVerifyUpTo = NONE;
      replayFirstSeq = NONE;
      request(0);
      return false;
    }
    replayVerified++;
    return true;
  }

  private void restart(long seq, String how) {
    long last = lastSeq;
    restarts++;
    epoch++;
    floor = 0;
    // Live batches held so far may be the old engine's; the new engine's are in its ring, which is replayed next.
    buffered.clear();
    bufferedBytes = 0;
    out.restart(last, seq, how);
    purge(PurgeReason.RESTART);
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
