package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.KvEvent;
import io.kvroute.KvEventColumns;
import io.kvroute.KvEventSink;
import io.kvroute.Ticker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Decodes the batches one stream's {@link StreamCursor} lets through and feeds them to the sink; not thread-safe,
 * confined to the subscriber's I/O thread (or a test).
 *
 * <p>A batch naming a data-parallel rank its source does not have is dropped and reported (it never reaches the
 * sink, so it cannot make a bare {@code KvIndexer} grow a slot per rank). A batch of a worker the sink does not
 * {@linkplain KvEventSink#accepts accept} yet (a router that has not registered it) is held, bounded by time and
 * bytes, and applied in order as soon as the sink accepts it; when the bound is reached the held batches are
 * dropped, reported through the listener and a warning, counted as dropped (never as stored), and the cursor
 * forgets its position so that the stream replays from the engine's start once the worker is accepted.
 */
final class BatchApplier {
  private static final System.Logger logger = System.getLogger(KvEventSubscriber.class.getName());

  private final WorkerId streamId;
  private final String sourceName;
  private final int firstRank;
  private final int rankCount;
  private final KvEventSink sink;
  private final EventSourceListener listener;
  private final SourceCounters counters;
  private final Ticker ticker;
  private final long holdNanos;
  private final long holdBytes;
  private final Runnable forgetPosition;

  private final ArrayDeque<Held> held = new ArrayDeque<>();
  private long heldBytes;
  private final BitSet ranksSeen = new BitSet();
  private final BitSet prefixGroups = new BitSet();
  private final BitSet otherGroups = new BitSet();
  // The batch being applied: decoded straight into these columns, which the sink reads and the next batch reuses.
  private final KvEventColumns columns = new KvEventColumns();
  private boolean[] drop = new boolean[64];

  private record Held(long seq, WorkerId worker, List<KvEvent> events, int blocks, boolean replayed, int bytes,
      long since) {}

  BatchApplier(WorkerId streamId, int firstRank, int rankCount, KvEventSink sink, EventSourceListener listener,
      SourceCounters counters, Ticker ticker, long holdNanos, long holdBytes, Runnable forgetPosition) {
    this.streamId = streamId;
    this.sourceName = streamId.name();
    this.firstRank = firstRank;
    this.rankCount = rankCount;
    this.sink = sink;
    this.listener = listener;
    this.counters = counters;
    this.ticker = ticker;
    this.holdNanos = holdNanos;
    this.holdBytes = holdBytes;
    this.forgetPosition = forgetPosition;
  }

  int heldBatches() {
    return held.size();
  }

  /**
   * Decodes and applies (or holds) one batch. The batch is decoded into reused columns and handed to the sink as
   * such ({@link KvEventSink#applyColumns}), so an ordinary batch builds no event objects; only a batch that must
   * be held is turned into objects.
   */
  void apply(long seq, byte[] payload, boolean replayed) {
    BatchHeader batch;
    columns.clear();
    try {
      batch = KvEventCodec.decodeInto(payload, 0, payload.length, columns);
    } catch (KvEventFormatException e) {
      columns.clear();
      decodeError("batch " + seq + ": " + e.getMessage());
      return;
    }
    int rank = batch.dataParallelRank() == null ? streamId.dataParallelRank() : batch.dataParallelRank();
    if (rank < firstRank || rank >= firstRank + rankCount) {
      counters.droppedEvents.addAndGet(columns.size());
      counters.unacceptedBatches.incrementAndGet();
      String reason = "batch " + seq + " names data-parallel rank " + rank + ", which " + sourceName
          + " does not have (ranks " + firstRank + ".." + (firstRank + rankCount - 1) + ")";
      logger.log(WARNING, streamId + ": " + reason + "; dropped");
      int n = columns.size();
      columns.clear();
      safe(() -> listener.onEventsDropped(streamId, n, reason));
      return;
    }
    WorkerId worker = rank == streamId.dataParallelRank() ? streamId : streamId.withRank(rank);
    filterGroups(worker, columns);
    int dropped = batch.skippedEvents() + batch.invalidEvents();
    if (dropped > 0) {
      counters.droppedEvents.addAndGet(dropped);
      safe(() -> listener.onEventsDropped(worker, dropped, batch.skippedEvents() + " of unknown type, "
          + batch.invalidEvents() + " malformed"));
    }
    int blocks = 0;
    for (int i = 0; i < columns.size(); i++) {
      if (columns.isStored(i)) {
        blocks += columns.blocks(i);
      }
    }
    if (!held.isEmpty() || !accepts(worker)) {
      Held h = new Held(seq, worker, columns.toEvents(), blocks, replayed, payload.length, ticker.read());
      columns.clear();
      held.add(h);
      heldBytes += h.bytes;
      if (held.size() == 1) {
        logger.log(DEBUG, () -> streamId + ": holding events of " + worker + " until the sink accepts it");
      }
      tick();
      return;
    }
    try {
      deliver(worker, seq, null, columns.size(), blocks, replayed);
    } finally {
      columns.clear();
    }
  }

  /** Applies held batches the sink now accepts, or drops them when held too long or too much. */
  void tick() {
    while (!held.isEmpty() && accepts(held.peekFirst().worker)) {
      Held h = held.pollFirst();
      heldBytes -= h.bytes;
      deliver(h.worker, h.seq, h.events, h.events.size(), h.blocks, h.replayed);
    }
    if (held.isEmpty()) {
      return;
    }
    Held first = held.peekFirst();
    if (ticker.read() - first.since >= holdNanos || heldBytes > holdBytes) {
      int batches = held.size();
      int events = 0;
      for (Held h : held) {
        events += h.events.size();
      }
      held.clear();
      heldBytes = 0;
      counters.droppedEvents.addAndGet(events);
      counters.unacceptedBatches.addAndGet(batches);
      String reason = batches + " batches (" + events + " events) of " + first.worker
          + ", which the sink does not accept (not registered with the router?); the stream replays from the"
          + " engine's start once it is";
      logger.log(WARNING, streamId + ": dropped " + reason);
      int n = events;
      safe(() -> listener.onEventsDropped(first.worker, n, "dropped " + reason));
      forgetPosition.run();
    }
  }

  /** Purges every rank this stream has fed, and drops held batches (they precede the purge). */
  void purge(PurgeReason reason) {
    held.clear();
    heldBytes = 0;
    ranksSeen.set(streamId.dataParallelRank());
    for (int rank = ranksSeen.nextSetBit(0); rank >= 0; rank = ranksSeen.nextSetBit(rank + 1)) {
      WorkerId worker = streamId.withRank(rank);
      try {
        sink.resetWorker(worker);
      } catch (Throwable t) {
        logger.log(WARNING, "the KV event sink failed to reset " + worker, t);
      }
      safe(() -> listener.onPurged(worker, reason));
    }
    prefixGroups.clear();
    otherGroups.clear();
    counters.purges.incrementAndGet();
  }

  void decodeError(String reason) {
    counters.decodeErrors.incrementAndGet();
    logger.log(DEBUG, () -> "dropped a message of " + streamId + ": " + reason);
    safe(() -> listener.onDecodeError(streamId, reason));
  }

  private boolean accepts(WorkerId worker) {
    try {
      return sink.accepts(worker);
    } catch (Throwable t) {
      logger.log(WARNING, "the KV event sink failed to answer accepts(" + worker + ")", t);
      return true;
    }
  }

  /** Feeds a batch to the sink: {@code events}, or, when null, the columns. */
  private void deliver(WorkerId worker, long seq, @Nullable List<KvEvent> events, int eventCount, int blocks,
      boolean replayed) {
    ranksSeen.set(worker.dataParallelRank());
    if (eventCount > 0) {
      try {
        if (events == null) {
          sink.applyColumns(worker, columns);
        } else {
          sink.applyAll(worker, events);
        }
      } catch (Throwable t) {
        logger.log(WARNING, "the KV event sink failed on a batch of " + worker, t);
      }
    }
    counters.batches.incrementAndGet();
    counters.events.addAndGet(eventCount);
    counters.storedBlocks.addAndGet(blocks);
    if (replayed) {
      counters.replayedBatches.incrementAndGet();
    }
    safe(() -> listener.onBatch(worker, seq, eventCount, blocks));
  }

  /** Drops the batch's events of cache groups that do not count toward prefixes, and reports them. */
  private void filterGroups(WorkerId worker, KvEventColumns events) {
    int n = events.size();
    if (drop.length < n) {
      drop = new boolean[Math.max(n, drop.length * 2)];
    }
    int filtered = 0;
    for (int i = 0; i < n; i++) {
      boolean keep = admit(events, i);
      drop[i] = !keep;
      filtered += keep ? 0 : 1;
    }
    if (filtered == 0) {
      return;
    }
    events.removeIf(drop);
    counters.droppedEvents.addAndGet(filtered);
    int count = filtered;
    safe(() -> listener.onEventsDropped(worker, count, "cache group does not count toward prefixes"));
  }

  /** Learns cache group kinds from stored events; returns whether event {@code i} is applied. */
  private boolean admit(KvEventColumns events, int i) {
    int group = events.group(i);
    if (events.isStored(i)) {
      String kind = events.cacheSpecKind(i);
      boolean counts = events.countsTowardPrefix(i);
      if (kind != null && group >= 0 && group < 4096) {
        (counts ? prefixGroups : otherGroups).set(group);
      }
      return counts;
    }
    if (events.isRemoved(i)) {
      return group < 0 || group >= 4096 || !otherGroups.get(group) || prefixGroups.get(group);
    }
    return true;
  }

  private static void safe(Runnable call) {
    try {
      call.run();
    } catch (Throwable t) {
      logger.log(WARNING, "EventSourceListener threw", t);
    }
  }
}
