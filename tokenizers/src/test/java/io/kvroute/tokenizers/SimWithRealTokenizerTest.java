package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceStats;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.transport.okhttp.ForwardRequest;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.RoutingForwarder;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The simulator as a faithful vLLM stand-in for a gateway that tokenizes locally: with the same Qwen3 files on both
 * sides (the simulator through {@code SimServer.Builder.requestTokenizer}, as {@code SimMain --tokenizer DIR} sets
 * it), the router's predicted cached tokens for every request equal the cached tokens the engine then reports
 * ({@code usage.prompt_tokens_details.cached_tokens}), over multi-turn conversations routed by KV events. With the
 * simulator's own word tokenizer instead, the same gateway's predictions miss: the degradation the option removes.
 */
class SimWithRealTokenizerTest {
  private static final String MODEL = "qwen3";
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  /** Runs 3 conversations of 4 turns each through a gateway with 2 workers; returns {predicted, reported} pairs. */
  private static List<int[]> run(boolean realTokenizerInSim) throws Exception {
    HfTokenizer qwen = TestModels.shared(TestModels.QWEN3);
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).build();
    List<SimServer> sims = new ArrayList<>();
    List<int[]> pairs = new ArrayList<>();
    try (KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).build()) {
      for (int w = 0; w < 2; w++) {
        SimServer.Builder b = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
            .speedup(1000);
        if (realTokenizerInSim) {
          b.requestTokenizer(qwen::tokenizeRequest);
        }
        SimServer sim = b.build();
        sims.add(sim);
        WorkerId id = WorkerId.of("sim-" + w);
        router.addWorker(Worker.newBuilder(id).endpoint(Worker.HTTP, sim.baseUri()).model(MODEL).build());
        subscriber.addWorker(id, Objects.requireNonNull(sim.kvEventsEndpoint()), sim.kvEventsReplayEndpoint(),
            "kv-events", 1);
      }
      subscriber.start();
      for (SimServer sim : sims) {
        assertTrue(Objects.requireNonNull(sim.kvEventPublisher()).awaitSubscribers(1, TIMEOUT));
      }
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).tokenizer(qwen).build();
      SplittableRandom r = new SplittableRandom(7);
      List<ArrayNode> conversations = new ArrayList<>();
      for (int c = 0; c < 3; c++) {
        ArrayNode messages = TokenizerFiles.JSON.createArrayNode();
        messages.addObject().put("role", "system").put("content", "You are assistant number " + c + ".");
        conversations.add(messages);
      }
      for (int turn = 0; turn < 4; turn++) {
        for (ArrayNode messages : conversations) {
          messages.addObject().put("role", "user").put("content", words(r, 40 + r.nextInt(80)));
          ObjectNode body = TokenizerFiles.JSON.createObjectNode().put("model", MODEL).put("max_tokens", 2);
          body.set("messages", messages);
          try (ForwardedResponse response = forwarder.forward(ForwardRequest.newBuilder("/v1/chat/completions",
              TokenizerFiles.JSON.writeValueAsBytes(body)).build())) {
            assertEquals(200, response.code());
            JsonNode answer = TokenizerFiles.JSON.readTree(response.body().string());
            int reported = answer.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt(-1);
            pairs.add(new int[] {response.routing().predictedCachedTokens(), reported});
            messages.addObject().put("role", "assistant")
                .put("content", answer.path("choices").get(0).path("message").path("content").asText());
          }
          awaitEventsApplied(sims, subscriber, router);
        }
      }
    } finally {
      sims.forEach(SimServer::close);
    }
    return pairs;
  }

  private static String words(SplittableRandom r, int n) {
    String[] pool = {"cache", "router", "prefix", "token", "worker", "model", "你好", "世界", "😀", "42", "don't",
        "GPU", "vLLM", "Java", "block", "hash"};
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "" : r.nextInt(10) == 0 ? ".\n" : " ").append(pool[r.nextInt(pool.length)]);
    }
    return sb.toString();
  }

  /** Until every batch each simulator published has been applied to the router's index. */
  private static void awaitEventsApplied(List<SimServer> sims, KvEventSubscriber subscriber, Router router)
      throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      boolean done = true;
      for (int w = 0; w < sims.size(); w++) {
        long published = Objects.requireNonNull(sims.get(w).kvEventPublisher()).nextSequence();
        long applied = subscriber.stats(WorkerId.of("sim-" + w)).map(EventSourceStats::batches).orElse(0L);
        done &= applied >= published;
      }
      if (done) {
        return;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("the KV events were not applied in time");
  }

  @Test
  void predictedCachedTokensAreTheEnginesWhenBothSidesTokenizeAlike() throws Exception {
    List<int[]> pairs = run(true);
    int cached = 0;
    for (int i = 0; i < pairs.size(); i++) {
      assertEquals(pairs.get(i)[0], pairs.get(i)[1], "request " + i + ": predicted vs reported cached tokens");
      cached += pairs.get(i)[1];
    }
    assertTrue(cached > 1000, "the conversations' later turns re-used their history: " + cached);
  }

  @Test
  void withTheSimulatorsWordTokenizerThePredictionsMiss() throws Exception {
    List<int[]> pairs = run(false);
    long mismatched = pairs.stream().filter(p -> p[0] != p[1]).count();
    assertTrue(mismatched >= pairs.size() / 2, mismatched + " of " + pairs.size() + " predictions missed");
  }

  /** {@code SimMain --tokenizer DIR} as a process (the examples jar's class path: sim and kvroute-tokenizers). */
  @Test
  void simMainTokenizesWithTheModelDirectory() throws Exception {
    Path dir = TestModels.dir(TestModels.QWEN3);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "io.kvroute.sim.SimMain",
        "--no-events", "--model", MODEL, "--tokenizer", dir.toAbsolutePath().toString())
        .redirectErrorStream(true).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String ready = out.readLine();
      while (ready != null && !ready.startsWith("READY ")) {
        ready = out.readLine();
      }
      assertTrue(ready != null, "the simulator started");
      URI base = URI.create(ready.split(" ")[1].substring("http=".length()));
      String chat = "{\"model\":\"qwen3\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello, 世界 😀\"}]}";
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(base.resolve("/tokenize"))
          .timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString(chat)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      JsonNode tokens = TokenizerFiles.JSON.readTree(r.body()).get("tokens");
      int[] ids = new int[tokens.size()];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = tokens.get(i).asInt();
      }
      assertArrayEquals(TestModels.shared(TestModels.QWEN3).tokenizeRequest(chat.getBytes(StandardCharsets.UTF_8)),
          ids);
    } finally {
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }
}
