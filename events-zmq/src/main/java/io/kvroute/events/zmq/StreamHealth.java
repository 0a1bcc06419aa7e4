package io.kvroute.events.zmq;

import io.kvroute.EventStreamState;
import io.kvroute.WorkerId;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The state of one event stream (one data-parallel rank of one worker), for health checks; an immutable snapshot,
 * thread-safe.
 *
 * @param worker the stream's worker and rank
 * @param state the state reported to the router (see {@link KvEventSubscriber.Builder#reportTo})
 * @param connected whether the live connection is up (a batch arrived, or the transport reported a connection,
 *     since the last disconnection)
 * @param lastBatchAge how long ago the last batch was applied, or null if none was
 * @param lastSequence the last applied sequence number, or -1 when none is (at the start, or after a purge)
 * @param replaying whether a replay is in flight
 * @param cooling whether a failed replay's cooldown is running (gaps purge instead of replaying)
 * @param stale whether the engine has been disconnected longer than the stale time (its entries may be out of
 *     date; they are purged after the purge time)
 * @param purges how many times the stream's entries were purged
 */
public record StreamHealth(
    WorkerId worker,
    EventStreamState state,
    boolean connected,
    @Nullable Duration lastBatchAge,
    long lastSequence,
    boolean replaying,
    boolean cooling,
    boolean stale,
    long purges) {}
