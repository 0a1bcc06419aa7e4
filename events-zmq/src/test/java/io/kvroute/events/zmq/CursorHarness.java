package io.kvroute.events.zmq;

import io.kvroute.KvEvent;
import io.kvroute.KvIndexer;
import io.kvroute.Ticker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * A simulated engine (batches, sequence numbers, a vLLM-like replay ring) wired to a {@link StreamCursor} and a real
 * {@link KvIndexer} through a {@link BatchApplier}, with no sockets; not thread-safe. Tests inject faults between
 * the engine and the cursor: dropped, duplicated and delayed live batches, replay holes, unreceivable batches,
 * unanswered replays, restarts.
 */
final class CursorHarness implements StreamCursor.Output {
  static final WorkerId WORKER = WorkerId.of("engine");
  static final int BLOCK = 4;

  /** A fake clock. */
  static final class FakeTicker implements Ticker {
    long now = 1_000_000_000L;

    @Override
    public long read() {
      return now;
    }

    void advanceMillis(long millis) {
      now += millis * 1_000_000L;
    }
  }

  /** One engine process: its batches since it started. */
  static final class Engine {
    final EngineModel model;
    final List<byte[]> payloads = new ArrayList<>();
    final List<List<KvEvent>> events = new ArrayList<>();
    final Set<Long> unreceivable = new HashSet<>();

    Engine(long seed) {
      this.model = new EngineModel(seed, BLOCK, 24);
    }
  }

  record Reply(long seq, byte[] payload) {}

