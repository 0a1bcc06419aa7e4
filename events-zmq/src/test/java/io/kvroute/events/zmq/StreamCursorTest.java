package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/** The recovery rules of {@link StreamCursor}, one fault at a time, against a real index and no sockets. */
class StreamCursorTest {
  private static List<Long> range(long from, long toInclusive) {
    return LongStream.rangeClosed(from, toInclusive).boxed().toList();
  }

  private static void assertHolds(CursorHarness h, long from) {
    assertEquals(range(from, h.engine.payloads.size() - 1), h.appliedSinceReset, "applied sequence numbers");
    assertEquals(h.expectedEvents(from), h.sink.events(CursorHarness.WORKER), "events since the last purge");
  }

  /** Item 1: vLLM's replay includes batches still in flight live; their live copies arrive after the replay. */
  @Test
  void lateLiveCopiesOfReplayedBatches_areDuplicates_notARestart() {
    CursorHarness h = new CursorHarness(1, 10_000, true, 1 << 26);
    for (int i = 0; i < 5; i++) {
      h.deliverLive(h.produce());
    }
    for (int i = 0; i < 5; i++) {
      h.produce(); // 5..9 withheld from the live stream for now
    }
    long next = h.produce();
    h.deliverLive(next); // gap: replay from before 5
    h.serveReplay(100, 0, null); // the replay returns 5..10 and ends
    assertFalse(h.cursor.replaying());
    for (long s = 5; s <= 9; s++) {
      h.deliverLive(s); // the late live copies
    }
    h.deliverLive(h.produce());
    assertEquals(0, h.cursor.restarts);
    assertEquals(List.of(), h.purgeReasons);
    assertEquals(6, h.cursor.duplicates, "5 late copies and the buffered batch 10, which the replay also brought");
    assertHolds(h, 0);
  }

  /** A late live copy older than the fingerprints reach is checked with a replay, then dropped as a duplicate. */
  @Test
  void lateLiveCopyOlderThanTheFingerprints_isCheckedByAReplay_andDropped() {
    CursorHarness h = new CursorHarness(2, 20_000, true, 1L << 30);
    h.deliverLive(h.produce());
    int withheld = StreamCursor.FINGERPRINTS + 500;
    for (int i = 0; i < withheld; i++) {
      h.produce();
    }
    h.deliverLive(h.produce());
    h.serveReplay(100_000, 0, null);
    h.deliverLive(3); // far older than the last 4,096 fingerprints
    assertTrue(h.cursor.replaying(), "checks the engine");
    h.serveReplay(100, 0, null);
    assertFalse(h.cursor.replaying());
    assertEquals(0, h.cursor.restarts);
    assertEquals(2, h.cursor.duplicates, "the late copy and the buffered batch the replay also brought");
    assertHolds(h, 0);
  }

  /**
   * Item 2: a new engine first seen at a sequence above the last one (a gap, not a step back) is recognised by the
   * replayed batches differing from the applied ones; its predecessor's entries are purged first.
   */
  @Test
  void restartSeenAsAGapAhead_isDetectedByFingerprint_andTheOldEntriesArePurged() {
    CursorHarness h = new CursorHarness(3, 10_000, true, 1 << 26);
    for (int i = 0; i <= 9; i++) {
      h.deliverLive(h.produce());
    }
    h.restart(false); // not even a disconnection seen
    for (int i = 0; i < 59; i++) {
      h.produce(); // the new engine's 0..58 are lost
    }
    h.deliverLive(h.produce()); // 59: looks like gap 10..58
    h.serveReplay(1000, 0, null);
    h.serveReplay(1000, 0, null);
    assertEquals(1, h.cursor.restarts);
    assertEquals(List.of(PurgeReason.RESTART), h.purgeReasons);
    assertHolds(h, 0); // the whole new engine, nothing of the old
  }

  /** Item 2: a restart whose first batch continues the old numbering is caught through the reconnection. */
  @Test
  void restartContinuingTheNumbering_isDetectedAfterTheReconnection() {
    CursorHarness h = new CursorHarness(4, 10_000, true, 1 << 26);
    for (int i = 0; i <= 9; i++) {
      h.deliverLive(h.produce());
    }
    h.restart(true);
    for (int i = 0; i < 10; i++) {
      h.produce();
    }
    h.deliverLive(h.produce()); // 10: the next number
    h.serveReplay(1000, 0, null);
    h.serveReplay(1000, 0, null);
    assertEquals(1, h.cursor.restarts);
    assertHolds(h, 0);
  }

  /** Item 2: a disconnected engine's entries are reported stale after one time and purged after another. */
  @Test
  void disconnectedEngine_isMarkedStale_thenPurged_andRebuildsWhenItReturns() {
    CursorHarness h = new CursorHarness(5, 10_000, true, 1 << 26);
    for (int i = 0; i < 3; i++) {
      h.deliverLive(h.produce());
    }
    h.cursor.onDisconnected();
    h.tick(1_999);
    assertFalse(h.cursor.stale());
    h.tick(1);
    assertTrue(h.cursor.stale());
    assertEquals(List.of(), h.purgeReasons);
    h.tick(2_999);
    assertEquals(List.of(), h.purgeReasons);
    h.tick(1);
    assertEquals(List.of(PurgeReason.DISCONNECTED), h.purgeReasons);
    assertEquals(List.of(), h.sink.events(CursorHarness.WORKER));
    assertEquals(StreamCursor.Phase.PURGED, h.cursor.phase());
    h.deliverLive(h.produce()); // back: replays from 0
    h.serveReplay(100, 0, null);
    assertFalse(h.cursor.stale());
    assertHolds(h, 0);
  }

