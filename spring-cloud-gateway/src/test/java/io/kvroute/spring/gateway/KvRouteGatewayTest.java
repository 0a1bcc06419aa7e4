package io.kvroute.spring.gateway;

import static io.kvroute.spring.gateway.GatewayFixture.await;
import static io.kvroute.spring.gateway.GatewayFixture.chat;
import static io.kvroute.spring.gateway.GatewayFixture.completion;
import static io.kvroute.spring.gateway.GatewayFixture.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.PrefixMatch;
import io.kvroute.Router;
import io.kvroute.WorkerId;
import io.kvroute.openai.ChatMessage;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import io.kvroute.testkit.SseEvents;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.cloud.gateway.route.builder.RouteLocatorBuilder;
import org.springframework.cloud.gateway.support.RouteMetadataUtils;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * The example Spring Cloud Gateway application on a random port in front of three simulated vLLM workers (real
 * HTTP, real ZeroMQ KV events, the engines' own {@code /tokenize}): routing by prefix, streaming, cancellation,
 * typed failures and meters, observed from the outside as an OpenAI client and the engines see them.
 */
class KvRouteGatewayTest {
  private static final int BLOCK = 16;
  private static GatewayFixture gw;

  @BeforeAll
  static void start() throws Exception {
    gw = GatewayFixture.start(3, SimEngineConfig.DEFAULT, 1.0, List.of(SlowRoute.class),
        "--kvroute.max-request-body=256KB");
  }

  @AfterAll
  static void stop() {
    if (gw != null) {
      gw.close();
    }
  }

  /**
   * A second route in the Java DSL, next to the example's YAML one: {@code /slow/v1/...} through the same filter with
   * a 100 ms response timeout.
   */
  @Configuration(proxyBeanMethods = false)
  static class SlowRoute {
    @Bean
    RouteLocator slowRoute(RouteLocatorBuilder routes, KvRouteGatewayFilterFactory kvRoute) {
      return routes.routes().route("slow", r -> r.path("/slow/**")
          .filters(f -> f.stripPrefix(1).filter(kvRoute.apply(new KvRouteGatewayFilterFactory.Config())))
          .metadata(RouteMetadataUtils.RESPONSE_TIMEOUT_ATTR, 100).uri("no://op")).build();
    }
  }

  private static String words(String stem, int count) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < count; i++) {
      sb.append(i == 0 ? "" : " ").append(stem).append(i);
    }
    return sb.toString();
  }

  /** vLLM's rule: full blocks of the shared prefix are hits, but never the block holding the prompt's last token. */
  private static int expectedCachedTokens(int[] cachedPrompt, int[] prompt) {
    int common = 0;
    while (common < cachedPrompt.length && common < prompt.length && cachedPrompt[common] == prompt[common]) {
      common++;
    }
    return Math.min(common / BLOCK, (prompt.length - 1) / BLOCK) * BLOCK;
  }

  private static int cachedTokens(JsonNode response) {
    return response.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
  }

  private static double decisions() {
    return count("kvroute.routing.decisions");
  }

  /** The summed count of the counters and timers named {@code name} with the tags given as key, value, …. */
  static double count(String name, String... tags) {
    var search = gw.meters().find(name).tags(tags);
    return search.counters().stream().mapToDouble(Counter::count).sum()
        + search.functionCounters().stream().mapToDouble(FunctionCounter::count).sum()
        + search.timers().stream().mapToDouble(Timer::count).sum();
  }

  private static SimServer sim(String workerName) {
    return gw.sims.get(Integer.parseInt(workerName.substring("sim-".length())));
  }

  /** Waits until the gateway's index holds the prompt's full blocks on the worker (its KV events arrived). */
  private static void awaitIndexed(String worker, int[] tokens) throws InterruptedException {
    long[] hashes = BlockHasher.of(BLOCK).sequenceHashes(tokens);
    Router router = gw.router();
    await(() -> {
      PrefixMatch m = router.indexer().findMatches(hashes).get(WorkerId.of(worker));
      return m != null && m.blocks() == hashes.length;
    }, Duration.ofSeconds(10), "KV events of " + worker);
  }

  @Test
  void repeatedPrefixesLandOnTheWorkerHoldingThemAndTheEngineReportsTheCacheHits() throws Exception {
    double decisionsBefore = decisions();
    int requests = 0;
    for (int kind = 0; kind < 3; kind++) {
      String prefix = words("prefix" + kind + "w", 256);
      String home = null;
      int[] homePrompt = null;
      for (int rep = 0; rep < 4; rep++) {
        String prompt = prefix + " " + words("tail" + kind + "r" + rep + "w", 40);
        HttpResponse<String> r = gw.post("/v1/completions", completion(prompt, 4, false));
        requests++;
        assertEquals(200, r.statusCode(), r.body());
        String worker = r.headers().firstValue("X-KvRoute-Worker").orElseThrow();
        int predicted = Integer.parseInt(r.headers().firstValue("X-KvRoute-Predicted-Cached-Tokens").orElseThrow());
        int cached = cachedTokens(json(r.body()));
        int[] tokens = SimTokenizer.standard().encode(prompt);
        if (rep == 0) {
          assertEquals(0, cached, "a prefix never sent before is cold on every worker");
          assertEquals(0, predicted);
          home = worker;
          homePrompt = tokens;
          awaitIndexed(worker, tokens);
        } else {
          int expected = expectedCachedTokens(homePrompt, tokens);
          assertEquals(256, expected, "the prompts share their 256-token prefix, 16 full blocks");
          assertEquals(home, worker, "prefix " + kind + " request " + rep + " must go where the prefix is cached");
          assertEquals(expected, cached, "engine-reported cached tokens");
          assertEquals(expected, predicted, "the router predicts exactly what the engine finds");
        }
      }
    }
    assertEquals(requests, decisions() - decisionsBefore, 1e-9, "one routing decision per request");
    await(() -> gw.totalActiveRequests() == 0, Duration.ofSeconds(5), "all bookings released");
  }

  @Test
  void chatRequestsAreRoutedByTheirTemplatedTokens() throws Exception {
    String system = words("systemw", 300);
    String first = null;
    for (int turn = 0; turn < 3; turn++) {
      HttpResponse<String> r = gw.post("/v1/chat/completions", "{\"model\":\"" + GatewayFixture.MODEL
          + "\",\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},{\"role\":\"user\",\"content\":\""
          + words("question" + turn + "w", 20) + "\"}],\"max_tokens\":3}");
      assertEquals(200, r.statusCode(), r.body());
      JsonNode body = json(r.body());
      assertEquals("chat.completion", body.get("object").asString());
      String worker = r.headers().firstValue("X-KvRoute-Worker").orElseThrow();
      int cached = cachedTokens(body);
      int promptTokens = body.get("usage").get("prompt_tokens").asInt();
      if (turn == 0) {
        first = worker;
        assertEquals(0, cached);
        int[] tokens = SimTokenizer.standard().encodeChat(List.of(new ChatMessage("system", system),
            new ChatMessage("user", words("question0w", 20))));
        assertEquals(tokens.length, promptTokens, "the gateway and the engine tokenize the chat alike");
        awaitIndexed(worker, tokens);
      } else {
        assertEquals(first, worker);
        assertTrue(cached >= 300 / BLOCK * BLOCK, "the system prompt's blocks are hits, got " + cached);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"/v1/completions", "/v1/chat/completions"})
  void streamingResponsesPassThroughChunkByChunkAndMarkTheFirstToken(String path) throws Exception {
    boolean chat = path.contains("chat");
    String prompt = words(chat ? "chatstreamw" : "streamw", 100);
    HttpResponse<InputStream> r = gw.stream(path, chat ? chat(prompt, 120, true) : completion(prompt, 120, true));
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
    String worker = r.headers().firstValue("X-KvRoute-Worker").orElseThrow();
    WorkerId id = WorkerId.of(worker);
    int textEvents = 0;
    int completionTokens = -1;
    boolean done;
    try (SseEvents events = new SseEvents(r.body())) {
      for (String data = events.next(); data != null; data = events.next()) {
        JsonNode event = json(data);
        JsonNode choice = event.get("choices").size() > 0 ? event.get("choices").get(0) : null;
        JsonNode text = choice == null ? null : chat ? choice.get("delta").get("content") : choice.get("text");
        if (text != null && !text.asString().isEmpty()) {
          textEvents++;
          if (textEvents == 1) {
            // The engine is still generating: the gateway passed this chunk on without waiting for the body.
            assertEquals(1, sim(worker).snapshot().running(), "the first token arrived while the engine runs");
            assertEquals(1, gw.router().activeRequests(id), "the request is still booked");
            assertEquals(0, gw.router().pendingPrefillTokens(id), "firstToken() released the prefill booking");
          }
        }
        if (event.hasNonNull("usage")) {
          completionTokens = event.get("usage").get("completion_tokens").asInt();
        }
      }
      done = events.done();
    }
    assertTrue(done, "the stream ends with [DONE]");
    assertEquals(120, completionTokens);
    assertEquals(completionTokens, textEvents, "one event per generated token reached the client");
    await(() -> gw.router().activeRequests(id) == 0, Duration.ofSeconds(5), "the booking released at the end");
  }

  @Test
  void aClientCancelReleasesTheBookingAndTheEngineRequest() throws Exception {
    String prompt = words("cancelw", 80);
    HttpResponse<InputStream> r = gw.stream("/v1/completions", completion(prompt, 3000, true));
    assertEquals(200, r.statusCode());
    String worker = r.headers().firstValue("X-KvRoute-Worker").orElseThrow();
    InputStream body = r.body();
    BufferedReader in = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8));
    String line;
    do {
      line = in.readLine();
      assertNotNull(line, "the stream ended before its first event");
    } while (!line.startsWith("data: "));
    assertEquals(1, gw.totalActiveRequests(), "one request in flight");
    body.close(); // the client goes away mid-stream
    await(() -> gw.totalActiveRequests() == 0, Duration.ofSeconds(10), "the booking released on cancel");
    await(() -> sim(worker).snapshot().running() == 0, Duration.ofSeconds(10),
        "the engine's request aborted when the gateway dropped the upstream connection");
    await(() -> count("kvroute.request.duration", "worker", worker) >= 1, Duration.ofSeconds(5),
        "the cancelled request's duration metered");
  }

  /**
   * Many clients at once, streaming and not, some going away mid-stream: every request is routed exactly once and
   * every booking is released, whatever the interleaving.
   */
  @Test
  void concurrentClientsLeaveNoBookingBehind() throws Exception {
    double before = decisions();
    int clients = 6;
    int perClient = 6;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(clients);
    try {
      List<java.util.concurrent.Future<Integer>> futures = new java.util.ArrayList<>();
      for (int c = 0; c < clients; c++) {
        int client = c;
        futures.add(pool.submit(() -> {
          int ok = 0;
          for (int i = 0; i < perClient; i++) {
            String prompt = words("conc" + (client % 3) + "w", 128) + " " + words("c" + client + "i" + i + "w", 16);
            switch (i % 3) {
              case 0 -> {
                HttpResponse<String> r = gw.post("/v1/completions", completion(prompt, 3, false));
                ok += r.statusCode() == 200 ? 1 : 0;
              }
              case 1 -> {
                HttpResponse<InputStream> r = gw.stream("/v1/chat/completions", chat(prompt, 8, true));
                try (InputStream in = r.body()) {
                  in.readAllBytes();
                }
                ok += r.statusCode() == 200 ? 1 : 0;
              }
              default -> {
                HttpResponse<InputStream> r = gw.stream("/v1/completions", completion(prompt, 500, true));
                try (InputStream in = r.body()) {
                  in.readNBytes(64); // then go away mid-stream
                }
                ok += r.statusCode() == 200 ? 1 : 0;
              }
            }
          }
          return ok;
        }));
      }
      int ok = 0;
      for (var f : futures) {
        ok += f.get();
      }
      assertEquals(clients * perClient, ok, "every request answered 200");
    } finally {
      pool.shutdownNow();
    }
    assertEquals(clients * perClient, decisions() - before, 1e-9, "one routing decision per request");
    await(() -> gw.totalActiveRequests() == 0, Duration.ofSeconds(10), "every booking released");
    for (WorkerId id : gw.router().workers().snapshot().stream().map(io.kvroute.Worker::id).toList()) {
      assertEquals(0, gw.router().pendingPrefillTokens(id), "no prefill left booked on " + id);
    }
  }

  @Test
  void aWorkerThatDoesNotAnswerInTimeIsReportedToTheRouter() throws Exception {
    for (io.kvroute.Worker w : gw.router().workers().snapshot()) {
      assertEquals(io.kvroute.HealthState.HEALTHY, gw.router().health(w.id()));
    }
    // 100 tokens take the engine about 0.5 s; the route gives it 100 ms.
    HttpResponse<String> r = gw.post("/slow/v1/completions", completion(words("slowroutew", 64), 100, false));
    assertEquals(504, r.statusCode(), r.body());
    List<WorkerId> suspects = gw.router().workers().snapshot().stream().map(io.kvroute.Worker::id)
        .filter(id -> gw.router().health(id) == io.kvroute.HealthState.SUSPECT).toList();
    assertEquals(1, suspects.size(), "the timed-out worker, and only it, is suspect");
    await(() -> gw.totalActiveRequests() == 0, Duration.ofSeconds(5), "the timed-out booking released");
    await(() -> gw.sims.stream().allMatch(s -> s.snapshot().running() == 0), Duration.ofSeconds(10),
        "the engine's request gone");
    gw.router().reportSuccess(suspects.get(0)); // leave the workers healthy for the other tests
  }

  private static void assertOpenAiError(HttpResponse<String> r, int status, String code) {
    assertEquals(status, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
    JsonNode error = json(r.body()).get("error");
    assertNotNull(error, r.body());
    assertEquals(code, error.get("code").asString(), r.body());
    assertEquals(status < 500 ? "invalid_request_error" : "server_error", error.get("type").asString());
    assertTrue(error.has("param") && error.get("param").isNull());
    assertTrue(!error.get("message").asString().isBlank());
  }

  @Test
  void requestsThatCannotBeRoutedGetTypedOpenAiErrors() throws Exception {
    assertOpenAiError(gw.post("/v1/completions", "{\"prompt\": \"unterminated"), 400, "invalid_request_body");
    assertOpenAiError(gw.post("/v1/completions", "[1, 2, 3]"), 400, "invalid_request_body");
    assertOpenAiError(gw.post("/v1/completions", "{\"model\":\"" + GatewayFixture.MODEL + "\"}"), 400,
        "invalid_request_body");
    assertOpenAiError(gw.post("/v1/completions", ""), 400, "invalid_request_body");
    assertOpenAiError(gw.post("/v1/completions", completion("", 4, false)), 400, "empty_prompt");
    assertOpenAiError(gw.post("/v1/chat/completions", chat("hello", 4, false).replace(GatewayFixture.MODEL,
        "no-such-model")), 404, "model_not_found");
    assertOpenAiError(gw.post("/v1/completions", completion(words("bigw", 40_000), 4, false)), 413,
        "request_too_large");
    assertEquals(1, count("kvroute.gateway.rejections", "status", "404", "code", "model_not_found"));
    assertEquals(1, count("kvroute.gateway.rejections", "status", "413", "code", "request_too_large"));
    assertEquals(0, gw.totalActiveRequests(), "nothing was booked for refused requests");
  }

  @Test
  void metersDescribeTheRouterAndTheEventStreams() throws Exception {
    HttpResponse<String> r = gw.post("/v1/completions", completion(words("meterw", 64), 2, false));
    assertEquals(200, r.statusCode(), r.body());
    String worker = r.headers().firstValue("X-KvRoute-Worker").orElseThrow();
    await(() -> count("kvroute.events.batches", "worker", worker) > 0, Duration.ofSeconds(10),
        "event batches counted");
    Gauge blocks = gw.meters().find("kvroute.index.worker.entries").tag("worker", worker).gauge();
    assertNotNull(blocks);
    await(() -> blocks.value() >= 64 / BLOCK, Duration.ofSeconds(10), "the index holds the prompt's blocks");
    for (int i = 0; i < 3; i++) {
      Gauge active = gw.meters().find("kvroute.requests.active").tag("worker", "sim-" + i).gauge();
      assertNotNull(active);
    }
    assertTrue(count("kvroute.gateway.routing.duration") >= 1);
    assertTrue(count("kvroute.request.time.to.first.token", "worker", worker) >= 1);
    assertTrue(gw.meters().find("kvroute.scrapes").tags("worker", worker, "outcome", "success").counter() != null,
        "the engine's /metrics scraped");
  }
}
