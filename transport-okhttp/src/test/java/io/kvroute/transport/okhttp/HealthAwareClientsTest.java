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
   * A worker whose engine died still answers HTTP, with 500 (vLLM's API server reports an EngineDeadError so). Its
   * 500 on /tokenize was taken for a refusal of the request ("another would answer alike"), so every request whose
   * turn it was failed, about one in two here, and never reached the router to learn of the dead engine. A 5xx is
   * the worker's failure: the next worker is asked. Only when every worker answers 5xx does the caller see one.
   */
  @Test
  void aWorkerAnswering500IsPassedOverNotTakenForARefusal() throws Exception {
    Router router = Router.newBuilder().build();
    java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
    com.sun.net.httpserver.HttpServer dead = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress("127.0.0.1", 0), 0);
    dead.createContext("/", exchange -> {
      asked.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = "{\"object\":\"error\",\"message\":\"EngineDeadError\",\"code\":500}".getBytes(
          java.nio.charset.StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(500, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    dead.start();
    try (SimServer live = TestSupport.startSim(router, WorkerId.of("live"), 20)) {
      router.addWorker(Worker.newBuilder(WorkerId.of("dead")).endpoint(Worker.HTTP,
          java.net.URI.create("http://127.0.0.1:" + dead.getAddress().getPort())).model(MODEL).build());
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder().router(router).build();
      for (int i = 0; i < 10; i++) {
        tokenizeTimed(tokenizer, "d" + i); // every call answered, with the live worker's tokens
      }
      assertTrue(asked.get() >= 1, "the dead worker was never asked: the test tests nothing");
      // With only the dead worker left, its answer is the caller's, status and all.
      live.close();
      router.removeWorker(WorkerId.of("live"));
      TokenizeException e = org.junit.jupiter.api.Assertions.assertThrows(TokenizeException.class,
          () -> tokenizer.tokenize(MODEL, "x y z"));
      assertEquals(500, e.statusCode());
      assertTrue(e.getMessage().contains("EngineDeadError"), e.getMessage());
    } finally {
      dead.stop(0);
    }
  }

  /**
   * A mixed fleet where one worker lacks {@code /tokenize} (404) or answers it with a malformed 200: that worker is
   * passed over as a 5xx is, rather than failing the requests whose turn it is; with it alone left, its answer is the
   * caller's.
   */
  @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
      "404 | {\"detail\":\"Not Found\"}",
      "200 | <html>not json</html>",
      "200 | {\"count\":2}"})
  void aWorkerWithoutAUsableTokenizeEndpointIsPassedOver(int status, String answer) throws Exception {
    Router router = Router.newBuilder().build();
    java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
    com.sun.net.httpserver.HttpServer odd = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress("127.0.0.1", 0), 0);
    odd.createContext("/", exchange -> {
      asked.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = answer.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    odd.start();
    try (SimServer live = TestSupport.startSim(router, WorkerId.of("live"), 20)) {
      router.addWorker(Worker.newBuilder(WorkerId.of("odd")).endpoint(Worker.HTTP,
          java.net.URI.create("http://127.0.0.1:" + odd.getAddress().getPort())).model(MODEL).build());
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder().router(router).build();
      for (int i = 0; i < 6; i++) {
        tokenizeTimed(tokenizer, "o" + i); // every call answered, with the live worker's tokens
      }
      assertTrue(asked.get() >= 1, "the odd worker was never asked: the test tests nothing");
      live.close();
      router.removeWorker(WorkerId.of("live"));
      TokenizeException e = org.junit.jupiter.api.Assertions.assertThrows(TokenizeException.class,
          () -> tokenizer.tokenize(MODEL, "x y z"));
      assertEquals(status == 200 ? -1 : status, e.statusCode());
    } finally {
      odd.stop(0);
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
