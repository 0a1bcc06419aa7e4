package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.HealthState;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The tokenizer and the scraper feed, and heed, the router's health model. Real HTTP on loopback. */
class HealthAwareClientsTest {
  private static final SimTokenizer TOKENIZER = SimTokenizer.standard();

  /**
   * Issue 8 item 3: a hung worker made about one request in three wait out the tokenizer's timeout (10 s), since the
   * tokenizer rotated through every worker. Now a late answer is hedged on the next healthy worker, the hung
   * worker's timeout marks it suspect, and it is asked no more.
   */
  @Test
  void aHungWorkerNeverMakesTokenizationWaitOutItsTimeoutAndIsSkippedOnceSuspect() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId hungId = WorkerId.of("hung");
    try (SimServer a = TestSupport.startSim(router, WorkerId.of("a"), 20);
        SimServer b = TestSupport.startSim(router, WorkerId.of("b"), 20);
        TestSupport.HungServer hung = new TestSupport.HungServer()) {
      router.addWorker(Worker.newBuilder(hungId).endpoint(Worker.HTTP, hung.uri()).model(MODEL).build());
      Duration budget = Duration.ofSeconds(2);
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder().router(router).timeout(budget).build();
      List<Long> millis = new ArrayList<>();
      assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
        for (int i = 0; i < 30; i++) {
          millis.add(tokenizeTimed(tokenizer, "t" + i));
        }
      });
      assertTrue(hung.connections.get() >= 1, "the hung worker was never asked: the test tests nothing");
      assertTrue(millis.stream().allMatch(ms -> ms < budget.toMillis()), "a call waited out the timeout: " + millis);
      TestSupport.await(() -> router.health(hungId) == HealthState.SUSPECT, "the hung worker's timeout reported");

      int asked = hung.connections.get();
      List<Long> after = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        after.add(tokenizeTimed(tokenizer, "s" + i));
      }
      assertEquals(asked, hung.connections.get(), "a suspect worker was asked while healthy ones serve");
      assertTrue(after.stream().allMatch(ms -> ms < budget.toMillis()), after.toString());
    }
  }

  private static long tokenizeTimed(OkHttpTokenizer tokenizer, String tag) throws Exception {
    String prompt = TestSupport.words(tag, 20);
    long start = System.nanoTime();
    int[] tokens = tokenizer.tokenize(MODEL, prompt);
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertArrayEquals(TOKENIZER.encode(prompt), tokens, tag);
    return ms;
  }

  @Test
  void suspectWorkersAreAskedOnlyWhenNoneIsHealthy() throws Exception {
    Router router = Router.newBuilder().build();
    try (SimServer a = TestSupport.startSim(router, WorkerId.of("a"), 20);
        SimServer b = TestSupport.startSim(router, WorkerId.of("b"), 20)) {
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder().router(router).build();
      router.reportFailure(WorkerId.of("a"), io.kvroute.FailureKind.SCRAPE_FAILED); // a: suspect
      a.close(); // would fail every call routed to it
      for (int i = 0; i < 6; i++) {
        assertArrayEquals(TOKENIZER.encode("x y z"), tokenizer.tokenize(MODEL, "x y z"));
      }
      for (int i = 0; i < Router.DEFAULT_EJECT_AFTER_FAILURES; i++) {
        router.reportFailure(WorkerId.of("b"), io.kvroute.FailureKind.TIMEOUT);
      }
      assertEquals(HealthState.EJECTED, router.health(WorkerId.of("b")));
      // Only the suspect, closed worker is left: asked, and its failure is the caller's IOException.
      java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
          () -> tokenizer.tokenize(MODEL, "x y z"));
      assertTrue(!(e instanceof TokenizeException), e.toString());
    }
  }

  /**
   * Issue 8 item 2 (the scraper's part): a dead worker's scrapes failed, yet the router kept its last load, so it
   * looked idle. Now the failure reaches the health model, which forgets the load and marks the worker suspect.
   */
  @Test
  void aDeadWorkersLastLoadIsForgottenAndItIsReportedSuspect() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("dying");
    SimServer sim = TestSupport.startSim(router, id, 20);
    try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router)
        .timeout(Duration.ofSeconds(5)).build()) {
      scraper.scrapeNow();
      assertNotNull(router.workers().engineLoad(id), "the live worker's load");
      assertEquals(0, router.workers().engineLoad(id).running() + router.workers().engineLoad(id).waiting(), "idle");
      assertEquals(HealthState.HEALTHY, router.health(id));
      sim.close(); // dead: connections are refused
      scraper.scrapeNow();
      assertEquals(1, scraper.failureCount(ScrapeFailure.CONNECTION));
      assertNull(router.workers().engineLoad(id), "a dead worker kept its last (idle) load");
      assertEquals(HealthState.SUSPECT, router.health(id));
    } finally {
      sim.close();
    }
  }
}
