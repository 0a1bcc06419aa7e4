package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvroute.KvEvent.BlockStored;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link BatchApplier} between a stream and a real {@link Router}'s sink, without sockets: which ranks a stream
 * may feed, and the bound on batches held for a worker the router has not registered yet. Expectations come from
 * an independent model of the README's rules, over seeded random batches.
 */
class BatchApplierTest {
  private static final int BLOCK = 4;

  static LongStream seeds() {
    return LongStream.rangeClosed(1, 20);
  }

  private static byte[] batch(long id, int blocks, @Nullable Integer rank) {
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = (id * 64 + i + 1) * 0x9E3779B97F4A7C15L;
    }
    int[] tokens = IntStream.range(0, blocks * BLOCK).map(t -> (int) (id * 1000 + t)).toArray();
    return KvEventCodec.encode(id + 1.0, List.of(BlockStored.of(hashes, null, tokens, BLOCK)), rank, WireFormat.MAP);
  }

  /** Counts what the listener is told was dropped. */
  private static final class Drops implements EventSourceListener {
    int events;

    @Override
    public void onEventsDropped(WorkerId worker, int count, String reason) {
      events += count;
    }
  }

  /**
   * A stream of one rank {@code r} (its source has that rank only) gets batches naming ranks {@code r - 1} to
   * {@code r + 2}, or none (its own): every rank is registered with the router, so only the applier's own check
   * can keep a batch from the wrong slot. Only batches of rank {@code r} (or naming none) reach the index; the
   * others are counted as unaccepted, their events as dropped, and no other rank's slot gets an entry.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aStreamFeedsOnlyItsOwnRank(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int own = random.nextInt(4);
    WorkerId base = WorkerId.of("engine");
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    for (int rank = 0; rank <= own + 2; rank++) {
      router.addWorker(Worker.of(base.withRank(rank)));
    }
    WorkerId stream = base.withRank(own);
    SourceCounters counters = new SourceCounters();
    Drops drops = new Drops();
    BatchApplier applier = new BatchApplier(stream, own, 1, router.eventSink(), drops, counters,
        new CursorHarness.FakeTicker(), 0, 1 << 20, () -> { });
    long ownBlocks = 0;
    int refused = 0;
    int refusedEvents = 0;
    for (int i = 0; i < 40; i++) {
      int pick = random.nextInt(5);
      Integer rank = pick == 4 ? null : Math.max(0, own - 1 + pick);
      int blocks = 1 + random.nextInt(3);
      applier.apply(i, batch(i, blocks, rank), false);
      if (rank == null || rank == own) {
        ownBlocks += blocks;
      } else {
        refused++;
        refusedEvents++;
      }
    }
    assertEquals(ownBlocks, router.indexer().entriesOf(stream), "seed " + seed + ": the stream's own rank");
    for (int rank = 0; rank <= own + 2; rank++) {
      if (rank != own) {
        assertEquals(0, router.indexer().entriesOf(base.withRank(rank)), "seed " + seed + ": rank " + rank);
      }
    }
    assertEquals(refused, counters.unacceptedBatches.get());
    assertEquals(refusedEvents, counters.droppedEvents.get());
    assertEquals(refusedEvents, drops.events);
    assertEquals(40 - refused, counters.batches.get());
  }

  /**
   * Batches of a worker the router has not registered are held, at most {@code holdBytes} of payload: a model adds
   * each batch's size and, once the sum exceeds the bound, drops everything held (counted as unaccepted batches and
   * dropped events, never as stored blocks) and has the stream forget its position, so that it replays from the
   * engine's start once the worker is accepted. When the worker is registered, what is still held is applied, in
   * order, and nothing of what was dropped.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void heldBatchesAreBoundedInBytes_thenDroppedCountedAndForgotten(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    WorkerId worker = WorkerId.of("late");
    Router router = Router.newBuilder().blockSize(BLOCK).build();
    long holdBytes = 300 + random.nextInt(2_000);
    SourceCounters counters = new SourceCounters();
    Drops drops = new Drops();
    AtomicInteger forgotten = new AtomicInteger();
    BatchApplier applier = new BatchApplier(worker, 0, 1, router.eventSink(), drops, counters,
        new CursorHarness.FakeTicker(), 60_000_000_000L, holdBytes, forgotten::incrementAndGet);

    List<Integer> heldBlocks = new ArrayList<>();
    long held = 0;
    int droppedBatches = 0;
    int droppedEvents = 0;
    int forgets = 0;
    int n = 5 + random.nextInt(30);
    for (int i = 0; i < n; i++) {
      int blocks = 1 + random.nextInt(8);
      byte[] payload = batch(i, blocks, null);
      applier.apply(i, payload, false);
      heldBlocks.add(blocks);
      held += payload.length;
      if (held > holdBytes) {
        droppedBatches += heldBlocks.size();
        droppedEvents += heldBlocks.size();
        heldBlocks.clear();
        held = 0;
        forgets++;
      }
      String at = "seed " + seed + ", bound " + holdBytes + ", batch " + i;
      assertEquals(heldBlocks.size(), applier.heldBatches(), at + ": held");
      assertEquals(droppedBatches, counters.unacceptedBatches.get(), at + ": unaccepted batches");
      assertEquals(droppedEvents, counters.droppedEvents.get(), at + ": dropped events");
      assertEquals(droppedEvents, drops.events, at + ": reported dropped");
      assertEquals(forgets, forgotten.get(), at + ": position forgotten");
      assertEquals(0, counters.storedBlocks.get(), at + ": nothing stored yet");
    }
    router.addWorker(Worker.of(worker));
    applier.tick();
    long expected = heldBlocks.stream().mapToLong(Integer::longValue).sum();
    assertEquals(expected, router.indexer().entriesOf(worker), "seed " + seed + ": what was still held");
    assertEquals(expected, counters.storedBlocks.get());
    assertEquals(0, applier.heldBatches());
  }
}
