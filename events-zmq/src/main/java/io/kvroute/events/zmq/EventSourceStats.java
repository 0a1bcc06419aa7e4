package io.kvroute.events.zmq;

import io.kvroute.internal.Checks;
import java.util.Arrays;
import java.util.Objects;

/**
 * Counters of one worker's event streams (all its data-parallel ranks) since it was added; an immutable value,
 * thread-safe.
 *
 * <p>A value class with a factory, as Caffeine's {@code CacheStats}: {@link KvEventSubscriber#stats()} returns them,
 * and {@link #of} builds one for tests; it checks its arguments.
 */
public final class EventSourceStats {
  private final long batches;
  private final long events;
  private final long storedBlocks;
  private final long gaps;
  private final long replays;
  private final long replayedBatches;
  private final long replayFailures;
  private final long restarts;
  private final long purges;
  private final long decodeErrors;
  private final long droppedEvents;
  private final long reconnects;
  private final long duplicates;
  private final long replayHoles;
  private final long skippedBatches;
  private final long bufferOverflows;
  private final long unacceptedBatches;
  private final long strayBatches;

  private EventSourceStats(long batches, long events, long storedBlocks, long gaps, long replays, long replayedBatches,
      long replayFailures, long restarts, long purges, long decodeErrors, long droppedEvents, long reconnects,
      long duplicates, long replayHoles, long skippedBatches, long bufferOverflows, long unacceptedBatches,
      long strayBatches) {
    this.batches = batches;
    this.events = events;
    this.storedBlocks = storedBlocks;
    this.gaps = gaps;
    this.replays = replays;
    this.replayedBatches = replayedBatches;
    this.replayFailures = replayFailures;
    this.restarts = restarts;
    this.purges = purges;
    this.decodeErrors = decodeErrors;
    this.droppedEvents = droppedEvents;
    this.reconnects = reconnects;
    this.duplicates = duplicates;
    this.replayHoles = replayHoles;
    this.skippedBatches = skippedBatches;
    this.bufferOverflows = bufferOverflows;
    this.unacceptedBatches = unacceptedBatches;
    this.strayBatches = strayBatches;
  }

  /**
   * A reading with these values; maps are copied. Counts must not be negative.
   *
   * @param batches batches applied to the sink, live or replayed
   * @param events events applied
   * @param storedBlocks blocks of applied {@code BlockStored} events (never those of dropped batches)
   * @param gaps sequence gaps detected
   * @param replays replay requests sent (a replay re-asked after a hole or a stall counts once)
   * @param replayedBatches batches applied from replays
   * @param replayFailures replays that failed or timed out
   * @param restarts engine restarts detected (sequence back, or a replayed batch differing from the applied one)
   * @param purges times the worker's entries were purged
   * @param decodeErrors malformed messages dropped (frame count, sequence frame, payload)
   * @param droppedEvents events not applied (unknown type, malformed, non-prefix cache group, unaccepted worker or
   *     rank)
   * @param reconnects times a live connection was lost (or its handshake stalled) and the subscription was renewed
   * @param duplicates batches received again under a number already applied (late live copies of replayed batches)
   * @param replayHoles holes in the middle of a replay, re-requested from the hole
   * @param skippedBatches batches the engine could never deliver (over the message size limit), skipped with a purge
   * @param bufferOverflows live batches not buffered during a replay (count or byte bound), fetched again afterwards
   * @param unacceptedBatches batches dropped because the sink did not accept their worker or rank
   * @param strayBatches held live batches dropped because a replay showed they were not the current engine's (an
   *     earlier engine's, received before a restart was recognised)
   * @return the reading
   * @throws IllegalArgumentException if a count is negative, naming it
   */
  public static EventSourceStats of(long batches, long events, long storedBlocks, long gaps, long replays,
      long replayedBatches, long replayFailures, long restarts, long purges, long decodeErrors, long droppedEvents,
      long reconnects, long duplicates, long replayHoles, long skippedBatches, long bufferOverflows,
      long unacceptedBatches, long strayBatches) {
    Checks.notNegative("batches", batches);
    Checks.notNegative("events", events);
    Checks.notNegative("storedBlocks", storedBlocks);
    Checks.notNegative("gaps", gaps);
    Checks.notNegative("replays", replays);
    Checks.notNegative("replayedBatches", replayedBatches);
    Checks.notNegative("replayFailures", replayFailures);
    Checks.notNegative("restarts", restarts);
    Checks.notNegative("purges", purges);
    Checks.notNegative("decodeErrors", decodeErrors);
    Checks.notNegative("droppedEvents", droppedEvents);
    Checks.notNegative("reconnects", reconnects);
    Checks.notNegative("duplicates", duplicates);
    Checks.notNegative("replayHoles", replayHoles);
    Checks.notNegative("skippedBatches", skippedBatches);
    Checks.notNegative("bufferOverflows", bufferOverflows);
    Checks.notNegative("unacceptedBatches", unacceptedBatches);
    Checks.notNegative("strayBatches", strayBatches);
    return new EventSourceStats(batches, events, storedBlocks, gaps, replays, replayedBatches, replayFailures, restarts,
        purges, decodeErrors, droppedEvents, reconnects, duplicates, replayHoles, skippedBatches, bufferOverflows,
        unacceptedBatches, strayBatches);
  }

  /**
   * Returns batches applied to the sink, live or replayed.
   *
   * @return batches applied to the sink, live or replayed
   */
  public long batches() {
    return batches;
  }

