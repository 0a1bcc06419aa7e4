package io.kvroute.micrometer;

import io.kvroute.Ticker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Publishes what a {@link KvEventSubscriber} sees on its workers' KV event streams to Micrometer; thread-safe: it is
 * an {@link EventSourceListener} the subscriber calls from its I/O thread.
 *
 * <pre>{@code
 * EventSourceMetrics events = new EventSourceMetrics();
 * KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).listener(events).build();
 * events.bindTo(registry);
 * }</pre>
 *
 * <p>Meters, all tagged {@code worker} and {@code rank}: {@value #BATCHES}, {@value #EVENTS} and
 * {@value #STORED_BLOCKS} (counters of what was applied), {@value #GAPS}, {@value #REPLAYS},
 * {@value #REPLAYED_BATCHES}, {@value #REPLAY_FAILURES}, {@value #RESTARTS}, {@value #PURGES} (also tagged
 * {@code reason}: restart, gap_not_recoverable, replay_incomplete, replay_failed, removed), {@value #DROPPED_EVENTS}
 * (counters), {@value #DECODE_ERRORS} (counter, tagged {@code worker} only: a malformed message names no rank), and
 * {@value #LAST_BATCH_AGE} (time gauge: seconds since the worker's last applied batch, by this binder's ticker, NaN
 * before the first). The age is the event lag the router can see: batches carry no clock the router can trust, so a
 * stream that stalls shows as an age growing past the engine's usual gap between batches.
 *
 * <p>A worker removed from the subscriber (purge reason {@code removed}) takes its meters with it, so the
 * {@code removed} purge count stays 0; a worker added again under the same id starts from zero.
 */
public final class EventSourceMetrics extends BoundMeters implements EventSourceListener {
  /** Batches applied, live or replayed. */
  public static final String BATCHES = "kvroute.events.batches";
  /** Events applied. */
  public static final String EVENTS = "kvroute.events.applied";
  /** Blocks of applied stored events. */
  public static final String STORED_BLOCKS = "kvroute.events.stored.blocks";
  /** Sequence gaps detected. */
  public static final String GAPS = "kvroute.events.gaps";
  /** Replay requests sent. */
  public static final String REPLAYS = "kvroute.events.replays";
  /** Batches delivered by replays. */
  public static final String REPLAYED_BATCHES = "kvroute.events.replayed.batches";
  /** Replays that failed. */
  public static final String REPLAY_FAILURES = "kvroute.events.replay.failures";
  /** Engine restarts detected. */
  public static final String RESTARTS = "kvroute.events.restarts";
  /** Purges of a worker's index entries, by reason. */
  public static final String PURGES = "kvroute.events.purges";
  /** Malformed messages dropped. */
  public static final String DECODE_ERRORS = "kvroute.events.decode.errors";
  /** Events not applied. */
  public static final String DROPPED_EVENTS = "kvroute.events.dropped";
  /** Time since the worker's last applied batch. */
  public static final String LAST_BATCH_AGE = "kvroute.events.last.batch.age";

  private final Ticker ticker;
  private final Map<WorkerId, Stream> streams = new ConcurrentHashMap<>();
  private final Map<WorkerId, Counter> decodeErrors = new ConcurrentHashMap<>();

  /** Meters with no common tags, ages by the system ticker. */
  public EventSourceMetrics() {
    this(Tags.empty(), Ticker.systemTicker());
  }

  /**
   * Meters with common tags and a ticker for the batch age.
   *
   * @param tags added to every meter
   * @param ticker the time source of {@value #LAST_BATCH_AGE}
   */
  public EventSourceMetrics(Iterable<Tag> tags, Ticker ticker) {
    super(tags);
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  private Stream stream(WorkerId worker) {
    Stream s = streams.get(worker);
    return s != null ? s : streams.computeIfAbsent(worker, Stream::new);
  }

  @Override
  public void onBatch(WorkerId worker, long seq, int events, int storedBlocks) {
    Stream s = stream(worker);
    s.lastBatchNanos.set(ticker.read());
    s.batches.increment();
    s.events.increment(events);
    s.storedBlocks.increment(storedBlocks);
  }

  @Override
  public void onGap(WorkerId worker, long expected, long received) {
    stream(worker).gaps.increment();
  }

  @Override
  public void onReplayStarted(WorkerId worker, long fromSeq) {
    stream(worker).replays.increment();
  }

  @Override
  public void onReplayFinished(WorkerId worker, int batches) {
    stream(worker).replayedBatches.increment(batches);
  }

  @Override
  public void onReplayFailed(WorkerId worker, String reason) {
    stream(worker).replayFailures.increment();
  }

  @Override
  public void onRestart(WorkerId worker, long lastSeq, long seq) {
    stream(worker).restarts.increment();
  }

  @Override
  public void onPurged(WorkerId worker, PurgeReason reason) {
    if (reason == PurgeReason.REMOVED) {
      forget(worker);
      return;
    }
    stream(worker).purges.get(reason).increment();
  }

  /**
   * A worker removed from the subscriber takes its meters with it: with workers that come and go they would pile up
   * without bound, and its {@value #LAST_BATCH_AGE} would grow forever, an event lag alarm for a worker long gone.
   */
  private void forget(WorkerId worker) {
    Stream s = streams.remove(worker);
    if (s != null) {
      s.meters.forEach(meters::remove);
    }
    Counter c = decodeErrors.remove(worker);
    if (c != null) {
      meters.remove(c);
    }
  }

  @Override
  public void onDecodeError(WorkerId worker, String reason) {
    Counter c = decodeErrors.get(worker);
    if (c == null) {
      c = decodeErrors.computeIfAbsent(worker, w -> Counter.builder(DECODE_ERRORS).tags(workerTags(w))
          .description("Malformed KV event messages dropped").register(meters));
    }
    c.increment();
  }

  @Override
  public void onEventsDropped(WorkerId worker, int events, String reason) {
    stream(worker).dropped.increment(events);
  }

  @Override
  public String toString() {
    return "EventSourceMetrics{" + tags + ", workers=" + streams.keySet() + "}";
  }

  /** The meters of one worker's stream. */
  private final class Stream {
    final AtomicLong lastBatchNanos = new AtomicLong(Long.MIN_VALUE);
    final Counter batches;
    final Counter events;
    final Counter storedBlocks;
    final Counter gaps;
    final Counter replays;
    final Counter replayedBatches;
    final Counter replayFailures;
    final Counter restarts;
    final Counter dropped;
    final Map<PurgeReason, Counter> purges = new EnumMap<>(PurgeReason.class);
    final List<Meter> meters = new ArrayList<>();

    Stream(WorkerId worker) {
      Tags t = workerTags(worker);
      batches = counter(BATCHES, t, "batches", "KV event batches applied");
      events = counter(EVENTS, t, "events", "KV events applied");
      storedBlocks = counter(STORED_BLOCKS, t, "blocks", "Blocks of applied stored events");
      gaps = counter(GAPS, t, null, "Sequence gaps detected");
      replays = counter(REPLAYS, t, null, "Replay requests sent");
      replayedBatches = counter(REPLAYED_BATCHES, t, "batches", "Batches delivered by replays");
      replayFailures = counter(REPLAY_FAILURES, t, null, "Replays that failed or timed out");
      restarts = counter(RESTARTS, t, null, "Engine restarts detected");
      dropped = counter(DROPPED_EVENTS, t, "events", "KV events not applied");
      for (PurgeReason reason : PurgeReason.values()) {
        purges.put(reason, counter(PURGES, t.and("reason", reason.name().toLowerCase(Locale.ROOT)), null,
            "Purges of the worker's index entries"));
      }
      meters.addAll(List.of(batches, events, storedBlocks, gaps, replays, replayedBatches, replayFailures, restarts,
          dropped));
      meters.addAll(purges.values());
      meters.add(TimeGauge.builder(LAST_BATCH_AGE, lastBatchNanos, TimeUnit.NANOSECONDS, last -> {
        long at = last.get();
        return at == Long.MIN_VALUE ? Double.NaN : Math.max(0, ticker.read() - at);
      }).tags(t).description("Time since the worker's last applied KV event batch")
          .register(EventSourceMetrics.this.meters));
    }

    private Counter counter(String name, Tags t, String unit, String description) {
      return Counter.builder(name).tags(t).baseUnit(unit).description(description)
          .register(EventSourceMetrics.this.meters);
    }
  }
}