  final FakeTicker ticker = new FakeTicker();
  final KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).maxEntries(4096).build();
  final RecordingSink sink = new RecordingSink(index);
  final SourceCounters counters = new SourceCounters();
  final StreamCursor cursor;
  final BatchApplier applier;
  final int ring;
  private final SplittableRandom seeds;
  private double clock = 1.0;

  Engine engine;
  int engines = 1;
  /** Whether any engine of the scenario had a batch that cannot cross the connection. */
  boolean anyUnreceivable;
  /** Sequence numbers applied since the last purge, in order. */
  final List<Long> appliedSinceReset = new ArrayList<>();
  final List<PurgeReason> purgeReasons = new ArrayList<>();
  int replayRequests;
  // The current replay request's replies, in order; null when none is in flight or it was answered fully.
  ArrayDeque<Reply> pendingReplies;
  boolean pendingEnd;
  boolean silentRequest; // this request gets no answer
  boolean silenceNext; // the next request gets no answer
  private boolean firstReplySent;
  final ArrayDeque<Reply> delayedLive = new ArrayDeque<>();
  /** What happened, when the system property {@code cursor.trace} is set; for debugging a failing scenario. */
  final List<String> trace = new ArrayList<>();
  private static final boolean TRACE = Boolean.getBoolean("cursor.trace");

  void log(String what) {
    if (TRACE) {
      trace.add((ticker.now / 1_000_000) + "ms e" + engines + " last=" + cursor.lastSeq() + " " + what);
    }
  }

  CursorHarness(long seed, int ring, boolean replay, long maxBufferedBytes) {
    this.seeds = new SplittableRandom(seed);
    this.ring = ring;
    this.engine = new Engine(seeds.nextLong());
    StreamCursor.Settings settings = new StreamCursor.Settings(replay, 100_000_000L, 1_000_000_000L, 10_000,
        maxBufferedBytes, 2_000_000_000L, 3_000_000_000L);
    this.cursor = new StreamCursor(settings, ticker, this);
    this.applier = new BatchApplier(WORKER, 0, 1, sink, EventSourceListener.NONE, counters, ticker, 0, 1 << 20,
        cursor::forget);
    cursor.onConnected();
  }

  /** The engine produces its next batch; returns its sequence number. */
  long produce() {
    List<KvEvent> events = engine.model.nextBatch();
    byte[] payload = KvEventCodec.encode(clock++, events, 0, WireFormat.MAP);
    engine.events.add(events);
    engine.payloads.add(payload);
    return engine.payloads.size() - 1;
  }

  /** A payload the engine cannot deliver: over the message size limit. */
  void markUnreceivable(long seq) {
    anyUnreceivable = true;
    engine.unreceivable.add(seq);
  }

  void deliverLive(long seq) {
    if (TRACE) log("live " + seq + (engine.unreceivable.contains(seq) ? " (unreceivable)" : ""));
    if (!engine.unreceivable.contains(seq)) {
      cursor.onLive(seq, engine.payloads.get((int) seq));
    }
  }

  /** A new engine process at the same address: sequence back to 0, empty cache, empty ring. */
  void restart(boolean disconnectSeen) {
    engine = new Engine(seeds.nextLong());
    engines++;
    if (TRACE) log("restart, disconnect seen " + disconnectSeen);
    pendingReplies = null; // the old replay connection died with the old engine
    pendingEnd = false;
    delayedLive.clear();
    if (disconnectSeen) {
      cursor.onDisconnected();
    }
  }

  /** Delivers up to {@code max} replies of the replay in flight; {@code holeChance} drops each with that chance. */
  void serveReplay(int max, double holeChance, SplittableRandom random) {
    if (pendingReplies == null || silentRequest) {
      return;
    }
    for (int i = 0; i < max; i++) {
      if (pendingReplies == null) {
        return;
      }
      Reply r = pendingReplies.pollFirst();
      if (r == null) {
        if (pendingEnd) {
          pendingReplies = null;
          if (TRACE) log("replay end");
          cursor.onReplayEnd();
        }
        return;
      }
      if (engine.unreceivable.contains(r.seq)) {
        pendingReplies = null; // the connection breaks on the oversized message: nothing more arrives
        if (TRACE) log("replay breaks at unreceivable " + r.seq);
        return;
      }
      // The engine's ROUTER drops replies once its send queue is full, which a request's first reply (on a new
      // connection) never finds.
      if (random != null && firstReplySent && random.nextDouble() < holeChance) {
        if (TRACE) log("hole at " + r.seq);
        continue; // the engine's ROUTER dropped this reply (send limit)
      }
      if (TRACE) log("reply " + r.seq);
      firstReplySent = true;
      cursor.onReplayReply(r.seq, r.payload);
    }
  }

  void tick(long millis) {
    ticker.advanceMillis(millis);
    if (TRACE) log("tick");
    cursor.tick();
    applier.tick();
  }

  /** The events the index should hold if it applied this engine's batches {@code from..last}. */
  List<KvEvent> expectedEvents(long from) {
    List<KvEvent> out = new ArrayList<>();
    for (long s = from; s < engine.events.size(); s++) {
      out.addAll(engine.events.get((int) s));
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------ Output

  @Override
  public void apply(long seq, byte[] payload, boolean replayed) {
    if (TRACE) log("apply " + seq + (replayed ? " (replayed)" : ""));
    appliedSinceReset.add(seq);
    applier.apply(seq, payload, replayed);
  }

  @Override
  public void purge(PurgeReason reason) {
    if (TRACE) log("PURGE " + reason);
    appliedSinceReset.clear();
    purgeReasons.add(reason);
    applier.purge(reason);
  }

  @Override
  public void requestReplay(long fromSeq) {
    replayRequests++;
    if (TRACE) log("request replay from " + fromSeq + (silenceNext ? " (silent)" : ""));
    silentRequest = silenceNext;
    silenceNext = false;
    pendingReplies = new ArrayDeque<>();
    pendingEnd = true;
    firstReplySent = false;
    int size = engine.payloads.size();
    for (long s = Math.max(fromSeq, Math.max(0, size - ring)); s < size; s++) {
      pendingReplies.add(new Reply(s, engine.payloads.get((int) s)));
    }
  }

  @Override
  public void closeReplay() {
    pendingReplies = null;
  }
}
