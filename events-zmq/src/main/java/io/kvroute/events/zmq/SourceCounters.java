package io.kvroute.events.zmq;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** The counters of one event source (all its ranks); thread-safe. */
final class SourceCounters {
  final AtomicLong batches = new AtomicLong();
  final AtomicLong events = new AtomicLong();
  final AtomicLong storedBlocks = new AtomicLong();
  final AtomicLong replayedBatches = new AtomicLong();
  final AtomicLong purges = new AtomicLong();
  final AtomicLong decodeErrors = new AtomicLong();
  final AtomicLong droppedEvents = new AtomicLong();
  final AtomicLong reconnects = new AtomicLong();
  final AtomicLong unacceptedBatches = new AtomicLong();

  /** A snapshot, adding the cursors' own counters. */
  EventSourceStats snapshot(List<StreamCursor> cursors) {
    long gaps = 0;
    long replays = 0;
    long failures = 0;
    long restarts = 0;
    long duplicates = 0;
    long holes = 0;
    long skipped = 0;
    long overflows = 0;
    long strays = 0;
    for (StreamCursor c : cursors) {
      gaps += c.gaps;
      replays += c.replays;
      failures += c.replayFailures;
      restarts += c.restarts;
      duplicates += c.duplicates;
      holes += c.holes;
      skipped += c.skippedBatches;
      overflows += c.bufferOverflows;
      strays += c.strayBatches;
    }
    return EventSourceStats.of(batches.get(), events.get(), storedBlocks.get(), gaps, replays,
        replayedBatches.get(), failures, restarts, purges.get(), decodeErrors.get(), droppedEvents.get(),
        reconnects.get(), duplicates, holes, skipped, overflows, unacceptedBatches.get(), strays);
  }
}
