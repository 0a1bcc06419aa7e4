package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.RemoteLoad;
import io.kvroute.SharedLoad;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link LingerPublishing} against NatsLoadSync's publisher rule worked out by hand: parked while idle, the first
 * delta after a quiet period published at once; after a publish, a poll every batch delay {@code B} publishing what
 * came meanwhile; parked again after four empty polls; each batch reaching the peers {@code L} after its publish.
 */
class LingerPublishingTest {
  private static final long B = 100_000;
  private static final long L = 30_000;

  /** A replica's real port, recording the hooks played into it and when they were delivered. */
  private static final class Recorder implements SharedLoad {
    final List<String> calls = new ArrayList<>();

    @Override
    public void start(RemoteLoad view) {}

    @Override
    public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
        boolean predicted) {
      calls.add("book " + bookingId + " " + worker + " " + prefillTokens + " " + hashes[blocks - 1] + " " + blocks);
    }

    @Override
    public void firstToken(long bookingId) {
      calls.add("first " + bookingId);
    }

    @Override
    public void closed(long bookingId) {
      calls.add("close " + bookingId);
    }
  }

  private long now;
  private final List<String> delivered = new ArrayList<>();

  /** The simulation's loop: the model runs whenever it is due before {@code t}, then the clock moves to {@code t}. */
  private void advance(LingerPublishing model, long t) {
    for (long due = model.due(); due < t; due = model.due()) {
      now = Math.max(now, due);
      model.run();
    }
    now = t;
  }

  @Test
  void aQuietPublisherSendsAtOnceAndALingeringOneAtItsNextPoll() {
    Recorder[] ports = {new Recorder(), new Recorder()};
    LingerPublishing model = new LingerPublishing(ports, (r, calls, target) -> {
      int before = ((Recorder) target).calls.size();
      calls.forEach(c -> c.accept(target));
      for (String call : ((Recorder) target).calls.subList(before, ((Recorder) target).calls.size())) {
        delivered.add(r + " " + call + " at " + now / 1000);
      }
    }, B, L);
    model.clock(() -> now);
    SharedLoad a = model.port(0);
    SharedLoad b = model.port(1);
    long[] hashes = {11, 12, 13};
    WorkerId w = WorkerId.of("w");

    advance(model, 0);
    a.booked(1, w, 40, hashes, 3, false); // idle: published at 0, delivered at 30 us
    hashes[2] = 99; // the hook's array is valid only during the call: the model must have copied it
    advance(model, 50_000);
    a.firstToken(1); // lingering since 0 (polls at 100, 200, 300, 400): published at 100, delivered at 130
    advance(model, 120_000);
    a.closed(1); // polls reset at 100: published at 200, delivered at 230; empty polls 300, 400, 500, 600
    b.booked(7, w, 5, hashes, 2, false); // replica 1 is idle: published at once, delivered at 150
    advance(model, 550_000);
    a.booked(2, w, 8, hashes, 1, false); // still lingering (next poll at 600): delivered at 630
    advance(model, 1_050_000);
    a.closed(2); // polls 700..1,000 empty, parked since 1,000: published at once, delivered at 1,080
    advance(model, 5_000_000);

    assertEquals(List.of("0 book 1 w 40 13 3 at 30", "0 first 1 at 130", "1 book 7 w 5 12 2 at 150",
        "0 close 1 at 230", "0 book 2 w 8 11 1 at 630", "0 close 2 at 1080"), delivered);
    assertEquals(Long.MAX_VALUE, model.due(), "both publishers parked again");
    assertTrue(model.summary().startsWith("6 batches, 3 after a quiet period, 6 deltas"), model.summary());
    // Waits: 30, 80, 110, 30, 80, 30 us: mean 60.
    assertTrue(model.summary().endsWith("mean 60.0 us from a delta to its delivery"), model.summary());
  }

  @Test
  void theOraclesDeliverEverythingAtOnce() {
    Recorder[] ports = {new Recorder(), new Recorder()};
    List<Integer> from = new ArrayList<>();
    LingerPublishing model = new LingerPublishing(ports, (r, calls, target) -> {
      from.add(r);
      calls.forEach(c -> c.accept(target));
    }, B, L);
    model.clock(() -> now);
    advance(model, 0);
    model.port(0).firstToken(1);
    model.port(0).closed(1);
    model.port(1).closed(3);
    model.run(); // the wake-ups publish at 0, to be delivered at 30 us
    model.port(0).closed(2); // waits for the poll at 100 us
    model.deliverAllNow();
    assertEquals(List.of(0, 0, 1), from, "replica 0's published batch, then its unpublished one, then replica 1's");
    assertEquals(List.of("first 1", "close 1", "close 2"), ports[0].calls);
    assertEquals(List.of("close 3"), ports[1].calls);
  }
}