  /**
   * Returns events applied.
   *
   * @return events applied
   */
  public long events() {
    return events;
  }

  /**
   * Returns blocks of applied {@code BlockStored} events (never those of dropped batches).
   *
   * @return blocks of applied {@code BlockStored} events (never those of dropped batches)
   */
  public long storedBlocks() {
    return storedBlocks;
  }

  /**
   * Returns sequence gaps detected.
   *
   * @return sequence gaps detected
   */
  public long gaps() {
    return gaps;
  }

  /**
   * Returns replay requests sent (a replay re-asked after a hole or a stall counts once).
   *
   * @return replay requests sent (a replay re-asked after a hole or a stall counts once)
   */
  public long replays() {
    return replays;
  }

  /**
   * Returns batches applied from replays.
   *
   * @return batches applied from replays
   */
  public long replayedBatches() {
    return replayedBatches;
  }

  /**
   * Returns replays that failed or timed out.
   *
   * @return replays that failed or timed out
   */
  public long replayFailures() {
    return replayFailures;
  }

  /**
   * Returns engine restarts detected (sequence back, or a replayed batch differing from the applied one).
   *
   * @return engine restarts detected (sequence back, or a replayed batch differing from the applied one)
   */
  public long restarts() {
    return restarts;
  }

  /**
   * Returns times the worker's entries were purged.
   *
   * @return times the worker's entries were purged
   */
  public long purges() {
    return purges;
  }

  /**
   * Returns malformed messages dropped (frame count, sequence frame, payload).
   *
   * @return malformed messages dropped (frame count, sequence frame, payload)
   */
  public long decodeErrors() {
    return decodeErrors;
  }

  /**
   * Returns events not applied (unknown type, malformed, non-prefix cache group, unaccepted worker or rank).
   *
   * @return events not applied (unknown type, malformed, non-prefix cache group, unaccepted worker or rank)
   */
  public long droppedEvents() {
    return droppedEvents;
  }

  /**
   * Returns times a live connection was lost (or its handshake stalled) and the subscription was renewed.
   *
   * @return times a live connection was lost (or its handshake stalled) and the subscription was renewed
   */
  public long reconnects() {
    return reconnects;
  }

  /**
   * Returns batches received again under a number already applied (late live copies of replayed batches).
   *
   * @return batches received again under a number already applied (late live copies of replayed batches)
   */
  public long duplicates() {
    return duplicates;
  }

  /**
   * Returns holes in the middle of a replay, re-requested from the hole.
   *
   * @return holes in the middle of a replay, re-requested from the hole
   */
  public long replayHoles() {
    return replayHoles;
  }

  /**
   * Returns batches the engine could never deliver (over the message size limit), skipped with a purge.
   *
   * @return batches the engine could never deliver (over the message size limit), skipped with a purge
   */
  public long skippedBatches() {
    return skippedBatches;
  }

  /**
   * Returns live batches not buffered during a replay (count or byte bound), fetched again afterwards.
   *
   * @return live batches not buffered during a replay (count or byte bound), fetched again afterwards
   */
  public long bufferOverflows() {
    return bufferOverflows;
  }

  /**
   * Returns batches dropped because the sink did not accept their worker or rank.
   *
   * @return batches dropped because the sink did not accept their worker or rank
   */
  public long unacceptedBatches() {
    return unacceptedBatches;
  }

  /**
   * Returns held live batches dropped because a replay showed they were not the current engine's (an earlier engine's,
   * received before a restart was recognised).
   *
   * @return held live batches dropped because a replay showed they were not the current engine's (an earlier engine's,
   *     received before a restart was recognised)
   */
  public long strayBatches() {
    return strayBatches;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof EventSourceStats other)) {
      return false;
    }
    return batches == other.batches && events == other.events && storedBlocks == other.storedBlocks
        && gaps == other.gaps && replays == other.replays && replayedBatches == other.replayedBatches
        && replayFailures == other.replayFailures && restarts == other.restarts && purges == other.purges
        && decodeErrors == other.decodeErrors && droppedEvents == other.droppedEvents && reconnects == other.reconnects
        && duplicates == other.duplicates && replayHoles == other.replayHoles && skippedBatches == other.skippedBatches
        && bufferOverflows == other.bufferOverflows && unacceptedBatches == other.unacceptedBatches
        && strayBatches == other.strayBatches;
  }

  @Override
  public int hashCode() {
    int h = Arrays.hashCode(new long[] {batches, events, storedBlocks, gaps, replays, replayedBatches, replayFailures,
        restarts, purges, decodeErrors, droppedEvents, reconnects, duplicates, replayHoles, skippedBatches,
        bufferOverflows, unacceptedBatches, strayBatches});
    return h;
  }

  @Override
  public String toString() {
    return "EventSourceStats[batches=" + batches + ", events=" + events + ", storedBlocks=" + storedBlocks + ", gaps="
        + gaps + ", replays=" + replays + ", replayedBatches=" + replayedBatches + ", replayFailures=" + replayFailures
        + ", restarts=" + restarts + ", purges=" + purges + ", decodeErrors=" + decodeErrors + ", droppedEvents="
        + droppedEvents + ", reconnects=" + reconnects + ", duplicates=" + duplicates + ", replayHoles=" + replayHoles
        + ", skippedBatches=" + skippedBatches + ", bufferOverflows=" + bufferOverflows + ", unacceptedBatches="
        + unacceptedBatches + ", strayBatches=" + strayBatches + "]";
  }
}
