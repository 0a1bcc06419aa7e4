package io.kvroute.events.zmq;

import io.kvroute.EventStreamState;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The state of one event stream (one data-parallel rank of one worker), for health checks; an immutable value,
 * thread-safe.
 *
 * <p>A value class with a factory, as Caffeine's {@code CacheStats}: {@link KvEventSubscriber#health()} returns them,
 * and {@link #of} builds one for tests; it checks its arguments.
 */
public final class StreamHealth {
  private final WorkerId worker;
  private final EventStreamState state;
  private final boolean connected;
  private final @Nullable Duration lastBatchAge;
  private final long lastSequence;
  private final boolean replaying;
  private final boolean cooling;
  private final boolean stale;
  private final long purges;

  private StreamHealth(WorkerId worker, EventStreamState state, boolean connected, @Nullable Duration lastBatchAge,
      long lastSequence, boolean replaying, boolean cooling, boolean stale, long purges) {
    this.worker = worker;
    this.state = state;
    this.connected = connected;
    this.lastBatchAge = lastBatchAge;
    this.lastSequence = lastSequence;
    this.replaying = replaying;
    this.cooling = cooling;
    this.stale = stale;
    this.purges = purges;
  }

  /**
   * A reading with these values.
   *
   * @param worker the stream's worker and rank
   * @param state the state reported to the router (see {@link KvEventSubscriber.Builder#reportTo})
   * @param connected whether the live connection is up (a batch arrived, or the transport reported a connection, since
   *     the last disconnection)
   * @param lastBatchAge how long ago the last batch was applied, or null if none was
   * @param lastSequence the last applied sequence number, or -1 when none is (at the start, or after a purge)
   * @param replaying whether a replay is in flight
   * @param cooling whether a failed replay's cooldown is running (gaps purge instead of replaying)
   * @param stale whether the engine has been disconnected longer than the stale time (its entries may be out of date;
   *     they are purged after the purge time)
   * @param purges how many times the stream's entries were purged
   * @return the reading
   * @throws NullPointerException if {@code worker} or {@code state} is null
   * @throws IllegalArgumentException if {@code lastBatchAge} or {@code purges} is negative, or {@code lastSequence} is
   *     below -1
   */
  public static StreamHealth of(WorkerId worker, EventStreamState state, boolean connected,
      @Nullable Duration lastBatchAge, long lastSequence, boolean replaying, boolean cooling, boolean stale,
      long purges) {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(state, "state");
    Checks.notNegative("purges", purges);
    if (lastBatchAge != null) {
      Checks.notNegative("lastBatchAge", lastBatchAge);
    }
    Checks.inRange("lastSequence", lastSequence, -1, Long.MAX_VALUE);
    return new StreamHealth(worker, state, connected, lastBatchAge, lastSequence, replaying, cooling, stale, purges);
  }

  /**
   * Returns the stream's worker and rank.
   *
   * @return the stream's worker and rank
   */
  public WorkerId worker() {
    return worker;
  }

  /**
   * Returns the state reported to the router (see {@link KvEventSubscriber.Builder#reportTo}).
   *
   * @return the state reported to the router (see {@link KvEventSubscriber.Builder#reportTo})
   */
  public EventStreamState state() {
    return state;
  }

  /**
   * Returns whether the live connection is up (a batch arrived, or the transport reported a connection, since the last
   * disconnection).
   *
   * @return whether the live connection is up (a batch arrived, or the transport reported a connection, since the last
   *     disconnection)
   */
  public boolean connected() {
    return connected;
  }

  /**
   * Returns how long ago the last batch was applied, or null if none was.
   *
   * @return how long ago the last batch was applied, or null if none was
   */
  public @Nullable Duration lastBatchAge() {
    return lastBatchAge;
  }

  /**
   * Returns the last applied sequence number, or -1 when none is (at the start, or after a purge).
   *
   * @return the last applied sequence number, or -1 when none is (at the start, or after a purge)
   */
  public long lastSequence() {
    return lastSequence;
  }

  /**
   * Returns whether a replay is in flight.
   *
   * @return whether a replay is in flight
   */
  public boolean replaying() {
    return replaying;
  }

  /**
   * Returns whether a failed replay's cooldown is running (gaps purge instead of replaying).
   *
   * @return whether a failed replay's cooldown is running (gaps purge instead of replaying)
   */
  public boolean cooling() {
    return cooling;
  }

  /**
   * Returns whether the engine has been disconnected longer than the stale time (its entries may be out of date; they
   * are purged after the purge time).
   *
   * @return whether the engine has been disconnected longer than the stale time (its entries may be out of date; they
   *     are purged after the purge time)
   */
  public boolean stale() {
    return stale;
  }

  /**
   * Returns how many times the stream's entries were purged.
   *
   * @return how many times the stream's entries were purged
   */
  public long purges() {
    return purges;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof StreamHealth other)) {
      return false;
    }
    return worker.equals(other.worker) && state.equals(other.state) && connected == other.connected
        && Objects.equals(lastBatchAge, other.lastBatchAge) && lastSequence == other.lastSequence
        && replaying == other.replaying && cooling == other.cooling && stale == other.stale && purges == other.purges;
  }

  @Override
  public int hashCode() {
    return Objects.hash(worker, state, connected, lastBatchAge, lastSequence, replaying, cooling, stale, purges);
  }

  @Override
  public String toString() {
    return "StreamHealth[worker=" + worker + ", state=" + state + ", connected=" + connected + ", lastBatchAge="
        + lastBatchAge + ", lastSequence=" + lastSequence + ", replaying=" + replaying + ", cooling=" + cooling
        + ", stale=" + stale + ", purges=" + purges + "]";
  }
}
