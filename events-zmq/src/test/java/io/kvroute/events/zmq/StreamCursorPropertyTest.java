package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.IndexInvariants;
import io.kvroute.KvEvent;
import io.kvroute.KvIndexer;
import io.kvroute.WorkerId;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Generated fault scenarios through a {@link StreamCursor} and a real {@link KvIndexer}, no sockets: dropped,
 * duplicated and late live batches, engine restarts at any sequence (seen or unseen disconnections), replay holes,
 * unreceivable (oversized) batches, unanswered replays, short replay rings, tight buffers, spurious reconnections.
 *
 * <p>After the faults stop and the stream settles, the index must hold exactly the current engine's batches from
 * some start {@code S} to its last one (never a batch of an earlier engine, never a hole), and {@code S} must be 0
 * (the loss-free state) unless a purge was counted or the engine's ring no longer held what was lost. The expected
 * index is built independently: a fresh {@code KvIndexer} fed the engine's own event lists.
 */
class StreamCursorPropertyTest {
  private static final int SCENARIOS_PER_SEED = 500;

  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 20).mapToObj(Arguments::of); // 20 x 500 = 10,000 scenarios
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void everyScenario_endsInTheLossFreeStateOrAfterACountedPurge(long seed) {
    for (int i = 0; i < SCENARIOS_PER_SEED; i++) {
      long scenario = seed * 1_000_003L + i;
      CursorHarness[] harness = new CursorHarness[1];
      try {
        run(scenario, harness);
      } catch (AssertionError | RuntimeException e) {
        String trace = harness[0] == null ? "" : String.join("\n", harness[0].trace);
        throw new AssertionError("scenario " + scenario + " (seed " + seed + ", #" + i + "): " + e.getMessage()
            + (trace.isEmpty() ? " (run with -Dcursor.trace=true for a trace)" : "\n" + trace), e);
      }
    }
  }

  private static void run(long scenario, CursorHarness[] out) {
    SplittableRandom r = new SplittableRandom(scenario);
    boolean replay = r.nextInt(10) != 0;
    int ring = r.nextInt(4) == 0 ? 3 + r.nextInt(40) : 10_000;
    long maxBytes = r.nextInt(5) == 0 ? 500 + r.nextInt(5_000) : 1L << 26;
    double dropChance = r.nextDouble() * 0.2;
    double dupChance = r.nextDouble() * 0.1;
    double lateChance = r.nextDouble() * 0.5;
    double holeChance = r.nextInt(4) == 0 ? r.nextDouble() * 0.1 : 0;
    double restartChance = r.nextInt(3) == 0 ? 0.04 : 0;
    double oversizeChance = r.nextInt(4) == 0 ? 0.03 : 0;
    double silenceChance = r.nextInt(4) == 0 ? 0.05 : 0;
    double reconnectChance = r.nextInt(4) == 0 ? 0.04 : 0;
    CursorHarness h = new CursorHarness(scenario, ring, replay, maxBytes);
    out[0] = h;
    int steps = 10 + r.nextInt(70);
    boolean mustDeliver = false;
    for (int step = 0; step < steps; step++) {
      double roll = r.nextDouble();
      if (roll < restartChance) {
        // A new engine. It may publish a while before the subscriber sees it, so its first visible sequence can be
        // anything. Without a disconnection seen, nothing can tell a new engine whose first visible batch
        // continues the old numbering from the old one; the scenario avoids exactly that coincidence.
        long last = h.cursor.lastSeq();
        boolean seen = r.nextInt(5) != 0;
        h.restart(seen);
        int unseen = r.nextInt(30);
        if (!seen && unseen == last + 1) {
          unseen++;
        }
        for (int k = 0; k < unseen; k++) {
          h.produce();
        }
        mustDeliver = !seen;
        continue;
      }
      if (roll < restartChance + reconnectChance) {
        h.cursor.onDisconnected(); // a reconnection (for example a stalled handshake), same engine
      }
      if (r.nextDouble() < silenceChance) {
        h.silenceNext = true;
      }
      long seq = h.produce();
      if (r.nextDouble() < oversizeChance && seq > 0) {
        h.markUnreceivable(seq);
      }
      if (!mustDeliver && r.nextDouble() < dropChance) {
        if (r.nextDouble() < lateChance) {
          h.delayedLive.add(new CursorHarness.Reply(seq, h.engine.payloads.get((int) seq)));
        }
      } else {
        h.deliverLive(seq);
        mustDeliver = false;
        if (r.nextDouble() < dupChance) {
          h.deliverLive(seq);
        }
      }
      if (!h.delayedLive.isEmpty() && r.nextInt(3) == 0) {
        CursorHarness.Reply late = h.delayedLive.pollFirst();
        h.deliverLive(late.seq());
      }
      h.serveReplay(r.nextInt(40), holeChance, r);
      h.tick(1 + r.nextInt(60));
    }
    settle(h, r);
    // Two final batches, delivered: the stream must reach the engine's last batch.
    for (int k = 0; k < 2; k++) {
      h.silenceNext = false;
      long last = h.produce();
      h.deliverLive(last);
      settle(h, r);
    }
    check(h, replay, ring);
  }

  private static void settle(CursorHarness h, SplittableRandom r) {
    for (int round = 0; round < 2_000; round++) {
      while (!h.delayedLive.isEmpty()) {
        CursorHarness.Reply late = h.delayedLive.pollFirst();
        h.deliverLive(late.seq());
      }
      h.serveReplay(100_000, 0, null);
      if (!h.cursor.replaying() && h.cursor.bufferedBatches() == 0) {
        return;
      }
      h.tick(50);
    }
    fail("did not settle: phase " + h.cursor.phase());
  }

  private static void check(CursorHarness h, boolean replay, int ring) {
    CursorHarness.Engine engine = h.engine;
    long last = engine.payloads.size() - 1;
    assertEquals(last, h.cursor.lastSeq(), "reaches the engine's last batch");
    List<Long> applied = h.appliedSinceReset;
    assertTrue(!applied.isEmpty(), "applied the final batches");
    long start = applied.get(0);
    for (int i = 0; i < applied.size(); i++) {
      if (applied.get(i) != start + i) {
        fail("applied since the last purge is not contiguous: " + applied);
      }
    }
    List<KvEvent> expected = h.expectedEvents(start);
    assertEquals(expected, h.sink.events(CursorHarness.WORKER), "the index holds this engine's batches " + start
        + ".." + last + " and nothing else");
    // A skipped batch purges, and right after one the next engine's identity cannot be checked: its tail is kept.
    boolean lossFreePossible = replay && ring > last && !h.anyUnreceivable && h.cursor.replayFailures == 0;
    if (lossFreePossible) {
      assertEquals(0, start, "loss-free state expected; purges " + h.purgeReasons + ", unreceivable "
          + engine.unreceivable + ", ring " + ring + ", last " + last);
      if (h.engines == 1) {
        assertEquals(List.of(), h.purgeReasons, "one engine, nothing lost for good: no purge");
      }
    } else if (start > 0) {
      boolean explained = !h.purgeReasons.isEmpty() || ring <= last || !replay;
      assertTrue(explained, "started at " + start + " without a counted purge or a short ring");
    }
    assertEquals(h.purgeReasons.size(), h.cursor.purges, "every purge is counted");
    // The index itself, against an independent one fed the engine's own events.
    KvIndexer reference = KvIndexer.newBuilder().blockSize(CursorHarness.BLOCK).maxEntries(4096).build();
    WorkerId w = CursorHarness.WORKER;
    reference.applyAll(w, expected);
    assertEquals(reference.entriesOf(w), h.index.entriesOf(w), "entries");
    for (int[] prompt : engine.model.prompts()) {
      long[] hashes = reference.hasher().sequenceHashes(prompt);
      assertEquals(reference.findMatches(hashes).get(w), h.index.findMatches(hashes).get(w), "prompt match");
    }
    IndexInvariants.check(h.index);
  }
}
