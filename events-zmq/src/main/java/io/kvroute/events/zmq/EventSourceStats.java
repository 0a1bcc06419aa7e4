package io.kvroute.events.zmq;

/**
 * Counters of one worker's event streams (all its data-parallel ranks) since it was added; an immutable snapshot,
 * thread-safe.
 *
 * @param batches batches applied, live or replayed
 * @param events events applied
 * @param storedBlocks blocks of applied {@code BlockStored} events
 * @param gaps sequence gaps detected
 * @param replays replay requests sent
 * @param replayedBatches batches applied from replays
 * @param replayFailures replays that failed or timed out
 * @param restarts engine restarts detected (sequence going backwards)
 * @param purges times the worker's entries were purged
 * @param decodeErrors malformed messages dropped (frame count, sequence frame, payload)
 * @param droppedEvents events not applied (unknown type, malformed, non-prefix cache group)
 * @param reconnects times a live connection was lost (or its handshake stalled) and the subscription was renewed
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
    long reconnects) {}
