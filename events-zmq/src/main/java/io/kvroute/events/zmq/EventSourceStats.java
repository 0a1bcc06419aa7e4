package io.kvroute.events.zmq;

/**
 * Counters of one worker's event streams (all its data-parallel ranks) since it was added; an immutable snapshot,
 * thread-safe.
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
 */
public record EventSourceStats(
    long batches,
    long events,
    long storedBlocks,
    long gaps,
    long replays,
    long replayedBatches,
    long replayFailures,
    long restarts,
    long purges,
    long decodeErrors,
    long droppedEvents,
    long reconnects,
    long duplicates,
    long replayHoles,
    long skippedBatches,
    long bufferOverflows,
    long unacceptedBatches,
    long strayBatches) {}
