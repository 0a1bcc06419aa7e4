package io.kvroute.events.zmq;

import org.jspecify.annotations.Nullable;

/**
 * What {@link KvEventCodec#decodeInto} reports of a batch besides its events: its timestamp, data-parallel rank and
 * the events it dropped; an immutable value, thread-safe.
 *
 * @param timestamp the engine's wall-clock time of the batch, in seconds since the epoch
 * @param dataParallelRank the data-parallel rank the batch names, or null when it has none
 * @param skippedEvents events of a type this library does not know, skipped
 * @param invalidEvents well-formed msgpack events with missing or mistyped required fields, dropped
 */
public record BatchHeader(double timestamp, @Nullable Integer dataParallelRank, int skippedEvents,
    int invalidEvents) {}
