package io.kvroute.examples;

import io.kvroute.RouterListener;
import io.kvroute.Routing;
import io.kvroute.Ticker;
import io.kvroute.sim.SharedPrefixWorkload;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@code ReplicaExperiment --collisions true}: which decisions made within one delivery window collide, and what
 * they cost; not thread-safe (the simulation calls every replica's listener on its only thread).
 *
 * <p>Every routing is recorded with its replica, its virtual time, its prefix kind, its worker and whether it
 * placed its prefix there (the worker's cached match is under half the prompt and no request of that kind is being
 * prefilled there: neither a hit nor a join to a computation in flight). Two routings by different replicas in the
 * same delivery window (the same {@code --sync-interval-ms} bucket of virtual time, between two flushes, so neither
 * replica saw the other's) collide when:
 * <ul>
 *   <li><b>double copy</b>: both placed the same kind, on different workers (one router would have seen the first
 *       placement computing and could join it);
 *   <li><b>stacked placements</b>: both placed different kinds on the same worker (one router would have seen the
 *       first one's queued prefill and placement);
 *   <li><b>window join</b>: the later one joined (did not place) the worker the earlier one was routed to.
 * </ul>
 * The same pairs are counted for one router (N = 1, pairs in the same bucket), where they are decisions made
 * knowingly: the excess with N replicas is what the window causes. Each class also reports the later request's
 * warm TTFT (mean, and how many are at or above the run's own warm p99).
 */
final class Collisions {
  /** One routing. */
  private static final class Rec {
    final int index;
    final int replica;
    final long bucket;
    final int kind;
    final String worker;
    final boolean placed;
    final long at;
    final int ordinal; // the replica's how-manieth routing
    long ttft = -1;
    long deliveredAt = Long.MAX_VALUE;

    Rec(int index, int replica, long bucket, int kind, String worker, boolean placed, long at, int ordinal) {
      this.index = index;
      this.replica = replica;
      this.bucket = bucket;
      this.kind = kind;
      this.worker = worker;
      this.placed = placed;
      this.at = at;
      this.ordinal = ordinal;
    }
  }

  /** The counts of one configuration, summed over runs. */
  static final class Totals {
    final long[] pairs = new long[3];
    // Warm placements: the first of their kind; with a peer's booking of the kind not delivered yet; the rest.
    final long[] warmPlacements = new long[3];
    final long[] laterAtTail = new long[3];
    final double[] laterTtftSum = new double[3];
    long routings;
    long placements;
    long tail;
    int runs;

    void print(PrintStream out, String label) {
      String[] names = {"double copy", "stacked placements", "window join"};
      out.printf(Locale.ROOT, "collisions %s: %d runs, %.1f routings, %.1f placements, %.1f warm requests at or"
          + " above the run's warm p99 (per run)%n", label, runs, (double) routings / runs,
          (double) placements / runs, (double) tail / runs);
      out.printf(Locale.ROOT, "  warm placements    %7.1f per run: %.1f first of their kind, %.1f with a peer's"
              + " booking of the kind not yet delivered, %.1f with every booking of the kind in view%n",
          (double) (warmPlacements[0] + warmPlacements[1] + warmPlacements[2]) / runs,
          (double) warmPlacements[0] / runs, (double) warmPlacements[1] / runs, (double) warmPlacements[2] / runs);
      for (int c = 0; c < 3; c++) {
        out.printf(Locale.ROOT, "  %-18s %7.1f pairs per run, later request's warm TTFT mean %6.1f ms, %5.2f per run"
                + " at the tail%n", names[c], (double) pairs[c] / runs,
            pairs[c] == 0 ? 0 : laterTtftSum[c] / pairs[c] / 1e6, (double) laterAtTail[c] / runs);
      }
    }
  }

  private final int replicas;
  private final long bucketNanos;
  private final int skip;
  private final SharedPrefixWorkload workload;
  private final Ticker ticker;
  private final Map<Routing, Rec> byRouting = new IdentityHashMap<>();
  private final Map<String, Integer> inFlight = new HashMap<>(); // worker + kind: routed, no first token yet
  private final List<Rec> recs = new ArrayList<>();
  private int routed;
  private final int[] ordinals;
  private final @Nullable LingerPublishing linger;
  private final @Nullable PrintStream log;
  private final String label;
  // --deliver-at-once placements / joins: run after a routing of that class (an oracle, see ReplicaExperiment)
  private final @Nullable Runnable afterPlacement;
  private final @Nullable Runnable afterJoin;
  private final @Nullable Runnable afterCold;

  Collisions(int replicas, long bucketNanos, int skip, SharedPrefixWorkload workload, Ticker ticker,
      @Nullable Runnable afterPlacement, @Nullable Runnable afterJoin, @Nullable Runnable afterCold) {
    this(replicas, bucketNanos, skip, workload, ticker, afterPlacement, afterJoin, afterCold, null, null, "");
  }

  /**
   * With {@code linger} (the experiment's model of the real publisher), a routing is unseen by another replica's
   * later routing when its booking was delivered after that routing, instead of when both fall in one
   * {@code bucketNanos} of virtual time; with {@code log}, one line per warm placement of a replica-made decision
   * (its replica, time, kind, worker, the workers its view had seen routed that kind, and the peers' bookings of
   * the kind it had not).
   */
  Collisions(int replicas, long bucketNanos, int skip, SharedPrefixWorkload workload, Ticker ticker,
      @Nullable Runnable afterPlacement, @Nullable Runnable afterJoin, @Nullable Runnable afterCold,
      @Nullable LingerPublishing linger, @Nullable PrintStream log, String label) {
    this.linger = linger;
    this.log = log;
    this.label = label;
    this.ordinals = new int[replicas];
    this.afterCold = afterCold;
    this.afterPlacement = afterPlacement;
    this.afterJoin = afterJoin;
    this.replicas = replicas;
    this.bucketNanos = Math.max(1, bucketNanos);
    this.skip = skip;
    this.workload = workload;
    this.ticker = ticker;
  }

  /** The listener of replica {@code r}. */
  RouterListener forReplica(int r) {
    return new RouterListener() {
      @Override
      public void onRouted(Routing routing) {
        routed(r, routing);
      }

      @Override
      public void onFirstToken(Routing routing, long elapsedNanos) {
        firstToken(routing, elapsedNanos);
      }
    };
  }

  private void routed(int replica, Routing routing) {
    int index = routed++;
    int kind = workload.kind(index);
    String worker = routing.workerId().toString();
    String key = worker + "/" + kind;
    int flying = inFlight.getOrDefault(key, 0);
    boolean placed = 2L * routing.matchedBlocks() * 16 < routing.promptTokens() && flying == 0;
    inFlight.put(key, flying + 1);
    long at = ticker.read();
    Rec rec = new Rec(index, replica, at / bucketNanos, kind, worker, placed, at, ordinals[replica]++);
    recs.add(rec);
    byRouting.put(routing, rec);
    Runnable after = afterCold != null ? (index < skip ? afterCold : null) : placed ? afterPlacement : afterJoin;
    if (after != null) {
      after.run();
    }
  }

  private void firstToken(Routing routing, long elapsedNanos) {
    Rec rec = byRouting.remove(routing);
    if (rec != null) {
      rec.ttft = elapsedNanos;
      inFlight.merge(rec.worker + "/" + rec.kind, -1, Integer::sum);
    }
  }

  /** With the linger model, a booking older than this (virtual time) is taken as delivered: 10 ms. */
  private static final long WINDOW_MAX = 10_000_000;

  /** Whether {@code earlier} was in the view of {@code later}'s replica when it routed. */
  private boolean seen(Rec earlier, Rec later) {
    if (earlier.replica == later.replica || replicas == 1) {
      return true;
    }
    return linger != null ? earlier.deliveredAt <= later.at : earlier.bucket < later.bucket;
  }

  /** Classifies the warm placements (see {@link Totals#warmPlacements}) and logs them. */
  private void warmPlacements(Totals totals) {
    for (int j = 0; j < recs.size(); j++) {
      Rec later = recs.get(j);
      if (later.index < skip || !later.placed) {
        continue;
      }
      java.util.TreeSet<String> seenOn = new java.util.TreeSet<>();
      List<String> unseen = new ArrayList<>();
      boolean any = false;
      for (int i = 0; i < j; i++) {
        Rec earlier = recs.get(i);
        if (earlier.kind != later.kind) {
          continue;
        }
        any = true;
        if (seen(earlier, later)) {
          seenOn.add(earlier.worker);
        } else {
          unseen.add("r" + earlier.replica + "->" + earlier.worker + " " + (later.at - earlier.at) / 1000 + "us ago");
        }
      }
      int c = !any ? 0 : !unseen.isEmpty() ? 1 : 2;
      totals.warmPlacements[c]++;
      if (log != null) {
        log.printf(Locale.ROOT, "placement %s #%d r%d t=%.3f ms kind %d -> %s (%s); routed the kind before, in view:"
                + " %s; not in view: %s; TTFT %.1f ms%n", label, later.index, later.replica, later.at / 1e6,
            later.kind, later.worker, c == 0 ? "first of its kind" : c == 1 ? "peer's booking unseen" : "all seen",
            seenOn, unseen, later.ttft / 1e6);
      }
    }
  }

  /** Adds this run's collisions to {@code totals}. */
  void addTo(Totals totals) {
    long[] warm = recs.stream().filter(r -> r.index >= skip && r.ttft >= 0).mapToLong(r -> r.ttft).sorted()
        .toArray();
    long p99 = warm.length == 0 ? Long.MAX_VALUE : warm[Math.max(0, (int) Math.ceil(0.99 * warm.length) - 1)];
    totals.runs++;
    totals.routings += recs.size();
    if (linger != null) {
      for (Rec r : recs) {
        r.deliveredAt = linger.bookingDeliveredAt(r.replica, r.ordinal);
      }
    }
    warmPlacements(totals);
    for (Rec r : recs) {
      totals.placements += r.placed ? 1 : 0;
      totals.tail += r.index >= skip && r.ttft >= p99 ? 1 : 0;
    }
    int start = 0;
    for (int j = 0; j < recs.size(); j++) {
      Rec later = recs.get(j);
      while (linger == null ? recs.get(start).bucket < later.bucket : later.at - recs.get(start).at > WINDOW_MAX) {
        start++;
      }
      for (int i = start; i < j; i++) {
        Rec earlier = recs.get(i);
        if (replicas > 1 && earlier.replica == later.replica) {
          continue; // a replica sees its own bookings at once
        }
        if (linger != null && replicas > 1 && earlier.deliveredAt <= later.at) {
          continue; // delivered before the later routing: seen
        }
        int c = -1;
        if (earlier.placed && later.placed && earlier.kind == later.kind && !earlier.worker.equals(later.worker)) {
          c = 0;
        } else if (earlier.placed && later.placed && earlier.kind != later.kind
            && earlier.worker.equals(later.worker)) {
          c = 1;
        } else if (!later.placed && earlier.worker.equals(later.worker)) {
          c = 2;
        }
        if (c >= 0 && later.index >= skip && later.ttft >= 0) {
          totals.pairs[c]++;
          totals.laterTtftSum[c] += later.ttft;
          totals.laterAtTail[c] += later.ttft >= p99 ? 1 : 0;
        }
      }
    }
  }
}
