package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.WorkerId;
import io.kvroute.openai.internal.Json;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.testkit.Await;
import io.kvroute.testkit.SseEvents;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The README's gateway path: two simulated vLLM workers publishing KV events over ZeroMQ, the gateway started from
 * its command line in front of them, and an OpenAI-style client speaking HTTP to it, streamed and not.
 */
class GatewayEndToEndTest {
  private static final String MODEL = "sim-model";
  private final List<SimServer> sims = new ArrayList<>();
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private Gateway gateway;

  @AfterEach
  void stop() {
    if (gateway != null) {
      gateway.close();
    }
    sims.forEach(SimServer::close);
  }

  private Gateway startBehindTwoSims() throws Exception {
    List<String> args = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
          .speedup(50).build();
      sims.add(sim);
      args.add("--worker");
      args.add("sim-" + i + "=" + sim.baseUri() + ",events=" + sim.kvEventsEndpoint() + ",replay="
          + sim.kvEventsReplayEndpoint());
    }
    args.addAll(List.of("--policy", "kvAware", "--port", "0", "--metrics-port", "0"));
    gateway = Gateway.start(Gateway.parse(args.toArray(new String[0])));
    for (SimServer sim : sims) {
      assertTrue(sim.kvEventPublisher().awaitSubscribers(1, Duration.ofSeconds(20)));
    }
    return gateway;
  }

  private URI base() {
    return URI.create("http://127.0.0.1:" + gateway.port());
  }

  private HttpResponse<String> post(String path, String json) throws Exception {
    return client.send(HttpRequest.newBuilder(base().resolve(path)).header("Content-Type", "application/json")
        .header("Authorization", "Bearer sk-anything").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String chat(String content, int maxTokens, boolean stream) {
    return Json.write(Map.of("model", MODEL, "max_tokens", maxTokens, "stream", stream,
        "stream_options", Map.of("include_usage", true),
        "messages", List.of(Map.of("role", "user", "content", content))));
  }

  private static String words(String tag, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "" : " ").append(tag).append(i);
    }
    return sb.toString();
  }

  /** What an OpenAI client assembles from a streamed chat completion. */
  record Streamed(String worker, String content, int deltas, long cachedTokens) {}

  /** Reads a streamed chat completion as OpenAI's SDKs do: {@code data:} events until {@code [DONE]}. */
  private Streamed stream(String content, int maxTokens) throws Exception {
    HttpResponse<java.io.InputStream> response = client.send(HttpRequest.newBuilder(base().resolve(
            "/v1/chat/completions")).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(chat(content, maxTokens, true))).build(),
        HttpResponse.BodyHandlers.ofInputStream());
    assertEquals(200, response.statusCode());
    assertTrue(response.headers().firstValue("Content-Type").orElseThrow().startsWith("text/event-stream"));
    StringBuilder text = new StringBuilder();
    int deltas = 0;
    long cached = -1;
    boolean done;
    try (SseEvents events = new SseEvents(response.body())) {
      for (String data = events.next(); data != null; data = events.next()) {
        Map<?, ?> chunk = (Map<?, ?>) Json.parse(data);
        if (chunk.get("error") != null) {
          fail("error event: " + data);
        }
        assertEquals("chat.completion.chunk", chunk.get("object"));
        for (Object c : (List<?>) chunk.get("choices")) {
          Object piece = ((Map<?, ?>) ((Map<?, ?>) c).get("delta")).get("content");
          if (piece instanceof String s && !s.isEmpty()) {
            text.append(s);
            deltas++;
          }
        }
        if (chunk.get("usage") instanceof Map<?, ?> usage) {
          cached = (Long) ((Map<?, ?>) usage.get("prompt_tokens_details")).get("cached_tokens");
        }
      }
      done = events.done();
    }
    assertTrue(done, "the stream ended with [DONE]");
    return new Streamed(response.headers().firstValue("X-Kvroute-Worker").orElseThrow(), text.toString(), deltas,
        cached);
  }

  @Test
  void streamedAndPlainCompletionsAreRoutedToTheWorkerHoldingThePrefix() throws Exception {
    startBehindTwoSims();
    Map<String, Integer> routed = new HashMap<>();

    // Not streamed: one JSON answer, as OpenAI's.
    HttpResponse<String> plain = post("/v1/chat/completions", chat("hello there", 4, false));
    assertEquals(200, plain.statusCode(), plain.body());
    Map<?, ?> answer = (Map<?, ?>) Json.parse(plain.body());
    assertEquals("chat.completion", answer.get("object"));
    String said = (String) ((Map<?, ?>) ((Map<?, ?>) ((List<?>) answer.get("choices")).get(0)).get("message"))
        .get("content");
    assertEquals(4, said.trim().split(" ").length, said);
    routed.merge(plain.headers().firstValue("X-Kvroute-Worker").orElseThrow(), 1, Integer::sum);

    // Streamed, with a long prompt: the worker's KV events tell the router what it now holds.
    String prefix = words("shared", 400);
    Streamed first = stream(prefix + " first question", 6);
    assertEquals(6, first.deltas());
    assertEquals(6, first.content().trim().split(" ").length, first.content());
    routed.merge(first.worker(), 1, Integer::sum);
    WorkerId holder = WorkerId.of(first.worker());
    Await.until(() -> gateway.router().indexer().entriesOf(holder) >= 400 / 16,
        () -> "the prefix's blocks in the index");

    // The same prefix again goes to that worker, whose engine reports the prefix as cached.
    for (int i = 0; i < 3; i++) {
      Streamed again = stream(prefix + " question " + i, 3);
      assertEquals(first.worker(), again.worker());
      assertTrue(again.cachedTokens() >= 400, "cached " + again.cachedTokens());
      routed.merge(again.worker(), 1, Integer::sum);
    }
    // A different prompt under a busy holder would go elsewhere; here both are idle, so only the cache decides.
    assertNotEquals(0, gateway.router().indexer().entriesOf(holder));

    // The gateway's /metrics count exactly what was routed, per worker, and time every first token.
    String metrics = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gateway.metricsPort()
        + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    int total = 0;
    for (Map.Entry<String, Integer> e : routed.entrySet()) {
      assertEquals(e.getValue(), metricValue(metrics, "kvroute_routing_decisions_total", e.getKey()), 0.0,
          e.getKey() + " in\n" + metrics);
      total += e.getValue();
    }
    double ttftCount = 0;
    for (String w : List.of("sim-0", "sim-1")) {
      ttftCount += metricValue(metrics, "kvroute_request_time_to_first_token_seconds_count", w);
    }
    assertEquals(total, ttftCount, 0.0);
    double relayed = 0;
    for (String w : List.of("sim-0", "sim-1")) {
      relayed += metricValue(metrics, "kvroute_forward_responses_total", w);
    }
    assertEquals(total, relayed, 0.0);
    assertTrue(metrics.contains("outcome=\"completed\""), "relay outcomes");
    assertTrue(metrics.contains("kvroute_events_batches_total{"), "event-source meters");
    assertTrue(metrics.contains("kvroute_index_entries "), "index meters");
  }

  private static double metricValue(String text, String name, String worker) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{[^}]*worker=\"" + Pattern.quote(worker)
        + "\"[^}]*} ([0-9.eE+-]+)$").matcher(text);
    double sum = 0;
    while (m.find()) {
      sum += Double.parseDouble(m.group(1));
    }
    return sum;
  }

  @Test
  void badRequestsGetOpenAiStyleErrors() throws Exception {
    startBehindTwoSims();
    HttpResponse<String> notJson = post("/v1/completions", "{\"prompt\": ");
    assertEquals(400, notJson.statusCode());
    assertEquals("invalid_request_error", error(notJson).get("type"));
    HttpResponse<String> noPrompt = post("/v1/completions", "{\"model\":\"" + MODEL + "\"}");
    assertEquals(400, noPrompt.statusCode());
    assertEquals("prompt", error(noPrompt).get("param"));
    HttpResponse<String> unknownPath = post("/v1/embeddings", "{}");
    assertEquals(404, unknownPath.statusCode());
    HttpResponse<String> otherModel = post("/v1/completions", "{\"model\":\"m2\",\"prompt\":\"hi\"}");
    assertEquals(404, otherModel.statusCode()); // the worker's own answer: it serves another model
    assertEquals(0, gateway.router().activeRequests(WorkerId.of("sim-0"))
        + gateway.router().activeRequests(WorkerId.of("sim-1")));
  }

  private static Map<?, ?> error(HttpResponse<String> response) {
    return (Map<?, ?>) ((Map<?, ?>) Json.parse(response.body())).get("error");
  }

  /**
   * A start that fails after the event subscriber and the scraper started (the tokenizer directory has no {@code
   * tokenizer.json}) leaves nothing behind: both ports can be bound again and neither background thread runs, so a
   * caller that retries leaks nothing.
   */
  @Test
  void aFailedStartReleasesItsPortsAndStopsItsThreads(@org.junit.jupiter.api.io.TempDir Path noTokenizer)
      throws Exception {
    SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .speedup(50).build();
    sims.add(sim);
    int port = freePort();
    int metricsPort = freePort();
    long subscribersBefore = threadsNamed("kvroute-zmq-subscriber");
    long scrapersBefore = threadsNamed("kvroute-metrics-scraper");
    java.io.IOException failure = assertThrows(java.io.IOException.class, () -> Gateway.start(Gateway.parse(
        new String[] {"--worker", "only=" + sim.baseUri() + ",events=" + sim.kvEventsEndpoint(), "--tokenizer",
            noTokenizer.toString(), "--port", Integer.toString(port), "--metrics-port",
            Integer.toString(metricsPort)})));
    assertTrue(failure.getMessage().contains("tokenizer.json"), failure.getMessage());
    for (int p : new int[] {port, metricsPort}) {
      try (java.net.ServerSocket again = new java.net.ServerSocket()) {
        again.bind(new java.net.InetSocketAddress("127.0.0.1", p)); // throws if the failed start still holds it
      }
    }
    Await.until(() -> threadsNamed("kvroute-zmq-subscriber") <= subscribersBefore
        && threadsNamed("kvroute-metrics-scraper") <= scrapersBefore, () -> "the failed start's threads ended");
  }

  private static long threadsNamed(String name) {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && t.getName().equals(name)).count();
  }

  @Test
  void withTokenIdsOnlyTheGatewayRoutesWithoutTokenizing() throws Exception {
    SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .kvEvents(false).speedup(50).build();
    sims.add(sim);
    gateway = Gateway.start(Gateway.parse(new String[] {"--worker", "only=" + sim.baseUri(), "--tokenizer", "ids",
        "--port", "0", "--scrape-interval-ms", "0"}));
    HttpResponse<String> ids = post("/v1/completions", "{\"prompt\":[5,6,7,8],\"max_tokens\":2}");
    assertEquals(200, ids.statusCode(), ids.body());
    assertEquals("only", ids.headers().firstValue("X-Kvroute-Worker").orElseThrow());
    HttpResponse<String> text = post("/v1/completions", "{\"prompt\":\"words\",\"max_tokens\":2}");
    assertEquals(400, text.statusCode());
    assertEquals("prompt", error(text).get("param"));
  }

  /**
   * Request bodies are buffered within --max-buffered-body-mb over all requests (each byte counted twice: the read
   * chunks and the final array): a body whose bytes would exceed it is refused with a retryable 503, and what a
   * request held is returned when it ends, whether it was served or refused.
   */
  @Test
  void bodiesBeyondTheBufferBudgetAreRefusedWithARetryable503AndTheBudgetIsReturned() throws Exception {
    SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .kvEvents(false).speedup(50).build();
    sims.add(sim);
    gateway = Gateway.start(Gateway.parse(new String[] {"--worker", "only=" + sim.baseUri(), "--tokenizer", "ids",
        "--port", "0", "--scrape-interval-ms", "0", "--max-buffered-body-mb", "1"}));
    String request = "{\"prompt\":[5,6,7,8],\"max_tokens\":2}";
    String fits = request + " ".repeat(300 << 10); // 2 x 300 KiB of the 1 MiB budget
    String tooLarge = request + " ".repeat(600 << 10); // 2 x 600 KiB > 1 MiB
    HttpResponse<String> refused = post("/v1/completions", tooLarge);
    assertEquals(503, refused.statusCode(), refused.body());
    assertEquals("1", refused.headers().firstValue("Retry-After").orElseThrow());
    assertEquals("service_unavailable", error(refused).get("type"));
    awaitBudgetReturned(); // the refused request read its body to the end and returns what it held
    for (int i = 0; i < 3; i++) { // had any request kept its bytes, the second or third would be refused
      HttpResponse<String> served = post("/v1/completions", fits);
      assertEquals(200, served.statusCode(), "request " + i + ": " + served.body());
      // A request returns its bytes as its handler ends, which can be just after the client has the answer.
      awaitBudgetReturned();
    }
    assertEquals(503, post("/v1/completions", tooLarge).statusCode());
    awaitBudgetReturned();
    assertEquals(200, post("/v1/completions", request).statusCode());
    awaitBudgetReturned();
  }

  private void awaitBudgetReturned() throws InterruptedException {
    Await.until(() -> gateway.bufferedBodyBytes() == 0,
        () -> "every request's buffered bytes returned, " + gateway.bufferedBodyBytes() + " still held");
  }

  /**
   * Runs the README's gateway section: its SimMain commands as processes, its Gateway command in this JVM, its curl
   * requests with this client; every port it names is remapped to a free one.
   */
  @Test
  void theReadmeGatewaySectionServesAStreamedAnswer() throws Exception {
    List<String> commands = readmeGatewayCommands();
    Map<String, String> ports = new HashMap<>();
    Matcher portMatcher = Pattern.compile("(?<=[: ])(\\d{4,5})\\b").matcher(String.join("\n", commands));
    while (portMatcher.find()) {
      ports.computeIfAbsent(portMatcher.group(1), p -> Integer.toString(freePort()));
    }
    String body = null;
    int waits = 0;
    String completionsUrl = null;
    String metricsUrl = null;
    for (String command : commands) {
      String c = remap(command, ports);
      if (c.startsWith("java ") && c.contains(" io.kvroute.sim.SimMain ")) {
        startSimProcess(argsAfter(c, "io.kvroute.sim.SimMain"));
      } else if (c.startsWith("java ") && c.contains(" io.kvroute.examples.Gateway ")) {
        gateway = startGateway(command, ports);
      } else if (c.startsWith("until curl ")) {
        waits++;
        awaitHealthy(c);
      } else if (c.startsWith("curl -sN ")) {
        completionsUrl = c.split(" ")[2];
        body = c.substring(c.indexOf("-d '") + 4, c.lastIndexOf('\''));
      } else if (c.startsWith("curl -s ")) {
        metricsUrl = c.split(" ")[2];
      }
    }
    assertEquals(2, processes.size(), "two simulated workers in the README");
    assertEquals(2, waits, "the README waits for the workers, then for the gateway");
    assertTrue(gateway != null && body != null && metricsUrl != null, String.join("\n", commands));
    for (Process p : processes) {
      readyLine(p); // each worker announced itself (its /health answered above)
    }
    Map<?, ?> request = (Map<?, ?>) Json.parse(body);
    HttpResponse<String> streamed = client.send(HttpRequest.newBuilder(URI.create(completionsUrl))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, streamed.statusCode(), streamed.body());
    int deltas = 0;
    boolean done = false;
    for (String line : streamed.body().split("\n")) {
      if (line.equals("data: [DONE]")) {
        done = true;
      } else if (line.startsWith("data: ")) {
        Map<?, ?> chunk = (Map<?, ?>) Json.parse(line.substring(6));
        Object delta = ((Map<?, ?>) ((Map<?, ?>) ((List<?>) chunk.get("choices")).get(0)).get("delta")).get("content");
        deltas += delta instanceof String s && !s.isEmpty() ? 1 : 0;
      }
    }
    assertTrue(done, streamed.body());
    assertEquals(((Long) request.get("max_tokens")).intValue(), deltas, streamed.body());
    String worker = streamed.headers().firstValue("X-Kvroute-Worker").orElseThrow();
    String metrics = client.send(HttpRequest.newBuilder(URI.create(metricsUrl)).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    assertEquals(1.0, metricValue(metrics, "kvroute_routing_decisions_total", worker), 0.0, metrics);
    assertEquals(1.0, metricValue(metrics, "kvroute_request_time_to_first_token_seconds_count", worker), 0.0);
  }

  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void stopProcesses() throws InterruptedException {
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      if (!p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  private void startSimProcess(List<String> args) throws java.io.IOException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), "io.kvroute.sim.SimMain"));
    command.addAll(args);
    processes.add(new ProcessBuilder(command).redirectErrorStream(true).start());
  }

  /**
   * Does what the README's {@code until curl -sf URL && curl -sf URL; do sleep 1; done} does: polls each URL until
   * it answers 2xx, here within a minute.
   */
  private void awaitHealthy(String untilCommand) throws Exception {
    Matcher urls = Pattern.compile("http://[^\\s;&]+").matcher(untilCommand);
    int found = 0;
    while (urls.find()) {
      found++;
      URI uri = URI.create(urls.group());
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(1);
      while (true) {
        int status;
        try {
          status = client.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (java.io.IOException notYet) {
          status = -1;
        }
        if (status >= 200 && status < 300) {
          break;
        }
        assertTrue(System.nanoTime() < deadline, uri + " did not become healthy within a minute");
        Thread.sleep(200);
      }
    }
    assertTrue(found > 0, untilCommand);
  }

  private static String readyLine(Process p) throws java.io.IOException {
    BufferedReader reader = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
      if (line.startsWith("READY ")) {
        return line;
      }
    }
    throw new AssertionError("the worker exited before it was ready");
  }

  private static List<String> readmeGatewayCommands() throws java.io.IOException {
    String readme = Files.readString(Path.of("../README.md"), StandardCharsets.UTF_8);
    String section = readme.substring(readme.indexOf("\n## Gateway\n"));
    String block = section.substring(section.indexOf("```bash\n") + 8, section.indexOf("\n```", section.indexOf("```bash")));
    List<String> commands = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    for (String line : block.split("\n")) {
      if (line.endsWith("\\")) {
        current.append(line, 0, line.length() - 1);
        continue;
      }
      current.append(line);
      commands.add(current.toString().replaceAll("\\s+", " ").trim());
      current.setLength(0);
    }
    return commands;
  }

  /**
   * Starts the README's gateway in this JVM with its ports remapped. A port {@link #freePort} found free can be taken
   * by another process before the gateway binds it; then the gateway's own ports ({@code --port}, {@code
   * --metrics-port}) are remapped again, in {@code ports} so that the commands after it follow.
   */
  private static Gateway startGateway(String command, Map<String, String> ports) throws java.io.IOException {
    for (int attempt = 1; ; attempt++) {
      String c = remap(command, ports);
      try {
        return Gateway.start(Gateway.parse(argsAfter(c, "io.kvroute.examples.Gateway").toArray(new String[0])));
      } catch (java.io.IOException e) {
        if (attempt == 3 || !(e instanceof java.net.BindException || e.getCause() instanceof java.net.BindException)) {
          throw e;
        }
        Matcher own = Pattern.compile("--(?:metrics-)?port (\\d+)").matcher(command);
        while (own.find()) {
          ports.put(own.group(1), Integer.toString(freePort()));
        }
      }
    }
  }

  private static String remap(String command, Map<String, String> ports) {
    String out = command;
    for (Map.Entry<String, String> e : ports.entrySet()) {
      out = out.replaceAll("(?<=[: ])" + e.getKey() + "\\b", e.getValue());
    }
    return out;
  }

  private static List<String> argsAfter(String command, String mainClass) {
    String rest = command.substring(command.indexOf(mainClass) + mainClass.length()).trim();
    if (rest.endsWith("&")) {
      rest = rest.substring(0, rest.length() - 1).trim();
    }
    List<String> args = new ArrayList<>();
    for (String arg : rest.split(" ")) {
      // the README runs from the repository root, the test from examples/
      args.add(arg.startsWith("tokenizers/") ? Path.of("..", arg).toString() : arg);
    }
    return args;
  }

  private static int freePort() {
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * A client that stops sending its body short of its Content-Length is cut off after --request-read-timeout-s,
   * in a gateway process of its own (the JDK reads the limit once per process, when its first server starts).
   * Before the limit, such a client held a request thread for good, and 1,024 of them stopped the gateway.
   */
  @Test
  void aClientThatNeverFinishesItsBodyIsCutOff() throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), "io.kvroute.examples.Gateway",
        "--worker", "w=http://127.0.0.1:" + freePort(), "--tokenizer", "ids", "--port", "0",
        "--scrape-interval-ms", "0", "--request-read-timeout-s", "1"));
    Process gatewayProcess = new ProcessBuilder(command).redirectErrorStream(true).start();
    processes.add(gatewayProcess);
    BufferedReader out = new BufferedReader(new InputStreamReader(gatewayProcess.getInputStream(),
        StandardCharsets.UTF_8));
    Matcher listening = null;
    for (String line = out.readLine(); line != null; line = out.readLine()) {
      Matcher m = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)/v1").matcher(line);
      if (m.find()) {
        listening = m;
        break;
      }
    }
    assertTrue(listening != null, "the gateway did not start");
    int port = Integer.parseInt(listening.group(1));
    try (java.net.Socket slow = new java.net.Socket("127.0.0.1", port)) {
      slow.setSoTimeout(20_000);
      slow.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Content-Length: 100\r\n\r\n{\"prompt\":").getBytes(StandardCharsets.US_ASCII));
      slow.getOutputStream().flush();
      int read;
      try {
        read = slow.getInputStream().read();
      } catch (java.net.SocketException reset) {
        read = -1;
      } catch (java.net.SocketTimeoutException stillOpen) {
        throw new AssertionError("the connection of a client that never finished its body was still open after 20 s");
      }
      assertEquals(-1, read, "the server closed the connection without an answer");
    }
    HttpResponse<String> health = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
        + "/health")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, health.statusCode(), "the gateway still serves");
  }

  @Test
  void theCommandLineIsCheckedWithClearMessages() {
    assertEquals("at least one --worker name=http://host:port is required",
        assertThrows(IllegalArgumentException.class, () -> Gateway.parse(new String[] {"--port", "1"}))
            .getMessage());
    Gateway.WorkerSpec w = Gateway.parseWorker("v0=http://10.0.0.5:8000,events=tcp://10.0.0.5:5557,"
        + "replay=tcp://10.0.0.5:5558,topic=kv-events,ranks=2,model=qwen");
    assertEquals(new Gateway.WorkerSpec("v0", URI.create("http://10.0.0.5:8000"), "tcp://10.0.0.5:5557",
        "tcp://10.0.0.5:5558", "kv-events", 2, "qwen"), w);
    assertThrows(IllegalArgumentException.class, () -> Gateway.parseWorker("v0"));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parseWorker("v0=ftp://x"));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parseWorker("v0=http://x:1,events=http://y"));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parseWorker("v0=http://x:1,ranks=0"));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parseWorker("v0=http://x:1,colour=red"));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parse(new String[] {"--worker", "a=http://x:1",
        "--policy", "nope"}));
    assertThrows(IllegalArgumentException.class, () -> Gateway.parse(new String[] {"--worker", "a=http://x:1",
        "--worker", "a=http://y:1"}));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> Gateway.parse(new String[] {"--worker",
        "a=http://x:1", "--tokenizer", "/no/such/model"})).getMessage().contains(
            "--tokenizer must be a model directory (tokenizer.json and tokenizer_config.json), worker or ids"));
    assertEquals("--tokenizer-fallback worker needs --tokenizer DIR", assertThrows(IllegalArgumentException.class,
        () -> Gateway.parse(new String[] {"--worker", "a=http://x:1", "--tokenizer-fallback", "worker"}))
        .getMessage());
    Gateway.Options local = Gateway.parse(new String[] {"--worker", "a=http://x:1", "--tokenizer",
        "../tokenizers/src/test/resources/io/kvroute/tokenizers/fixtures/qwen3", "--tokenizer-fallback", "worker"});
    assertEquals(Gateway.TokenizerMode.LOCAL, local.tokenizer());
    assertTrue(local.tokenizerFallback());
    assertEquals(Gateway.TokenizerMode.WORKER, Gateway.parse(new String[] {"--worker", "a=http://x:1",
        "--tokenizer", "remote"}).tokenizer());
  }
}