  /** Item 3: replies dropped in the middle of a replay are asked for again from the hole; nothing is purged. */
  @Test
  void holeInTheMiddleOfAReplay_isReRequestedFromTheHole_withoutPurging() {
    CursorHarness h = new CursorHarness(6, 10_000, true, 1 << 26);
    h.deliverLive(h.produce());
    for (int i = 0; i < 100; i++) {
      h.produce();
    }
    h.deliverLive(h.produce());
    // Deliver 40 replies, drop 10, then let the rest through.
    h.serveReplay(40, 0, null);
    for (int i = 0; i < 10; i++) {
      h.pendingReplies.pollFirst();
    }
    int before = h.replayRequests;
    h.serveReplay(1, 0, null); // the reply after the hole
    assertEquals(before + 1, h.replayRequests, "asked again");
    assertEquals(1, h.cursor.holes);
    h.serveReplay(1000, 0, null);
    assertEquals(List.of(), h.purgeReasons);
    assertHolds(h, 0);
  }

  /**
   * Item 4: a batch the engine can never deliver (over the message size limit) costs one counted purge, not a
   * failed replay of the whole window and a cooldown.
   */
  @Test
  void unreceivableBatch_isSkippedWithACountedPurge_andTheReplayCompletes() {
    CursorHarness h = new CursorHarness(7, 10_000, true, 1 << 26);
    h.deliverLive(h.produce());
    for (int i = 0; i < 20; i++) {
      h.produce();
    }
    h.markUnreceivable(8);
    h.deliverLive(h.produce());
    for (int round = 0; round < 10 && h.cursor.replaying(); round++) {
      h.serveReplay(1000, 0, null);
      h.tick(100);
    }
    assertFalse(h.cursor.replaying());
    assertEquals(1, h.cursor.skippedBatches);
    assertEquals(0, h.cursor.replayFailures);
    assertEquals(List.of(PurgeReason.BATCH_UNRECEIVABLE), h.purgeReasons);
    assertHolds(h, 9);
    assertEquals(StreamCursor.Phase.LIVE, h.cursor.phase(), "no cooldown");
  }

  /** Item 5: malformed replies do not keep a replay alive; only valid replies move its deadline. */
  @Test
  void malformedReplies_doNotExtendTheReplayDeadline() {
    CursorHarness h = new CursorHarness(8, 10_000, true, 1 << 26);
    h.deliverLive(h.produce());
    h.produce();
    h.deliverLive(h.produce());
    h.silentRequest = true;
    for (int i = 0; i < 30; i++) {
      h.cursor.onReplayMalformed();
      h.tick(10);
    }
    assertEquals(1, h.cursor.replayFailures, "two unanswered requests of 100 ms each");
    assertEquals(30, h.cursor.malformedReplies);
    assertEquals(List.of(PurgeReason.REPLAY_FAILED), h.purgeReasons);
    assertEquals(StreamCursor.Phase.COOLING, h.cursor.phase());
  }

  /** Item 5: live batches held during a replay are bounded in bytes, and what did not fit is fetched afterwards. */
  @Test
  void liveBufferDuringAReplay_isBoundedInBytes_andTheOverflowIsFetchedAfterwards() {
    CursorHarness h = new CursorHarness(9, 10_000, true, 2_000);
    h.deliverLive(h.produce());
    h.produce();
    h.deliverLive(h.produce()); // gap: replay starts
    long bufferedMax = 0;
    for (int i = 0; i < 200; i++) {
      h.deliverLive(h.produce());
      bufferedMax = Math.max(bufferedMax, h.cursor.bufferedBytes());
    }
    assertTrue(bufferedMax <= 2_000, "buffered " + bufferedMax);
    assertTrue(h.cursor.bufferOverflows > 0);
    for (int i = 0; i < 5; i++) {
      h.serveReplay(10_000, 0, null);
    }
    assertFalse(h.cursor.replaying());
    assertEquals(List.of(), h.purgeReasons);
    assertHolds(h, 0);
  }

  /** A replay that starts later than asked (ring too short) purges once, then holds what the ring reaches. */
  @Test
  void replayStartingLaterThanAsked_purgesOnce_andHoldsTheRingsTail() {
    CursorHarness h = new CursorHarness(10, 5, true, 1 << 26);
    h.deliverLive(h.produce());
    for (int i = 0; i < 20; i++) {
      h.produce();
    }
    h.deliverLive(h.produce());
    h.serveReplay(100, 0, null);
    assertEquals(List.of(PurgeReason.REPLAY_INCOMPLETE), h.purgeReasons);
    assertHolds(h, 17);
  }

  @Test
  void healthQueries_followTheStream() {
    CursorHarness h = new CursorHarness(11, 100, true, 1 << 26);
    assertEquals(-1, h.cursor.lastBatchAgeNanos());
    h.deliverLive(h.produce());
    h.tick(250);
    assertEquals(250_000_000L, h.cursor.lastBatchAgeNanos());
    assertEquals(0, h.cursor.lastSeq());
    assertTrue(h.cursor.connected());
    h.produce();
    h.deliverLive(h.produce());
    assertEquals(StreamCursor.Phase.REPLAYING, h.cursor.phase());
    h.serveReplay(100, 0, null);
    assertEquals(StreamCursor.Phase.LIVE, h.cursor.phase());
    assertEquals(2, h.cursor.lastSeq());
    h.cursor.onDisconnected();
    assertFalse(h.cursor.connected());
  }
}
