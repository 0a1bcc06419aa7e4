package io.kvroute.examples;

import io.kvroute.RemoteLoad;
import io.kvroute.WorkerId;
import io.kvroute.sync.nats.NatsLoadSync;
import io.kvroute.testkit.NatsServer;
import java.io.IOException;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Measures, on this machine's wall clock, how long a booking takes from one {@link NatsLoadSync}'s hook to a peer's
 * view over a real {@code nats-server} on loopback (the delivery latency {@code ReplicaExperiment --publish linger}
 * adds to a publish); not thread-safe (a command-line program).
 *
 * <pre>{@code
 * java -cp examples/target/kvroute-examples.jar io.kvroute.examples.SyncLatency [bookings] [gapMicros...]
 * }</pre>
 *
 * <p>For each gap (default 5,000 µs, a quiet publisher woken by every booking; and 50 µs, a burst in which the
 * publisher lingers and polls every batch delay) it books {@code bookings} requests on replica A spaced by the gap
 * and prints percentiles of the time until replica B's view receives each. The figure depends on the machine's
 * load (other threads delay the publisher's wake-up and NATS's threads), so print the load beside it.
 */
public final class SyncLatency {
  private SyncLatency() {}

  /** Runs the measurement and prints one line per gap. */
  public static void main(String[] args) throws IOException {
    int bookings = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    long[] gaps = args.length > 1 ? Arrays.stream(args, 1, args.length).mapToLong(Long::parseLong).toArray()
        : new long[] {5000, 50};
    try (NatsServer server = NatsServer.start()) {
      for (long gapMicros : gaps) {
        long[] micros = measure(server.url(), bookings, gapMicros * 1000);
        Arrays.sort(micros);
        System.out.printf(Locale.ROOT, "gap %5d us, %d bookings: hook to peer's view p10 %.0f, p50 %.0f, p90 %.0f,"
                + " p99 %.0f us (load %.1f)%n", gapMicros, bookings, q(micros, 0.10), q(micros, 0.50),
            q(micros, 0.90), q(micros, 0.99),
            java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
      }
    }
  }

  private static double q(long[] sorted, double q) {
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)] / 1e3;
  }

  private static long[] measure(String url, int bookings, long gapNanos) {
    String subject = "kvroute.latency." + ProcessHandle.current().pid() + "." + gapNanos;
    ConcurrentHashMap<Long, Long> arrived = new ConcurrentHashMap<>();
    long[] sentAt = new long[bookings];
    try (NatsLoadSync a = NatsLoadSync.newBuilder().servers(url).subject(subject).replicaName("a").build();
        NatsLoadSync b = NatsLoadSync.newBuilder().servers(url).subject(subject).replicaName("b").build()) {
      a.start(new View(null));
      b.start(new View(arrived));
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (a.peers().isEmpty() || b.peers().isEmpty()) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the replicas did not see each other");
        }
        LockSupport.parkNanos(1_000_000);
      }
      WorkerId w = WorkerId.of("w");
      long[] hashes = {1, 2, 3, 4, 5, 6, 7, 8};
      long next = System.nanoTime();
      for (int i = 0; i < bookings; i++) {
        while (System.nanoTime() < next) {
          Thread.onSpinWait();
        }
        sentAt[i] = System.nanoTime();
        a.booked(i + 1, w, 100, hashes, hashes.length, false);
        next = sentAt[i] + gapNanos;
      }
      while (arrived.size() < bookings && System.nanoTime() < deadline + 10_000_000_000L) {
        LockSupport.parkNanos(1_000_000);
      }
    }
    long[] micros = new long[bookings];
    for (int i = 0; i < bookings; i++) {
      Long at = arrived.get((long) (i + 1));
      micros[i] = at == null ? Long.MAX_VALUE : at - sentAt[i];
    }
    return micros;
  }

  /** A peer's view that records when each booking arrives (a router would book it). */
  private static final class View implements RemoteLoad {
    private final @Nullable ConcurrentHashMap<Long, Long> arrived;

    View(@Nullable ConcurrentHashMap<Long, Long> arrived) {
      this.arrived = arrived;
    }

    @Override
    public int blockSize() {
      return 16;
    }

    @Override
    public void booked(String replica, long bookingId, WorkerId worker, long prefillTokens, int blocks, long[] keys,
        int keyCount) {
      if (arrived != null) {
        arrived.putIfAbsent(bookingId, System.nanoTime());
      }
    }

    @Override
    public void firstToken(String replica, long bookingId) {}

    @Override
    public void closed(String replica, long bookingId) {}

    @Override
    public void predicted(WorkerId worker, long[] hashes, int count) {}

    @Override
    public void dropReplica(String replica) {}

    @Override
    public int activeRequests(WorkerId worker) {
      return 0;
    }

    @Override
    public long openBookings() {
      return 0;
    }
  }
}
