package io.kvroute.examples;

import io.kvroute.RemoteLoad;
import io.kvroute.SharedLoad;
import io.kvroute.Ticker;
import io.kvroute.WorkerId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

/**
 * {@link NatsLoadSync}'s publishing rule played in the simulation's virtual time, for {@code ReplicaExperiment
 * --publish linger}; not thread-safe (the simulation's only thread calls everything).
 *
 * <p>Each replica's router gets a {@link #port} that records the router's deltas instead of handing them to its
 * {@code NatsLoadSync} at once, and plays them into it when the real publisher would have published them, plus
 * {@code latency}: the rule of {@code NatsLoadSync}'s publisher thread, which is parked while nothing is batched;
 * the first delta after that wakes it and is published at once; it then polls every batch delay {@code B},
 * publishing whatever came meanwhile, and parks again after four polls in a row found nothing. So a delta that
 * finds the publisher idle reaches the peers {@code latency} later (the wake-up, the encoding and one NATS
 * delivery, publisher to server to subscriber), and one made while it lingers waits for the next poll, up to
 * {@code B}, then {@code latency}. A published batch reaches every peer at once, as the experiment's grid does.
 *
 * <p>The grid it replaces ({@code --publish grid}: every replica flushed every {@code B} of virtual time,
 * delivered at that instant) delivers a delta {@code U[0, B)} after it was made whatever the publisher's state, and
 * with no delivery latency: shorter than this rule whenever the publisher lingers (the same wait, plus
 * {@code latency}), longer only for a delta after a quiet period when {@code latency} is under the grid's wait.
 */
final class LingerPublishing {
  /** After a publish the publisher polls this many batch delays before it parks (NatsLoadSync's LINGER_POLLS). */
  static final int LINGER_POLLS = 4;

  private final SharedLoad[] targets;
  private final Delivery delivery;
  private final long batchNanos;
  private final long latencyNanos;
  private final Replica[] replicas;
  private Ticker clock = () -> 0;
  private long published;
  private long wakeups;
  private long deltas;
  private double waitNanos;

  /** Where a published batch goes: the experiment plays it into the replica's sync and delivers it to the peers. */
  interface Delivery {
    /**
     * Replica {@code replica}'s published batch reaches its peers now.
     *
     * @param replica the publishing replica
     * @param calls its router's hooks, in order, to call on the replica's real port
     * @param target that port
     */
    void deliver(int replica, List<Consumer<SharedLoad>> calls, SharedLoad target);
  }

  /**
   * A model of {@code targets.length} replicas' publishers.
   *
   * @param targets each replica's real port (a {@code NatsLoadSync} in manual flush mode), bound by {@link #port}'s
   *     {@code start} and called with the router's deltas when they are delivered
   * @param delivery plays a delivered batch
   * @param batchNanos the publisher's poll interval while lingering (its batch delay)
   * @param latencyNanos from a publish to the peers applying it
   */
  LingerPublishing(SharedLoad[] targets, Delivery delivery, long batchNanos, long latencyNanos) {
    this.targets = targets;
    this.delivery = delivery;
    this.batchNanos = batchNanos;
    this.latencyNanos = latencyNanos;
    this.replicas = new Replica[targets.length];
    for (int r = 0; r < targets.length; r++) {
      replicas[r] = new Replica(r);
    }
  }

  /** The simulation's clock (the routers' ticker). */
  void clock(Ticker ticker) {
    this.clock = ticker;
  }

  /** The port replica {@code r}'s router books through. */
  SharedLoad port(int r) {
    return replicas[r];
  }

  /** The next virtual time something is due: a poll or wake-up, or a published batch reaching the peers. */
  long due() {
    long due = Long.MAX_VALUE;
    for (Replica r : replicas) {
      due = Math.min(due, r.nextCheck);
      Batch b = r.inFlight.peekFirst();
      if (b != null) {
        due = Math.min(due, b.deliverAt);
      }
    }
    return due;
  }

  /** Runs what is due now: the publishers' checks, then the deliveries, in time order. */
  void run() {
    long now = clock.read();
    for (Replica r : replicas) {
      if (r.nextCheck <= now) {
        r.check(r.nextCheck);
      }
    }
    while (true) {
      Replica first = null;
      for (Replica r : replicas) {
        Batch b = r.inFlight.peekFirst();
        if (b != null && b.deliverAt <= now && (first == null || b.deliverAt < first.inFlight.peekFirst().deliverAt)) {
          first = r;
        }
      }
      if (first == null) {
        return;
      }
      Batch b = first.inFlight.pollFirst();
      delivery.deliver(first.index, b.calls, targets[first.index]);
    }
  }

