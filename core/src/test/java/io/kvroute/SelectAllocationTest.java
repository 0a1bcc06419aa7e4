package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.management.HotSpotDiagnosticMXBean;
import com.sun.management.ThreadMXBean;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * What one request costs the heap: {@code select}, {@code firstToken} and {@code close} allocate the routing handle
 * and the {@link RouteRequest} {@code select(int[])} wraps the tokens in, and nothing else (hash arrays are pooled,
 * releases are queued through the handle itself, the scratch is per thread).
 */
class SelectAllocationTest {
  @Test
  void ofIsTheBuilderWithOnlyTokens() {
    int[] tokens = Fixtures.prompt(7, 40);
    RouteRequest direct = RouteRequest.of(tokens);
    RouteRequest built = RouteRequest.newBuilder(tokens).build();
    assertSame(tokens, direct.tokens());
    assertEquals(built.model(), direct.model());
    assertEquals(built.loraName(), direct.loraName());
    assertEquals(built.cacheSalt(), direct.cacheSalt());
    assertSame(built.blockExtraKeys(), direct.blockExtraKeys()); // both null
    assertEquals(built.allowedWorkers(), direct.allowedWorkers());
    assertEquals(Double.doubleToLongBits(built.overlapWeight()), Double.doubleToLongBits(direct.overlapWeight()));
    assertEquals(Double.doubleToLongBits(built.temperature()), Double.doubleToLongBits(direct.temperature()));
    assertEquals(built.explain(), direct.explain());
    assertThrows(NullPointerException.class, () -> RouteRequest.of(null));
  }

  @Test
  void aRequestAllocatesItsHandleAndItsRequestOnly() {
    assertAllocatesHandleAndRequestOnly(RouterPolicy.kvAware());
  }

  /** The learned models, the memory wait and the marginal-cost terms work in preallocated per-worker state. */
  @Test
  void aPredictedTtftRequestAllocatesItsHandleAndItsRequestOnly() {
    assertAllocatesHandleAndRequestOnly(RouterPolicy.predictedTtft());
  }

  /**
   * With a shared-load port claiming peers and a delivery window longer than the test, every selection counts the
   * router's own young bookings again (a ring of them, wrapping at its bound) in preallocated state.
   */
  @Test
  void theEstimateOfPeersUnseenBookingsAllocatesNothing() {
    SharedLoad port = new SharedLoad() {
      @Override
      public void start(RemoteLoad view) {}

      @Override
      public void booked(long id, WorkerId worker, long prefill, long[] hashes, int blocks, boolean predicted) {}

      @Override
      public void firstToken(long id) {}

      @Override
      public void closed(long id) {}

      @Override
      public int peerCount() {
        return 3;
      }

      @Override
      public long deliveryWindowNanos() {
        return 3_600_000_000_000L; // an hour: every booking of the test stays young
      }
    };
    assertAllocatesHandleAndRequestOnly(RouterPolicy.predictedTtft(), port);
  }

  private static void assertAllocatesHandleAndRequestOnly(RouterPolicy policy) {
    assertAllocatesHandleAndRequestOnly(policy, SharedLoad.NONE);
  }

  private static void assertAllocatesHandleAndRequestOnly(RouterPolicy policy, SharedLoad port) {
    // The object sizes below hold with 12-byte headers and 4-byte references (HotSpot's defaults under 32 GB).
    assumeTrue(flag("UseCompressedOops") && flag("UseCompressedClassPointers") && !flag("UseCompactObjectHeaders"));
    Router router = Router.newBuilder().policy(policy).randomSeed(1).sharedLoad(port).build();
    for (int w = 0; w < 4; w++) {
      WorkerId id = WorkerId.of("w" + w);
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    int[][] prompts = new int[32][];
    for (int i = 0; i < prompts.length; i++) {
      prompts[i] = Fixtures.prompt(500 + i, 2048);
    }
    ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    long least = Long.MAX_VALUE;
    int requests = 4_000;
    for (int round = 0; round < 40 && least > 0; round++) { // early rounds grow buffers and compile; keep the least
      long before = mx.getThreadAllocatedBytes(thread);
      for (int i = 0; i < requests; i++) {
        try (Routing r = router.select(prompts[i & 31])) {
          r.firstToken();
        }
      }
      least = Math.min(least, mx.getThreadAllocatedBytes(thread) - before);
      if (least <= 160L * requests) {
        break;
      }
    }
    // Routing: a 12-byte header, 8 references (32 B), 5 ints (20 B), 4 longs (32 B), 6 booleans: 102 -> 104 B
    // aligned; RouteRequest: header, 6 references, 2 doubles and a boolean: 53 -> 56 B. 160 B in all.
    double perRequest = (double) least / requests;
    assertTrue(perRequest <= 160, "a request allocates " + perRequest + " B");
    for (int w = 0; w < 4; w++) {
      assertEquals(0, router.activeRequests(WorkerId.of("w" + w)), "every request was released");
    }
  }

  /**
   * In approximate mode a prompt routed again to the worker predicted to hold it renews its prediction in place: no
   * copy of its hashes, no queued record, so the request allocates what a KV-event-mode one does (it allocated a
   * 1 KiB copy of the 128 hashes and a queue record per selection before).
   */
  @Test
  void inApproximateModeARepeatedPromptAllocatesItsHandleAndItsRequestOnly() {
    assumeTrue(flag("UseCompressedOops") && flag("UseCompressedClassPointers") && !flag("UseCompactObjectHeaders"));
    Router router = Router.newBuilder().policy(RouterPolicy.approximate()).randomSeed(1).build();
    for (int w = 0; w < 4; w++) {
      router.addWorker(Worker.of(WorkerId.of("w" + w)));
    }
    int[][] prompts = new int[32][];
    for (int i = 0; i < prompts.length; i++) {
      prompts[i] = Fixtures.prompt(700 + i, 2048);
    }
    ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    long least = Long.MAX_VALUE;
    int requests = 4_000;
    for (int round = 0; round < 40 && least > 0; round++) {
      long before = mx.getThreadAllocatedBytes(thread);
      for (int i = 0; i < requests; i++) {
        try (Routing r = router.select(prompts[i & 31])) {
          r.firstToken();
        }
      }
      least = Math.min(least, mx.getThreadAllocatedBytes(thread) - before);
      if (least <= 160L * requests) {
        break;
      }
    }
    double perRequest = (double) least / requests;
    assertTrue(perRequest <= 160, "a request allocates " + perRequest + " B");
    assertTrue(router.predictions().renewed >= requests, "renewed " + router.predictions().renewed);
  }

  private static boolean flag(String name) {
    try {
      return "true".equals(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).getVMOption(name)
          .getValue());
    } catch (IllegalArgumentException e) { // no such flag on this JVM
      return false;
    }
  }
}
