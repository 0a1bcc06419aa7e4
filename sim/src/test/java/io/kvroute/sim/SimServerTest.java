package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.KvIndexer;
import io.kvroute.PrefixMatch;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.openai.internal.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Real HTTP on loopback against a running {@link SimServer}. */
class SimServerTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(20);
  private static SimServer server;
  private static HttpClient client;

  @BeforeAll
  static void start() throws IOException {
    server = SimServer.newBuilder()
        .engine(SimEngineConfig.newBuilder().numBlocks(256).modelName("sim-model").build())
        .speedup(50)
        .build();
    client = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
  }

  @AfterAll
  static void stop() {
    server.close();
  }

  private static HttpResponse<String> post(String path, String body) throws Exception {
    return client.send(HttpRequest.newBuilder(server.baseUri().resolve(path)).timeout(TIMEOUT)
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpResponse<String> get(String path) throws Exception {
    return client.send(HttpRequest.newBuilder(server.baseUri().resolve(path)).timeout(TIMEOUT).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> json(HttpResponse<String> response) {
    return (Map<String, Object>) Json.parse(response.body());
  }

  @SuppressWarnings("unchecked")
  private static long cachedTokens(Map<String, Object> body) {
    Map<String, Object> usage = (Map<String, Object>) body.get("usage");
    return (Long) ((Map<String, Object>) usage.get("prompt_tokens_details")).get("cached_tokens");
  }

  private static String words(String tag, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      sb.append(' ').append(tag).append(i);
    }
    return sb.toString().trim();
  }

  @Test
  @SuppressWarnings("unchecked")
  void completionReportsCachedTokensOnTheSecondIdenticalPrompt() throws Exception {
    String body = Json.write(Map.of("model", "sim-model", "prompt", words("cmpl", 40), "max_tokens", 5));
    HttpResponse<String> first = post("/v1/completions", body);
    assertEquals(200, first.statusCode(), first.body());
    Map<String, Object> r1 = json(first);
    assertEquals("text_completion", r1.get("object"));
    Map<String, Object> usage = (Map<String, Object>) r1.get("usage");
    assertEquals(40L, usage.get("prompt_tokens"));
    assertEquals(5L, usage.get("completion_tokens"));
    assertEquals(0L, cachedTokens(r1));
    Map<String, Object> choice = ((List<Map<String, Object>>) r1.get("choices")).get(0);
    assertEquals("length", choice.get("finish_reason"));
    assertEquals(5, ((String) choice.get("text")).trim().split(" ").length);

    Map<String, Object> r2 = json(post("/v1/completions", body));
    assertEquals(32L, cachedTokens(r2), "two full blocks of 16 hit");
  }

  @Test
  @SuppressWarnings("unchecked")
  void streamingCompletionSendsOneChunkPerTokenThenUsageThenDone() throws Exception {
    String body = Json.write(Map.of("prompt", words("stream", 20), "max_tokens", 7, "stream", true,
        "stream_options", Map.of("include_usage", true)));
    HttpResponse<String> response = post("/v1/completions", body);
    assertEquals(200, response.statusCode());
    assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream"));
    List<String> data = new ArrayList<>();
    for (String line : response.body().split("\n")) {
      if (line.startsWith("data: ")) {
        data.add(line.substring(6));
      }
    }
    assertEquals("[DONE]", data.get(data.size() - 1));
    assertEquals(7 + 1 + 1, data.size(), "7 token chunks, a usage chunk, [DONE]");
    Map<String, Object> last = (Map<String, Object>) Json.parse(data.get(6));
    assertEquals("length", ((List<Map<String, Object>>) last.get("choices")).get(0).get("finish_reason"));
    Map<String, Object> usageChunk = (Map<String, Object>) Json.parse(data.get(7));
    assertEquals(List.of(), usageChunk.get("choices"));
    assertEquals(0L, cachedTokens(usageChunk));
  }

  @Test
  @SuppressWarnings("unchecked")
  void chatCompletionUsesTheChatTemplateTokenizeAgrees() throws Exception {
    Map<String, Object> request = Map.of("model", "sim-model", "max_tokens", 3,
        "messages", List.of(Map.of("role", "system", "content", words("sys", 30)),
            Map.of("role", "user", "content", List.of(Map.of("type", "text", "text", "hello there")))));
    Map<String, Object> tokenized = json(post("/tokenize", Json.write(Map.of("messages", request.get("messages")))));
    long count = (Long) tokenized.get("count");
    assertEquals(2 + 30 + 1 + 2 + 2 + 1 + 2, count);
    assertEquals(count, ((List<Object>) tokenized.get("tokens")).size());

    Map<String, Object> r = json(post("/v1/chat/completions", Json.write(request)));
    assertEquals("chat.completion", r.get("object"));
    assertEquals(count, ((Map<String, Object>) r.get("usage")).get("prompt_tokens"));
    Map<String, Object> message = (Map<String, Object>) ((List<Map<String, Object>>) r.get("choices")).get(0)
        .get("message");
    assertEquals("assistant", message.get("role"));

    Map<String, Object> streamed = Map.of("max_tokens", 3, "stream", true, "messages", request.get("messages"));
    HttpResponse<String> s = post("/v1/chat/completions", Json.write(streamed));
    assertTrue(s.body().contains("\"chat.completion.chunk\""));
    assertTrue(s.body().contains("\"role\":\"assistant\""));
    assertTrue(s.body().trim().endsWith("data: [DONE]"));
  }

  /** A configured RequestTokenizer replaces SimTokenizer for text prompts and chats; ids as prompts stay ids. */
  @Test
  @SuppressWarnings("unchecked")
  void aRequestTokenizerTokenizesTextAndChats() throws Exception {
    // one id per body byte: unlike SimTokenizer's one id per word, so the source of the ids is visible
    RequestTokenizer bytes = body -> {
      if (new String(body, StandardCharsets.UTF_8).contains("boom")) {
        throw new IllegalArgumentException("boom is not a word");
      }
      int[] ids = new int[body.length];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = 16 + (body[i] & 0xff);
      }
      return ids;
    };
    try (SimServer own = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).speedup(1000).requestTokenizer(bytes).build()) {
      String prompt = "{\"prompt\":\"a b\"}";
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(own.baseUri().resolve("/tokenize"))
          .timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString(prompt)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals((long) prompt.getBytes(StandardCharsets.UTF_8).length, json(r).get("count"));
      String chat = "{\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
      r = client.send(HttpRequest.newBuilder(own.baseUri().resolve("/v1/chat/completions")).timeout(TIMEOUT)
          .POST(HttpRequest.BodyPublishers.ofString(chat)).build(), HttpResponse.BodyHandlers.ofString());
      Map<String, Object> usage = (Map<String, Object>) json(r).get("usage");
      assertEquals((long) chat.length(), usage.get("prompt_tokens"));
      String ids = "{\"prompt\":[20,21,22]}";
      r = client.send(HttpRequest.newBuilder(own.baseUri().resolve("/tokenize")).timeout(TIMEOUT)
          .POST(HttpRequest.BodyPublishers.ofString(ids)).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(3L, json(r).get("count"), "token ids are taken as they are");
      r = client.send(HttpRequest.newBuilder(own.baseUri().resolve("/tokenize")).timeout(TIMEOUT)
          .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"boom\"}")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(400, r.statusCode());
      assertTrue(r.body().contains("boom is not a word"), r.body());
    }
  }

  @Test
  void tokenizeAPromptMatchesTheSharedTokenizer() throws Exception {
    Map<String, Object> r = json(post("/tokenize", Json.write(Map.of("prompt", "a b c a"))));
    assertEquals(4L, r.get("count"));
    List<Long> expected = new ArrayList<>();
    for (int id : SimTokenizer.standard().encode("a b c a")) {
      expected.add((long) id);
    }
    assertEquals(expected, r.get("tokens"));
  }

  @Test
  @SuppressWarnings("unchecked")
  void modelsHealthAndMetrics() throws Exception {
    Map<String, Object> models = json(get("/v1/models"));
    assertEquals("sim-model", ((List<Map<String, Object>>) models.get("data")).get(0).get("id"));
    assertEquals(200, get("/health").statusCode());
    post("/v1/completions", Json.write(Map.of("prompt", words("metrics", 33), "max_tokens", 1)));
    String metrics = get("/metrics").body();
    for (String name : List.of("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total")) {
      assertTrue(metrics.contains("\n" + name + "{engine=\"0\",model_name=\"sim-model\"} "), name + " in\n" + metrics);
    }
    SimServer.Snapshot snapshot = server.snapshot();
    assertTrue(snapshot.prefixCacheQueries() >= 33);
    assertTrue(metrics.contains("vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"sim-model\"} "));
  }

  @ParameterizedTest(name = "{0} {1} -> {3}")
  @CsvSource(delimiter = '|', value = {
      "POST|/v1/completions|{not json|400",
      "POST|/v1/completions|[1,2]|400",
      "POST|/v1/completions|{\"max_tokens\": 3}|400",
      "POST|/v1/completions|{\"prompt\": \"hi\", \"model\": \"gpt-9\"}|404",
      "POST|/v1/completions|{\"prompt\": \"hi\", \"max_tokens\": 0}|400",
      "POST|/v1/completions|{\"prompt\": \"hi\", \"max_tokens\": \"many\"}|400",
      "POST|/v1/completions|{\"prompt\": \"hi\", \"max_tokens\": 5000}|400",
      "POST|/v1/completions|{\"prompt\": [1, -5]}|400",
      "POST|/v1/completions|{\"prompt\": \"\"}|400",
      "POST|/v1/completions|{\"prompt\": \"hi\", \"stream\": \"yes\"}|400",
      "POST|/v1/chat/completions|{\"messages\": []}|400",
      "POST|/v1/chat/completions|{\"messages\": [{\"role\": \"user\", \"content\": 5}]}|400",
      "POST|/tokenize|{}|400",
      "GET|/v1/completions||405",
      "GET|/nope||404",
  })
  @SuppressWarnings("unchecked")
  void badRequestsGetOpenAiStyleErrors(String method, String path, String body, int status) throws Exception {
    HttpResponse<String> response = method.equals("GET") ? get(path) : post(path, body == null ? "" : body);
    assertEquals(status, response.statusCode(), response.body());
    Map<String, Object> error = (Map<String, Object>) json(response).get("error");
    assertNotNull(error, response.body());
    assertTrue(((String) error.get("message")).length() > 3);
    assertEquals((long) status, error.get("code"));
  }

  /**
   * A token-id prompt is checked against the vocabulary as vLLM does ({@code "Token id ... is out of vocabulary"}):
   * ids from 0 to {@code vocabularySize - 1} are served, the size itself and beyond are a 400 naming the prompt.
   */
  @Test
  @SuppressWarnings("unchecked")
  void tokenIdsAreCheckedAgainstTheVocabularyAtItsEdge() throws Exception {
    int vocabulary = SimTokenizer.standard().vocabularySize();
    HttpResponse<String> last = post("/v1/completions", "{\"prompt\": [0, " + (vocabulary - 1) + "], \"max_tokens\": 1}");
    assertEquals(200, last.statusCode(), last.body());
    for (long id : new long[] {vocabulary, vocabulary + 1L, Integer.MAX_VALUE}) {
      HttpResponse<String> r = post("/v1/completions", "{\"prompt\": [1, " + id + "], \"max_tokens\": 1}");
      assertEquals(400, r.statusCode(), id + ": " + r.body());
      Map<String, Object> error = (Map<String, Object>) json(r).get("error");
      assertEquals("prompt", error.get("param"), r.body());
    }
  }

  /**
   * A body over the 32 MiB bound is refused as such, even when its first 32 MiB are a valid request: here a small
   * request padded with whitespace, which a reader that only stopped at the bound would parse and serve.
   */
  @Test
  @SuppressWarnings("unchecked")
  void aBodyOverTheBoundIsRefusedEvenIfItsStartIsAValidRequest() throws Exception {
    String request = "{\"prompt\": \"hi\", \"max_tokens\": 1}";
    HttpResponse<String> small = post("/v1/completions", request + " ".repeat(1024));
    assertEquals(200, small.statusCode(), small.body());
    HttpResponse<String> padded = post("/v1/completions", request + " ".repeat(32 << 20));
    assertEquals(400, padded.statusCode(), padded.body());
    String message = (String) ((Map<String, Object>) json(padded).get("error")).get("message");
    assertTrue(message.contains("exceeds"), message);
  }

  @Test
  @SuppressWarnings("unchecked")
  void tooLongForTheCacheIsRejectedWithTheContextLengthMessage() throws Exception {
    HttpResponse<String> r = post("/v1/completions", Json.write(Map.of("prompt", words("long", 4090),
        "max_tokens", 10)));
    assertEquals(400, r.statusCode());
    String message = (String) ((Map<String, Object>) json(r).get("error")).get("message");
    assertTrue(message.contains("maximum context length is 4096 tokens"), message);
  }

  @Test
  void kvEventsReachASubscriberOverZeroMqAndResetClearsThem() throws Exception {
    try (SimServer events = SimServer.newBuilder()
        .engine(SimEngineConfig.newBuilder().numBlocks(64).build())
        .speedup(100)
        .build()) {
      KvIndexer indexer = KvIndexer.newBuilder().blockSize(16).build();
      WorkerId worker = WorkerId.of("sim");
      try (KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(indexer).build()) {
        subscriber.addWorker(io.kvroute.WorkerId.of("sim"), events.kvEventsEndpoint(), events.kvEventsReplayEndpoint(), "kv-events", 1);
        subscriber.start();
        assertTrue(events.kvEventPublisher().awaitSubscribers(1, TIMEOUT));
        String prompt = words("zmq", 50);
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(events.baseUri().resolve("/v1/completions"))
            .timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString(
                Json.write(Map.of("prompt", prompt, "max_tokens", 2)))).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        long[] hashes = BlockHasher.of(16).sequenceHashes(SimTokenizer.standard().encode(prompt));
        await(() -> indexer.findMatches(hashes).getOrDefault(worker, PrefixMatch.NONE).blocks() == 3);

        HttpResponse<String> reset = client.send(HttpRequest.newBuilder(
            events.baseUri().resolve("/reset_prefix_cache")).timeout(TIMEOUT)
            .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, reset.statusCode());
        await(() -> indexer.findMatches(hashes).getOrDefault(worker, PrefixMatch.NONE).blocks() == 0);
      }
    }
  }

  @Test
  void publishingCanBeTurnedOff() throws Exception {
    try (SimServer quiet = SimServer.newBuilder().kvEvents(false).build()) {
      assertNull(quiet.kvEventsEndpoint());
      assertEquals(200, client.send(HttpRequest.newBuilder(quiet.baseUri().resolve("/health")).timeout(TIMEOUT)
          .GET().build(), HttpResponse.BodyHandlers.ofString()).statusCode());
    }
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("condition not met within " + TIMEOUT);
      }
      Thread.sleep(10);
    }
  }

  @Test
  void clientThatGoesAwayMidStreamHasItsRequestAbortedAndBlocksFreed() throws Exception {
    try (SimServer slow = SimServer.newBuilder().kvEvents(false)
        .engine(SimEngineConfig.newBuilder().numBlocks(64).build()).speedup(1).build()) {
      String body = Json.write(Map.of("prompt", words("gone", 40), "max_tokens", 500, "stream", true));
      HttpResponse<java.io.InputStream> response = client.send(
          HttpRequest.newBuilder(slow.baseUri().resolve("/v1/completions")).timeout(TIMEOUT)
              .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofInputStream());
      java.io.InputStream in = response.body();
      assertTrue(in.read() >= 0, "the first chunk arrives");
      assertEquals(1, slow.snapshot().running());
      in.close();
      await(() -> slow.snapshot().running() == 0 && slow.snapshot().kvCacheUsage() == 0);
      assertEquals(0, slow.snapshot().finishedRequests(), "aborted, not finished");
    }
  }

  @Test
  void concurrentRequestsAreBatchedAndAllComplete() throws Exception {
    String prefix = words("shared", 64);
    List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> futures = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      String body = Json.write(Map.of("prompt", prefix + " " + words("tail" + i + "x", 10), "max_tokens", 20));
      futures.add(client.sendAsync(HttpRequest.newBuilder(server.baseUri().resolve("/v1/completions"))
          .timeout(TIMEOUT).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
          HttpResponse.BodyHandlers.ofString()));
    }
    long cached = 0;
    for (var f : futures) {
      HttpResponse<String> r = f.get();
      assertEquals(200, r.statusCode(), r.body());
      cached += cachedTokens(json(r));
    }
    assertTrue(cached >= 64, "later requests reuse the shared 64-token prefix: " + cached);
  }

  @Test
  void uriIsLoopback() {
    URI base = server.baseUri();
    assertEquals("127.0.0.1", base.getHost());
    assertTrue(base.getPort() > 0);
  }

  /**
   * vLLM dies with its connections, so a stream cut by a shutdown must look cut: the raw bytes on the wire hold some
   * tokens, then the connection closes without {@code data: [DONE]} and without the chunked body's last chunk.
   */
  @Test
  void shutdownMidStreamAbortsTheConnectionInsteadOfSendingDone() throws Exception {
    SimServer dying = SimServer.newBuilder()
        .engine(SimEngineConfig.newBuilder().numBlocks(256).modelName("sim-model").build())
        .kvEvents(false)
        .speedup(1) // about 10 ms per decode step: 2000 tokens would take 20 s
        .build();
    String body = "{\"model\":\"sim-model\",\"prompt\":\"" + words("cut", 20) + "\",\"max_tokens\":2000,"
        + "\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    byte[] bytes = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    try (java.net.Socket socket = new java.net.Socket(dying.baseUri().getHost(), dying.port())) {
      socket.setSoTimeout(20_000);
      java.io.OutputStream out = socket.getOutputStream();
      out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
          + bytes.length + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      out.write(bytes);
      out.flush();
      java.io.InputStream in = socket.getInputStream();
      java.io.ByteArrayOutputStream received = new java.io.ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      while (count(received.toString(java.nio.charset.StandardCharsets.UTF_8), "data: {") < 3) {
        int n = in.read(buffer);
        assertTrue(n > 0, "the stream ended before 3 events: " + received);
        received.write(buffer, 0, n);
      }
      dying.close(); // as the SIGTERM hook of SimMain does
      for (int n; (n = readOrReset(in, buffer)) > 0; ) {
        received.write(buffer, 0, n);
      }
      String wire = received.toString(java.nio.charset.StandardCharsets.UTF_8);
      assertTrue(wire.startsWith("HTTP/1.1 200"), wire);
      assertTrue(wire.contains("Transfer-encoding: chunked") || wire.toLowerCase(java.util.Locale.ROOT)
          .contains("transfer-encoding: chunked"), wire);
      assertTrue(!wire.contains("[DONE]"), "a cut stream claimed completion: " + wire);
      assertTrue(!wire.contains("\"usage\""), "a cut stream sent usage: " + wire);
      assertTrue(!wire.endsWith("0\r\n\r\n"), "the chunked body ended normally: " + wire);
      assertTrue(count(wire, "data: {") < 2000, wire);
    } finally {
      dying.close();
    }
  }

  private static int readOrReset(java.io.InputStream in, byte[] buffer) throws IOException {
    try {
      return in.read(buffer);
    } catch (java.net.SocketException reset) {
      return -1; // a reset is an abort too
    }
  }

  private static int count(String s, String part) {
    int n = 0;
    for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + part.length())) {
      n++;
    }
    return n;
  }
}