  /**
   * For the oracles: every replica's deltas, published or not, reach every peer now (the publishers' states stay:
   * a lingering one finds nothing at its next poll).
   */
  void deliverAllNow() {
    for (Replica r : replicas) {
      while (!r.inFlight.isEmpty()) {
        delivery.deliver(r.index, r.inFlight.pollFirst().calls, targets[r.index]);
      }
      if (!r.pending.isEmpty()) {
        delivery.deliver(r.index, r.pending, targets[r.index]);
        r.pending = new ArrayList<>();
        r.pendingAt.clear();
      }
      long now = clock.read();
      for (long[] slot : r.bookingDelivery) {
        slot[0] = Math.min(slot[0], now);
      }
      r.pendingBookings.clear();
    }
  }

  /**
   * When replica {@code replica}'s {@code k}-th booking (counting from 0, in the order its router booked) reached
   * its peers, in virtual nanoseconds; {@link Long#MAX_VALUE} if it has not been published yet.
   */
  long bookingDeliveredAt(int replica, int k) {
    List<long[]> d = replicas[replica].bookingDelivery;
    return k < d.size() ? d.get(k)[0] : Long.MAX_VALUE;
  }

  /** Batches published, wake-ups (publishes after a quiet period), and the mean wait of a delta before delivery. */
  String summary() {
    return String.format(java.util.Locale.ROOT, "%d batches, %d after a quiet period, %d deltas, mean %.1f us from"
        + " a delta to its delivery", published, wakeups, deltas, deltas == 0 ? 0 : waitNanos / deltas / 1e3);
  }

  private record Batch(long deliverAt, List<Consumer<SharedLoad>> calls) {}

  /** One replica's publisher state and port. */
  private final class Replica implements SharedLoad {
    final int index;
    List<Consumer<SharedLoad>> pending = new ArrayList<>();
    final List<Long> pendingAt = new ArrayList<>();
    final ArrayDeque<Batch> inFlight = new ArrayDeque<>();
    // Per booking, in booking order, its delivery time (MAX_VALUE until published); the unpublished ones' slots.
    final List<long[]> bookingDelivery = new ArrayList<>();
    final List<long[]> pendingBookings = new ArrayList<>();
    long nextCheck = Long.MAX_VALUE; // MAX_VALUE: the publisher is parked until a hook wakes it
    int polls;

    Replica(int index) {
      this.index = index;
    }

    /** The publisher looks at what is batched at time {@code at}. */
    void check(long at) {
      if (!pending.isEmpty()) {
        published++;
        long deliverAt = at + latencyNanos;
        for (long t : pendingAt) {
          waitNanos += deliverAt - t;
        }
        deltas += pending.size();
        inFlight.addLast(new Batch(deliverAt, pending));
        pending = new ArrayList<>();
        pendingAt.clear();
        for (long[] slot : pendingBookings) {
          slot[0] = deliverAt;
        }
        pendingBookings.clear();
        polls = batchNanos > 0 ? LINGER_POLLS : 0;
      } else {
        polls = Math.max(0, polls - 1);
      }
      nextCheck = polls == 0 ? Long.MAX_VALUE : at + batchNanos;
    }

    private void offerBooking(Consumer<SharedLoad> call) {
      long[] slot = {Long.MAX_VALUE};
      bookingDelivery.add(slot);
      pendingBookings.add(slot);
      offer(call);
    }

    private void offer(Consumer<SharedLoad> call) {
      pending.add(call);
      long now = clock.read();
      pendingAt.add(now);
      if (nextCheck == Long.MAX_VALUE) { // the hook wakes the parked publisher, which publishes at once
        wakeups++;
        nextCheck = now;
      }
    }

    @Override
    public void start(RemoteLoad view) {
      targets[index].start(view);
    }

    @Override
    public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
        boolean predicted) {
      long[] copy = Arrays.copyOf(hashes, blocks);
      offerBooking(s -> s.booked(bookingId, worker, prefillTokens, copy, blocks, predicted));
    }

    @Override
    public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
        boolean predicted, int warmBlocks, boolean newPrefix) {
      long[] copy = Arrays.copyOf(hashes, blocks);
      offerBooking(s -> s.booked(bookingId, worker, prefillTokens, copy, blocks, predicted, warmBlocks,
          newPrefix));
    }

    @Override
    public void firstToken(long bookingId) {
      offer(s -> s.firstToken(bookingId));
    }

    @Override
    public void closed(long bookingId) {
      offer(s -> s.closed(bookingId));
    }

    @Override
    public int peerCount() {
      return targets[index].peerCount();
    }

    @Override
    public long deliveryWindowNanos() {
      return targets[index].deliveryWindowNanos();
    }

    @Override
    public long viewDelayNanos() {
      return targets[index].viewDelayNanos();
    }

    @Override
    public String toString() {
      return "LingerPublishing.port(" + index + ")";
    }
  }
}
