package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.await;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.EngineLoad;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimServer;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import mockwebserver3.Dispatcher;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.RecordedRequest;
import mockwebserver3.SocketEffect;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okio.Buffer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class EngineMetricsScraperTest {
  private static final OkHttpClient CLIENT = new OkHttpClient.Builder().readTimeout(Duration.ofSeconds(60)).build();

  /** Sends a completion without waiting for it; counts {@code done} down when it ends either way. */
  private static void complete(URI base, String prompt, int maxTokens, CountDownLatch done) {
    String json = "{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens + "}";
    Request request = new Request.Builder().url(base + "/v1/completions")
        .post(RequestBody.create(json, MediaType.get("application/json"))).build();
    CLIENT.newCall(request).enqueue(new Callback() {
      @Override
      public void onFailure(Call call, IOException e) {
        done.countDown();
      }

      @Override
      public void onResponse(Call call, Response response) throws IOException {
        try (response) {
          response.body().string();
        } finally {
          done.countDown();
        }
      }
    });
  }

  @Test
  void updatesEachWorkersEngineLoadFromTheSimulatorsMetricsWhileRequestsRun() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId busyId = WorkerId.of("busy");
    WorkerId idleId = WorkerId.of("idle");
    try (SimServer busy = TestSupport.startSim(router, busyId, 1.0);
        SimServer idle = TestSupport.startSim(router, idleId, 1.0)) {
      router.addWorker(Worker.of(WorkerId.of("in-process"))); // no endpoint: never scraped, never failed
      List<EngineMetrics> heard = new CopyOnWriteArrayList<>();
      try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router)
          .interval(Duration.ofMillis(20))
          .listener(new ScrapeListener() {
            @Override
            public void onScraped(EngineMetrics metrics, int malformedLines) {
              heard.add(metrics);
            }
          })
          .build()) {
        scraper.start();
        CountDownLatch done = new CountDownLatch(3);
        for (int i = 0; i < 3; i++) {
          complete(busy.baseUri(), words("req" + i + "-", 40), 300, done); // about 1.5 s each at real time
        }
        // All three run together for about a second: a scrape must see exactly three.
        await(() -> {
          EngineLoad load = router.workers().engineLoad(busyId);
          return load != null && load.running() == 3;
        }, "the router to see three running requests on the busy worker");
        EngineLoad busyLoad = router.workers().engineLoad(busyId);
        assertEquals(0, busyLoad.waiting());
        assertTrue(busyLoad.kvCacheUsage() > 0, "blocks are held while running: " + busyLoad);
        // The two workers are scraped independently: the idle one's first scrape may land a moment later.
        await(() -> router.workers().engineLoad(idleId) != null, "the idle worker's first scrape");
        EngineLoad idleLoad = router.workers().engineLoad(idleId);
        assertEquals(new EngineLoad(0, 0, 0.0, idleLoad.observedAtNanos()), idleLoad);
        assertTrue(done.await(30, TimeUnit.SECONDS), "the requests finished");

        scraper.scrapeNow(); // the engine is quiescent now: the scrape must equal its own snapshot exactly
        SimServer.Snapshot truth = busy.snapshot();
        EngineMetrics m = scraper.metrics(busyId).orElseThrow();
        assertEquals(truth.running(), m.running());
        assertEquals(0, m.running());
        assertEquals(truth.waiting(), m.waiting());
        assertEquals(truth.kvCacheUsage(), m.kvCacheUsage(), 1e-12);
        assertEquals(truth.prefixCacheQueries(), m.prefixCacheQueries());
        assertEquals(truth.prefixCacheHits(), m.prefixCacheHits());
        // The scraper keeps scraping in the background, so later reads may carry newer timestamps: compare values.
        EngineLoad routed = router.workers().engineLoad(busyId);
        assertEquals(m.toEngineLoad(), new EngineLoad(routed.running(), routed.waiting(), routed.kvCacheUsage(),
            m.observedAtNanos()));
        assertEquals(idle.snapshot().prefixCacheQueries(), scraper.metrics(idleId).orElseThrow().prefixCacheQueries());
        Map<WorkerId, EngineMetrics> all = scraper.allMetrics();
        assertEquals(Set.of(busyId, idleId), all.keySet());
        assertEquals(m.prefixCacheQueries(), all.get(busyId).prefixCacheQueries());
        assertEquals(m.running(), all.get(busyId).running());
        assertEquals(idle.snapshot().prefixCacheQueries(), all.get(idleId).prefixCacheQueries());
        assertEquals(0, scraper.failureCount());
        assertEquals(0, scraper.malformedLineCount());
        assertTrue(heard.stream().anyMatch(h -> h.worker().equals(busyId) && h.running() == 3));
        assertTrue(heard.stream().noneMatch(h -> h.worker().equals(WorkerId.of("in-process"))));
      }
    }
  }

  @Test
  void observedHitRateFollowsTheEnginesPrefixCache() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("w");
    try (SimServer sim = TestSupport.startSim(router, id, 100);
        EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).build()) {
      scraper.scrapeNow(); // works without start()
      EngineMetrics before = scraper.metrics(id).orElseThrow();
      assertTrue(Double.isNaN(before.lifetimeHitRate()), "no query yet: " + before);
      String prompt = words("shared", 64);
      CountDownLatch first = new CountDownLatch(1);
      complete(sim.baseUri(), prompt, 1, first);
      assertTrue(first.await(20, TimeUnit.SECONDS));
      CountDownLatch second = new CountDownLatch(1);
      complete(sim.baseUri(), prompt, 1, second);
      assertTrue(second.await(20, TimeUnit.SECONDS));
      scraper.scrapeNow();
      EngineMetrics after = scraper.metrics(id).orElseThrow();
      assertEquals(128, after.prefixCacheQueries() - before.prefixCacheQueries());
      // vLLM caches full blocks and never the last prompt token: the second request hits 3 of its 4 blocks.
      assertEquals(48, after.prefixCacheHits());
      assertEquals(48.0 / 128, after.hitRateSince(before));
      assertEquals(sim.snapshot().prefixCacheHits(), after.prefixCacheHits());

      router.removeWorker(id);
      scraper.scrapeNow();
      assertFalse(scraper.metrics(id).isPresent(), "removed workers are forgotten");
    }
  }

  /** Serves the same response to every request. */
  private static MockWebServer serving(MockResponse response) throws IOException {
    MockWebServer server = new MockWebServer();
    server.setDispatcher(new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        return response;
      }

      @Override
      public MockResponse peek() { // socket effects at request start are taken from here
        return response;
      }
    });
    server.start();
    return server;
  }

  private static URI uri(MockWebServer server) {
    return URI.create(server.url("/").toString());
  }

  @Test
  void survivesGarbageOversizedSlowFailingAndResetWorkers() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId good = WorkerId.of("good");
    Buffer huge = new Buffer();
    while (huge.size() <= EngineMetricsScraper.DEFAULT_MAX_RESPONSE_BYTES) {
      huge.writeUtf8("# HELP filler a line of a very long exposition, longer than the bound\n");
    }
    byte[] garbageBytes = new byte[4096];
    new java.util.SplittableRandom(7).nextBytes(garbageBytes);
    Map<String, ScrapeFailure> expected = Map.of(
        "garbage", ScrapeFailure.MALFORMED,
        "html", ScrapeFailure.MALFORMED,
        "huge", ScrapeFailure.TOO_LARGE,
        "huge-chunked", ScrapeFailure.TOO_LARGE,
        "slow", ScrapeFailure.TIMEOUT,
        "trickle", ScrapeFailure.TIMEOUT,
        "error", ScrapeFailure.HTTP_STATUS,
        "reset", ScrapeFailure.CONNECTION,
        "refused", ScrapeFailure.CONNECTION);
    try (SimServer sim = TestSupport.startSim(router, good, 100);
        MockWebServer garbage = serving(new MockResponse.Builder().body(new Buffer().write(garbageBytes)).build());
        MockWebServer html = serving(new MockResponse.Builder().body("<html><body>502 Bad Gateway</body></html>")
            .build());
        MockWebServer hugeServer = serving(new MockResponse.Builder().body(huge.clone()).build());
        MockWebServer chunked = serving(new MockResponse.Builder().chunkedBody(huge.clone(), 64 * 1024).build());
        MockWebServer slow = serving(new MockResponse.Builder().headersDelay(2, TimeUnit.SECONDS)
            .body("vllm:num_requests_running 1\n").build());
        MockWebServer trickle = serving(new MockResponse.Builder().throttleBody(64, 50, TimeUnit.MILLISECONDS)
            .body(PrometheusTextTest.resource("vllm-v1-metrics.txt")).build());
        MockWebServer error = serving(new MockResponse.Builder().code(500).body("boom").build());
        MockWebServer reset = serving(new MockResponse.Builder()
            .onRequestStart(new SocketEffect.CloseSocket()).build())) {
      router.addWorker(Worker.of(WorkerId.of("garbage"), uri(garbage)));
      router.addWorker(Worker.of(WorkerId.of("html"), uri(html)));
      router.addWorker(Worker.of(WorkerId.of("huge"), uri(hugeServer)));
      router.addWorker(Worker.of(WorkerId.of("huge-chunked"), uri(chunked)));
      router.addWorker(Worker.of(WorkerId.of("slow"), uri(slow)));
      router.addWorker(Worker.of(WorkerId.of("trickle"), uri(trickle)));
      router.addWorker(Worker.of(WorkerId.of("error"), uri(error)));
      router.addWorker(Worker.of(WorkerId.of("reset"), uri(reset)));
      router.addWorker(Worker.of(WorkerId.of("refused"), TestSupport.deadEndpoint()));

      Map<WorkerId, ScrapeFailure> failures = new ConcurrentHashMap<>();
      Map<WorkerId, AtomicInteger> failureCounts = new ConcurrentHashMap<>();
      AtomicInteger goodScrapes = new AtomicInteger();
      try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router)
          .interval(Duration.ofMillis(50))
          .timeout(Duration.ofMillis(300))
          .listener(new ScrapeListener() { // throws on every call: the loop must not care
            @Override
            public void onScraped(EngineMetrics metrics, int malformedLines) {
              goodScrapes.incrementAndGet();
              throw new IllegalStateException("listener bug");
            }

            @Override
            public void onScrapeFailed(WorkerId worker, ScrapeFailure failure, String detail,
                @Nullable Throwable cause) {
              ScrapeFailure previous = failures.put(worker, failure);
              assertTrue(previous == null || previous == failure, worker + ": " + previous + " then " + failure);
              failureCounts.computeIfAbsent(worker, w -> new AtomicInteger()).incrementAndGet();
              throw new IllegalStateException("listener bug");
            }
          })
          .build()) {
        scraper.start();
        await(() -> expected.keySet().stream()
            .allMatch(name -> failureCounts.getOrDefault(WorkerId.of(name), new AtomicInteger()).get() >= 2)
            && goodScrapes.get() >= 3, "every faulty worker to fail twice while the good one is scraped");
        for (Map.Entry<String, ScrapeFailure> e : expected.entrySet()) {
          WorkerId id = WorkerId.of(e.getKey());
          assertEquals(e.getValue(), failures.get(id), e.getKey());
          assertNull(router.workers().engineLoad(id), e.getKey() + " never got a load");
          assertFalse(scraper.metrics(id).isPresent(), e.getKey());
        }
        assertFalse(failures.containsKey(good));
        assertTrue(scraper.failureCount(ScrapeFailure.MALFORMED) >= 4);
        assertTrue(scraper.failureCount(ScrapeFailure.TOO_LARGE) >= 4);
        assertTrue(scraper.failureCount(ScrapeFailure.TIMEOUT) >= 4);
        assertTrue(scraper.failureCount(ScrapeFailure.HTTP_STATUS) >= 2);
        assertTrue(scraper.failureCount(ScrapeFailure.CONNECTION) >= 4);
        assertTrue(scraper.malformedLineCount() == 0, "failed responses do not count lines");
        assertTrue(scraper.scrapeCount() >= 3);
        assertEquals(new EngineLoad(0, 0, sim.snapshot().kvCacheUsage(),
            router.workers().engineLoad(good).observedAtNanos()), router.workers().engineLoad(good));
        assertTrue(scraper.toString().contains("failures="));
      }
      // The slow worker was skipped while its scrape was in flight, not piled up.
      assertTrue(slow.getRequestCount() <= failureCounts.get(WorkerId.of("slow")).get() + 1,
          slow.getRequestCount() + " requests for " + failureCounts.get(WorkerId.of("slow")) + " failures");
    }
  }

  @Test
  void aWorkerWhoseMetricsStartFailingIsReportedToTheRouterAndLosesItsLastLoad() throws Exception {
    // Mutation audit: the listener and counters heard the failure but the router did not, so a dead worker kept
    // looking idle (its last EngineLoad) and healthy. Each failure kind must reach Router.reportFailure.
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("flaky");
    String metrics = PrometheusTextTest.resource("vllm-v1-metrics.txt");
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      router.addWorker(Worker.of(id, uri(server)));
      try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).client(CLIENT).build()) {
        for (MockResponse failing : List.of(new MockResponse.Builder().code(500).body("boom").build(),
            new MockResponse.Builder().body("<html>not metrics</html>").build())) {
          server.enqueue(new MockResponse.Builder().body(metrics).build());
          scraper.scrapeNow();
          assertTrue(router.workers().engineLoad(id) != null, "the first scrape sets a load");
          assertEquals(io.kvroute.HealthState.HEALTHY, router.health(id));
          server.enqueue(failing);
          scraper.scrapeNow();
          assertNull(router.workers().engineLoad(id), "a failed scrape forgets the last load");
          assertEquals(io.kvroute.HealthState.SUSPECT, router.health(id), "a failed scrape makes it suspect");
          router.reportSuccess(id);
        }
      }
    }
  }

  @Test
  void lifecycle() throws Exception {
    Router router = Router.newBuilder().build();
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
    try {
      EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).executor(executor).client(CLIENT)
          .build();
      scraper.start();
      assertThrows(IllegalStateException.class, scraper::start);
      scraper.close();
      scraper.close();
      assertThrows(IllegalStateException.class, scraper::start);
      assertThrows(IllegalStateException.class, scraper::scrapeNow);
      assertFalse(executor.isShutdown(), "an injected executor is the caller's");
      assertFalse(CLIENT.dispatcher().executorService().isShutdown(), "an injected client is the caller's");
    } finally {
      executor.shutdownNow();
    }
    EngineMetricsScraper.Builder b = EngineMetricsScraper.newBuilder(router);
    assertThrows(IllegalArgumentException.class, () -> b.interval(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> b.timeout(Duration.ofMillis(-1)));
    assertThrows(IllegalArgumentException.class, () -> b.maxResponseBytes(0));
    assertThrows(IllegalArgumentException.class, () -> b.path("metrics"));
    assertThrows(NullPointerException.class, () -> EngineMetricsScraper.newBuilder(null));
  }
}
