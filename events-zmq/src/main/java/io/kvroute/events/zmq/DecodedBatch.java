package io.kvroute.events.zmq;

import io.kvroute.KvEvent;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One decoded engine event batch: its timestamp, its events in order and the data-parallel rank that produced it;
 * an immutable value, thread-safe.
 */
public final class DecodedBatch {
  private static final int[] NO_GROUPS = new int[0];

  private final double timestamp;
  private final List<KvEvent> events;
  private final int[] groupIndexes;
  private final @Nullable Integer dataParallelRank;
  private final int skippedEvents;
  private final int invalidEvents;

  DecodedBatch(double timestamp, List<KvEvent> events, int[] groupIndexes, @Nullable Integer dataParallelRank,
      int skippedEvents, int invalidEvents) {
    this.timestamp = timestamp;
    // The codec passes a fresh list that nothing else holds: wrapping it saves copying every decoded batch.
    this.events = Collections.unmodifiableList(events);
    this.groupIndexes = groupIndexes.length == 0 ? NO_GROUPS : groupIndexes;
    this.dataParallelRank = dataParallelRank;
    this.skippedEvents = skippedEvents;
    this.invalidEvents = invalidEvents;
  }

  /**
   * A batch to encode.
   *
   * @param timestamp the batch's time, in seconds since the epoch
   * @param events its events, in order
   * @param dataParallelRank the rank it names, or null for none
   * @return the batch
   * @throws NullPointerException if {@code events} or one of its elements is null
   * @throws IllegalArgumentException if {@code dataParallelRank} is negative
   */
  public static DecodedBatch of(double timestamp, List<? extends KvEvent> events, @Nullable Integer dataParallelRank) {
    Objects.requireNonNull(events, "events");
    if (dataParallelRank != null && dataParallelRank < 0) {
      throw new IllegalArgumentException("dataParallelRank must not be negative but was " + dataParallelRank);
    }
    int[] groups = new int[events.size()];
    java.util.Arrays.fill(groups, -1);
    return new DecodedBatch(timestamp, List.copyOf(events), groups, dataParallelRank, 0, 0);
  }

  /**
   * The engine's wall-clock time of the batch, in seconds since the epoch.
   *
   * @return the timestamp
   */
  public double timestamp() {
    return timestamp;
  }

  /**
   * The events this library understands, in the engine's order.
   *
   * @return an unmodifiable list
   */
  public List<KvEvent> events() {
    return events;
  }

  /**
   * The engine's KV cache group index ({@code group_idx}) of an event.
   *
   * @param index the event's position in {@link #events()}
   * @return its group, or -1 when it was not sent
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public int groupIndex(int index) {
    Objects.checkIndex(index, events.size());
    return index < groupIndexes.length ? groupIndexes[index] : -1;
  }

  /**
   * The data-parallel rank the batch names.
   *
   * @return the rank, or null when the batch has none (vLLM before v0.9.1)
   */
  public @Nullable Integer dataParallelRank() {
    return dataParallelRank;
  }

  /**
   * Events of a type this library does not know, skipped.
   *
   * @return their number
   */
  public int skippedEvents() {
    return skippedEvents;
  }

  /**
   * Well-formed msgpack events with missing or mistyped required fields, dropped.
   *
   * @return their number
   */
  public int invalidEvents() {
    return invalidEvents;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof DecodedBatch other
        && Double.compare(timestamp, other.timestamp) == 0
        && events.equals(other.events)
        && Objects.equals(dataParallelRank, other.dataParallelRank)
        && skippedEvents == other.skippedEvents
        && invalidEvents == other.invalidEvents;
  }

  @Override
  public int hashCode() {
    return Objects.hash(timestamp, events, dataParallelRank, skippedEvents, invalidEvents);
  }

  @Override
  public String toString() {
    return "DecodedBatch{ts=" + timestamp + ", rank=" + dataParallelRank + ", events=" + events
        + (skippedEvents == 0 ? "" : ", skipped=" + skippedEvents)
        + (invalidEvents == 0 ? "" : ", invalid=" + invalidEvents) + "}";
  }
}
