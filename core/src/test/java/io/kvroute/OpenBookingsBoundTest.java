package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bound on open bookings ({@link Admission#MAX_OPEN_BOOKINGS}, 2^20 by default; set lower through the
 * package-private {@code Router.Builder.maxOpenBookings} so that a test reaches it): handles that are never closed
 * cannot grow the booking list, and so the router's memory, without bound.
 */
class OpenBookingsBoundTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final int BLOCK = 16;

  static LongStream seeds() {
    return LongStream.rangeClosed(1, 12);
  }

  /** Counts the two callbacks a booking can end with. */
  private static final class Ends implements RouterListener {
    int expired;
    int expiryCalls;
    int closed;

    @Override
    public void onBookingsExpired(int count) {
      expired += count;
      expiryCalls++;
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      closed++;
    }
  }

  /**
   * A seeded run of selections, first tokens and closes (some on handles already closed or expired) against an
   * independent model: the open bookings in booking order, where a selection that finds the bound reached expires
   * the oldest before it books. After every step the router holds exactly the model's open bookings, never more than
   * the bound; the worker's active requests and pending prefill are those of the model's open handles; a handle reads
   * closed exactly when the model closed or expired it; each expiry is counted once through
   * {@code onBookingsExpired} (and is no {@code onClosed}, not even when the caller closes the handle later); and
   * nothing is ever released twice. The time-based expiry plays no part: the ticker never moves.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theBoundHoldsAndTheOldestOpenBookingMakesRoom(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int bound = 1 + random.nextInt(12);
    Ends ends = new Ends();
    Router router = Router.newBuilder().blockSize(BLOCK).ticker(new FakeTicker()).listener(ends)
        .maxOpenBookings(bound).randomSeed(seed).build();
    router.addWorker(Worker.of(A));

    List<Routing> open = new ArrayList<>(); // the model, oldest first
    Map<Routing, Long> pending = new IdentityHashMap<>(); // open handles before their first token: uncached tokens
    List<Routing> all = new ArrayList<>();
    int expired = 0;
    int closedByCaller = 0;
    for (int step = 0; step < 300; step++) {
      int op = all.isEmpty() ? 0 : random.nextInt(4);
      if (op <= 1) {
        int[] prompt = Fixtures.prompt(seed * 1_000_003L + step, 1 + random.nextInt(4 * BLOCK));
        if (open.size() == bound) {
          pending.remove(open.remove(0));
          expired++;
        }
        Routing r = router.select(prompt);
        open.add(r);
        pending.put(r, (long) prompt.length - (long) r.matchedBlocks() * BLOCK);
        all.add(r);
      } else if (op == 2) {
        Routing r = all.get(random.nextInt(all.size()));
        r.firstToken();
        pending.remove(r);
      } else {
        Routing r = all.get(random.nextInt(all.size()));
        r.close();
        if (open.remove(r)) {
          closedByCaller++;
        }
        pending.remove(r);
      }

      String at = "seed " + seed + ", bound " + bound + ", step " + step;
      assertEquals(open.size(), router.openBookings(), at + ": open bookings");
      assertTrue(router.openBookings() <= bound, at + ": beyond the bound");
      assertEquals(open.size(), router.activeRequests(A), at + ": active requests");
      assertEquals(pending.values().stream().mapToLong(Long::longValue).sum(), router.pendingPrefillTokens(A),
          at + ": pending prefill tokens");
      assertEquals(expired, ends.expired, at + ": bookings counted as expired");
      assertEquals(expired, ends.expiryCalls, at + ": one expiry per selection at the bound");
      assertEquals(closedByCaller, ends.closed, at + ": onClosed calls");
      for (Routing r : all) {
        assertEquals(!open.contains(r), r.isClosed(), at + ": " + r);
      }
      assertEquals(0, router.overReleases(), at + ": released twice");
    }
    for (Routing r : all) {
      r.close();
    }
    assertEquals(0, router.openBookings());
    assertEquals(0, router.activeRequests(A));
    assertEquals(0, router.pendingPrefillTokens(A));
    assertEquals(0, router.overReleases());
  }

  /** The worked case: a bound of 2 and four handles nobody closes. */
  @Test
  void atTheBoundTheNextSelectionExpiresTheOldest() {
    Ends ends = new Ends();
    Router router = Router.newBuilder().ticker(new FakeTicker()).listener(ends).maxOpenBookings(2).build();
    router.addWorker(Worker.of(A));
    Routing first = router.select(Fixtures.prompt(1, 32));
    Routing second = router.select(Fixtures.prompt(2, 32));
    assertEquals(2, router.openBookings(), "at the bound, nothing expires yet");
    assertEquals(0, ends.expired);

    Routing third = router.select(Fixtures.prompt(3, 32));
    assertTrue(first.isClosed(), "the oldest makes room");
    assertEquals(List.of(false, false), List.of(second.isClosed(), third.isClosed()));
    assertEquals(2, router.openBookings());
    assertEquals(2, router.activeRequests(A));
    assertEquals(1, ends.expired);

    Routing fourth = router.select(Fixtures.prompt(4, 32));
    assertTrue(second.isClosed());
    assertEquals(2, ends.expired);
    first.close(); // late: already released, so nothing happens
    second.firstToken();
    assertEquals(0, ends.closed, "an expired booking is not reported closed");
    assertEquals(2, router.activeRequests(A));
    assertEquals(64, router.pendingPrefillTokens(A), "the two open handles' prompts");
    third.close();
    fourth.close();
    assertEquals(2, ends.closed);
    assertEquals(0, router.activeRequests(A));
    assertEquals(0, router.openBookings());
    assertEquals(0, router.overReleases());
  }

  @Test
  void theBoundMustBePositive() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Router.newBuilder().maxOpenBookings(0));
    assertTrue(e.getMessage().contains("maxOpenBookings"), e.getMessage());
  }
}
