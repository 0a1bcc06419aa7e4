package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The health model seen through the router: ejection, backoff, the half-open probe, draining, typed errors. */
class WorkerHealthTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final WorkerId B = WorkerId.of("b");
  private final FakeTicker ticker = new FakeTicker();
  private final List<String> changes = new ArrayList<>();

  private Router router(WorkerId... workers) {
    Router router = Router.newBuilder().ticker(ticker).randomSeed(7).listener(new RouterListener() {
      @Override
      public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
        changes.add(worker.name() + ":" + from + "->" + to);
      }
    }).build();
    for (WorkerId id : workers) {
      router.addWorker(Worker.of(id));
    }
    return router;
  }

  private static Set<WorkerId> routedTo(Router router, int requests, long seed) {
    Set<WorkerId> seen = new HashSet<>();
    for (int i = 0; i < requests; i++) {
      try (Routing r = router.select(Fixtures.prompt(seed + i, 64))) {
        seen.add(r.workerId());
      }
    }
    return seen;
  }

  @Test
  void consecutiveFailuresEjectAfterTheThresholdAndSuspectBefore() {
    Router router = router(A, B);
    router.reportFailure(A, FailureKind.CONNECT_FAILED);
    router.reportFailure(A, FailureKind.CONNECT_FAILED);
    assertEquals(HealthState.SUSPECT, router.health(A));
    assertTrue(routedTo(router, 40, 100).contains(A), "a suspect worker is still routed");
    router.reportFailure(A, FailureKind.TIMEOUT);
    assertEquals(HealthState.EJECTED, router.health(A));
    assertEquals(Set.of(B), routedTo(router, 40, 200), "an ejected worker gets no request");
    assertEquals(List.of("a:HEALTHY->SUSPECT", "a:SUSPECT->EJECTED"), changes);
  }

  @Test
  void aSuccessBetweenFailuresResetsTheCount() {
    Router router = router(A, B);
    for (int i = 0; i < 10; i++) {
      router.reportFailure(A, FailureKind.SERVER_ERROR);
      router.reportFailure(A, FailureKind.SERVER_ERROR);
      router.reportSuccess(A);
    }
    assertEquals(HealthState.HEALTHY, router.health(A));
  }

  @Test
  void scrapeFailuresMakeSuspectAndForgetTheLoadButNeverEject() {
    Router router = router(A, B);
    router.updateLoad(A, new EngineLoad(0, 0, 0.1, 0));
    for (int i = 0; i < 10; i++) {
      router.reportFailure(A, FailureKind.SCRAPE_FAILED);
    }
    assertEquals(HealthState.SUSPECT, router.health(A));
    assertNull(router.workers().engineLoad(A), "a dead worker's last load must not make it look idle");
  }

  @Test
  void afterTheBackoffExactlyOneProbeIsLetThroughAndItsSuccessReadmits() {
    Router router = router(A, B);
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofMillis(999));
    assertEquals(Set.of(B), routedTo(router, 20, 300), "still inside the 1 s backoff");
    ticker.advance(Duration.ofMillis(1));
    // Keep the routings open: exactly one of many selections may probe A.
    List<Routing> open = new ArrayList<>();
    int toA = 0;
    for (int i = 0; i < 30; i++) {
      Routing r = router.select(Fixtures.prompt(400 + i, 64));
      open.add(r);
      toA += r.workerId().equals(A) ? 1 : 0;
    }
    assertEquals(1, toA, "one half-open probe");
    assertEquals(HealthState.EJECTED, router.health(A));
    router.reportSuccess(A);
    assertEquals(HealthState.HEALTHY, router.health(A));
    open.forEach(Routing::close);
    assertTrue(routedTo(router, 40, 500).contains(A));
  }

  @Test
  void aFailedProbeDoublesTheBackoff() {
    Router router = router(A, B);
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofSeconds(1));
    router.reportFailure(A, FailureKind.PROBE_FAILED); // the probe after the first 1 s backoff failed
    ticker.advance(Duration.ofMillis(1999));
    assertEquals(Set.of(B), routedTo(router, 20, 600), "the second backoff is 2 s");
    ticker.advance(Duration.ofMillis(1));
    Routing probe = null;
    for (int i = 0; i < 30 && probe == null; i++) {
      Routing r = router.select(Fixtures.prompt(700 + i, 64));
      if (r.workerId().equals(A)) {
        probe = r;
      } else {
        r.close();
      }
    }
    assertTrue(probe != null, "a probe after 2 s");
  }

  @Test
  void aProbeClosedWithoutAReportLetsTheNextRequestProbe() {
    Router router = router(A);
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofSeconds(1));
    Routing probe = router.select(Fixtures.prompt(1, 64));
    assertEquals(A, probe.workerId());
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(Fixtures.prompt(2, 64)));
    assertEquals(NoWorkerAvailableException.Reason.ALL_UNHEALTHY, e.reason());
    assertEquals(503, e.httpStatus());
    probe.close();
    router.select(Fixtures.prompt(3, 64)).close();
  }

  @Test
  void aLateCloseOfAnEarlierProbeDoesNotLetASecondProbeThrough() {
    Router router = router(A, B);
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofSeconds(1));
    Routing first = router.select(RouteRequest.newBuilder(Fixtures.prompt(1, 64)).allowedWorkers(Set.of(A))
        .build());
    router.reportSuccess(A); // the first probe succeeded, its stream goes on
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofSeconds(2)); // the second ejection in a row backs off twice as long
    Routing second = router.select(RouteRequest.newBuilder(Fixtures.prompt(2, 64)).allowedWorkers(Set.of(A))
        .build());
    first.close(); // late: must not free the second probe's claim
    assertEquals(Set.of(B), routedTo(router, 20, 900), "one probe at a time");
    second.close();
    assertThrows(NoWorkerAvailableException.class, () -> {
      for (int i = 0; i < 20; i++) {
        router.select(RouteRequest.newBuilder(Fixtures.prompt(3 + i, 64)).allowedWorkers(Set.of(A)).build());
      }
    }, "after the second probe ended, exactly one more may probe");
  }

  @Test
  void aWorkerHealthyForTheLongestBackoffStartsAgainFromTheFirstBackoff() {
    Router router = router(A, B);
    for (int round = 0; round < 3; round++) { // three ejections in a row: 1 s, 2 s, 4 s
      for (int i = 0; i < 3; i++) {
        router.reportFailure(A, FailureKind.CONNECT_FAILED);
      }
      ticker.advance(Duration.ofSeconds(1L << round));
      router.reportSuccess(A);
      assertEquals(HealthState.HEALTHY, router.health(A), "round " + round);
    }
    ticker.advance(Router.DEFAULT_MAX_BACKOFF);
    router.reportSuccess(A); // healthy for 30 s: the ejection count is forgotten
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.CONNECT_FAILED);
    }
    ticker.advance(Duration.ofSeconds(1));
    router.reportSuccess(A);
    assertEquals(HealthState.HEALTHY, router.health(A), "back to the 1 s backoff");
  }

  @Test
  void firstTokenOfAProbeReadmitsTheWorker() {
    Router router = router(A);
    for (int i = 0; i < 3; i++) {
      router.reportFailure(A, FailureKind.TIMEOUT);
    }
    ticker.advance(Duration.ofSeconds(1));
    try (Routing probe = router.select(Fixtures.prompt(1, 64))) {
      probe.firstToken();
    }
    assertEquals(HealthState.HEALTHY, router.health(A));
  }

  @Test
  void drainedWorkersGetNoNewRequestsButInFlightOnesFinish() {
    Router router = router(A, B);
    Routing inFlight = router.select(RouteRequest.newBuilder(Fixtures.prompt(1, 64)).allowedWorkers(Set.of(A))
        .build());
    assertTrue(router.drain(A));
    assertEquals(HealthState.DRAINING, router.health(A));
    assertEquals(Set.of(B), routedTo(router, 30, 800));
    assertEquals(1, router.activeRequests(A));
    inFlight.close();
    assertEquals(0, router.activeRequests(A));
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(RouteRequest.newBuilder(Fixtures.prompt(2, 64)).allowedWorkers(Set.of(A)).build()));
    assertEquals(NoWorkerAvailableException.Reason.ALL_DRAINING, e.reason());
    assertTrue(router.undrain(A));
    assertEquals(HealthState.HEALTHY, router.health(A));
    assertEquals(List.of("a:HEALTHY->DRAINING", "a:DRAINING->HEALTHY"), changes);
  }

  @Test
  void noWorkerReasonsMapToStatuses() {
    Router empty = router();
    assertEquals(NoWorkerAvailableException.Reason.NO_WORKERS,
        assertThrows(NoWorkerAvailableException.class, () -> empty.select(Fixtures.prompt(1, 32))).reason());
    Router router = Router.newBuilder().ticker(ticker).build();
    router.addWorker(Worker.newBuilder(A).model("llama").loraAdapter("sql").build());
    NoWorkerAvailableException model = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(RouteRequest.newBuilder(Fixtures.prompt(1, 32)).model("qwen").build()));
    assertEquals(NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL, model.reason());
    assertEquals(404, model.httpStatus());
    assertEquals(NoWorkerAvailableException.Reason.NO_WORKER_FOR_LORA,
        assertThrows(NoWorkerAvailableException.class, () -> router.select(RouteRequest.newBuilder(
            Fixtures.prompt(1, 32)).model("llama").loraName("chat").build())).reason());
    assertEquals(NoWorkerAvailableException.Reason.NONE_ALLOWED,
        assertThrows(NoWorkerAvailableException.class, () -> router.select(RouteRequest.newBuilder(
            Fixtures.prompt(1, 32)).allowedWorkers(Set.of(B)).build())).reason());
  }

  @Test
  void promptsOverTheConfiguredLimitAreRejectedWithAClearError() {
    Router router = Router.newBuilder().maxPromptTokens(1000).build();
    router.addWorker(Worker.of(A));
    InvalidRouteRequestException e = assertThrows(InvalidRouteRequestException.class,
        () -> router.select(new int[1001]));
    assertEquals(InvalidRouteRequestException.Reason.PROMPT_TOO_LONG, e.reason());
    assertTrue(e.getMessage().contains("1001") && e.getMessage().contains("maxPromptTokens"), e.getMessage());
    router.select(new int[1000]).close();
  }

  @Test
  void reportsForUnknownWorkersAreIgnored() {
    Router router = router(A);
    router.reportFailure(B, FailureKind.TIMEOUT);
    router.reportSuccess(B);
    router.reportEventStream(B, EventStreamState.BROKEN);
    assertNull(router.health(B));
    assertEquals(false, router.drain(B));
  }

  // Mutation audit (docs/TEST-AUDIT.md): the three tests below each fail on a one-line bug no other test caught.

  private static RouteRequest onlyTo(WorkerId worker, long seed) {
    return RouteRequest.newBuilder(Fixtures.prompt(seed, 64)).allowedWorkers(Set.of(worker)).build();
  }

  private static void eject(Router router, WorkerId worker) {
    for (int i = 0; i < Router.DEFAULT_EJECT_AFTER_FAILURES; i++) {
      router.reportFailure(worker, FailureKind.CONNECT_FAILED);
    }
  }

  @Test
  void aSuccessReportedInsideTheBackoffDoesNotReadmit() {
    // The outcome of a request begun before the ejection is no evidence the worker recovered (CONTRACTS.md 1).
    Router router = router(A, B);
    eject(router, A);
    ticker.advance(Duration.ofMillis(500));
    router.reportSuccess(A);
    assertEquals(HealthState.EJECTED, router.health(A), "a success 500 ms into a 1 s backoff is late");
    assertEquals(Set.of(B), routedTo(router, 20, 1000));
    assertEquals(List.of("a:HEALTHY->SUSPECT", "a:SUSPECT->EJECTED"), changes);
  }

  @Test
  void aFailureReportedInsideTheBackoffDoesNotProlongIt() {
    // Ejected at 0 for 1 s; a late failure at 0.5 s must not eject again (which would mean a 2 s backoff from then).
    Router router = router(A, B);
    eject(router, A);
    ticker.advance(Duration.ofMillis(500));
    router.reportFailure(A, FailureKind.SERVER_ERROR);
    ticker.advance(Duration.ofMillis(500));
    try (Routing probe = router.select(onlyTo(A, 1100))) {
      assertEquals(A, probe.workerId(), "the probe is due 1 s after the ejection");
    }
  }

  @Test
  void closingAnEarlierProbeLateKeepsTheCurrentProbesClaim() {
    Router router = router(A, B);
    eject(router, A);
    ticker.advance(Duration.ofSeconds(1));
    Routing first = router.select(onlyTo(A, 1200)); // probe 1
    router.reportSuccess(A); // readmitted; its stream goes on
    eject(router, A);
    ticker.advance(Duration.ofSeconds(2));
    Routing second = router.select(onlyTo(A, 1201)); // probe 2, in flight
    first.close(); // late: must not free probe 2's claim
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(onlyTo(A, 1202)), "a second concurrent probe");
    assertEquals(NoWorkerAvailableException.Reason.ALL_UNHEALTHY, e.reason());
    second.close(); // ends without a report: the next request may probe
    router.select(onlyTo(A, 1203)).close();
  }

  @Test
  void oneDrainingAndOneEjectedWorkerIsAllUnhealthyNotAllDraining() {
    // ALL_DRAINING only when every worker that could serve is draining: here one is, the other is ejected.
    Router router = router(A, B);
    router.drain(A);
    eject(router, B);
    NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
        () -> router.select(Fixtures.prompt(1300, 64)));
    assertEquals(NoWorkerAvailableException.Reason.ALL_UNHEALTHY, e.reason());
    assertTrue(e.getMessage().contains("1 draining"), e.getMessage());
    router.undrain(A);
    router.drain(B);
    assertEquals(A, router.select(Fixtures.prompt(1301, 64)).workerId(), "undrained A serves again");
  }
}
