package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.openai.ChatMessage;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Real HTTP on loopback against the simulator's {@code /tokenize}, compared with {@link SimTokenizer}. */
class OkHttpTokenizerTest {
  private static final SimTokenizer REFERENCE = SimTokenizer.standard();
  private static Router router;
  private static SimServer sim;
  private static OkHttpTokenizer tokenizer;

  @BeforeAll
  static void start() throws IOException {
    router = Router.newBuilder().build();
    sim = TestSupport.startSim(router, WorkerId.of("sim"), 100);
    tokenizer = OkHttpTokenizer.newBuilder().endpoint(sim.baseUri()).build();
  }

  @AfterAll
  static void stop() {
    sim.close();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void promptsRoundTripTheSimulatorsTokenizer() throws IOException {
    for (String prompt : List.of("hello", "The quick brown fox jumps over the lazy dog", words("w", 3000),
        "  spaces\tand\nnewlines  ", "unicode \u00e9t\u00e9 \u4e2d\u6587 \ud83d\ude00 \"quotes\" back\\slash")) {
      assertArrayEquals(REFERENCE.encode(prompt), tokenizer.tokenize(MODEL, prompt), prompt);
      assertArrayEquals(REFERENCE.encode(prompt), tokenizer.tokenize(null, prompt), prompt);
    }
    assertEquals(3000, tokenizer.tokenize(MODEL, words("w", 3000)).length);
  }

  @Test
  void chatsRoundTripTheSimulatorsTemplate() throws IOException {
    List<ChatMessage> messages = List.of(ChatMessage.system("You are brief."), ChatMessage.user("What is 2 + 2?"),
        ChatMessage.assistant("4"), new ChatMessage("user", "And \"3 + 3\"?"));
    int[] expected = REFERENCE.encodeChat(messages);
    int[] tokens = tokenizer.tokenizeChat(MODEL, messages);
    assertArrayEquals(expected, tokens);
    assertEquals(SimTokenizer.IM_START, tokens[0]);
  }

  @Test
  void requestBodiesAreTokenizedAsTheServerSeesThem() throws IOException {
    String chat = "{\"model\":\"" + MODEL + "\",\"stream\":true,\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
        + "\"content\":[{\"type\":\"text\",\"text\":\"part one\"},{\"type\":\"text\",\"text\":\"part two\"}]}],"
        + "\"add_generation_prompt\":true}";
    int[] expected = REFERENCE.encodeChat(List.of(new ChatMessage("user", "part one part two")));
    assertArrayEquals(expected, tokenizer.tokenizeRequest(utf8(chat)));

    String completion = "{\"model\":\"" + MODEL + "\",\"prompt\":[\"alpha beta gamma\"],\"max_tokens\":5}";
    assertArrayEquals(REFERENCE.encode("alpha beta gamma"), tokenizer.tokenizeRequest(utf8(completion)));
    assertArrayEquals(REFERENCE.encode("x y"), tokenizer.tokenizeRequest(utf8("{\"prompt\":\"x y\"}")));
  }

  /** A JSON null counts as absent (OpenAiRequest's rule, and OpenAI's and vLLM's servers'). */
  @Test
  void nullMembersCountAsAbsent() throws IOException {
    String chat = "{\"model\":\"" + MODEL + "\",\"prompt\":null,\"tools\":null,\"messages\":[{\"role\":\"user\","
        + "\"content\":\"hello there\"}]}";
    assertArrayEquals(REFERENCE.encodeChat(List.of(ChatMessage.user("hello there"))),
        tokenizer.tokenizeRequest(utf8(chat)));
    String completion = "{\"model\":null,\"messages\":null,\"prompt\":\"x y\",\"add_special_tokens\":null}";
    assertArrayEquals(REFERENCE.encode("x y"), tokenizer.tokenizeRequest(utf8(completion)));
    assertThrows(IllegalArgumentException.class, () -> tokenizer.tokenizeRequest(utf8("{\"prompt\":null}")));
  }

  @Test
  void tokenIdPromptsNeedNoCall() throws IOException {
    OkHttpTokenizer unreachable = OkHttpTokenizer.newBuilder().endpoint(TestSupport.deadEndpoint()).build();
    assertArrayEquals(new int[] {5, 6, 7}, unreachable.tokenizeRequest(utf8("{\"prompt\":[5,6,7],\"model\":\"m\"}")));
    assertArrayEquals(new int[] {8}, unreachable.tokenizeRequest(utf8("{\"prompt\":[[8]]}")));
    assertThrows(ConnectException.class, () -> unreachable.tokenize(null, "text"));
    assertThrows(IllegalArgumentException.class, () -> unreachable.tokenizeRequest(utf8("{\"prompt\":[1],")));
  }

  @Test
  void refusalsCarryTheServersStatusAndMessage() {
    TokenizeException unknown = assertThrows(TokenizeException.class, () -> tokenizer.tokenize("no-such-model", "x"));
    assertEquals(404, unknown.statusCode());
    assertTrue(unknown.getMessage().contains("does not exist"), unknown.getMessage());
    TokenizeException empty = assertThrows(TokenizeException.class,
        () -> tokenizer.tokenizeRequest(
            utf8("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}")));
    assertEquals(400, empty.statusCode());
  }

  @Test
  void workerModeSkipsWorkersThatCannotBeReached() throws IOException {
    Router two = Router.newBuilder().build();
    two.addWorker(Worker.of(WorkerId.of("dead"), TestSupport.deadEndpoint()));
    two.addWorker(Worker.of(WorkerId.of("live"), sim.baseUri()));
    two.addWorker(Worker.of(WorkerId.of("in-process")));
    two.addWorker(Worker.newBuilder(WorkerId.of("other-model")).endpoint(Worker.HTTP, TestSupport.deadEndpoint())
        .model("other").build());
    OkHttpTokenizer onWorkers = OkHttpTokenizer.newBuilder().workers(two.workers()).build();
    for (int i = 0; i < 4; i++) { // every rotation start, including the dead worker first
      assertArrayEquals(REFERENCE.encode("a b c"), onWorkers.tokenize(MODEL, "a b c"));
    }
    OkHttpTokenizer none = OkHttpTokenizer.newBuilder().workers(Router.newBuilder().build().workers()).build();
    io.kvroute.NoWorkerAvailableException e = assertThrows(io.kvroute.NoWorkerAvailableException.class,
        () -> none.tokenize(null, "x"));
    assertEquals(io.kvroute.NoWorkerAvailableException.Reason.NO_WORKERS, e.reason());
    assertEquals(503, e.httpStatus());
    OkHttpTokenizer inProcessOnly = OkHttpTokenizer.newBuilder().workers(one(Worker.of(WorkerId.of("p")))).build();
    IOException noEndpoint = assertThrows(IOException.class, () -> inProcessOnly.tokenize(null, "x"));
    assertTrue(noEndpoint.getMessage().contains("no registered worker"), noEndpoint.getMessage());
  }

  private static io.kvroute.WorkerRegistry one(Worker worker) {
    Router router = Router.newBuilder().build();
    router.addWorker(worker);
    return router.workers();
  }

  @Test
  void malformedResponsesAreRefused() throws IOException, InterruptedException {
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      URI base = URI.create(server.url("/").toString());
      OkHttpTokenizer mock = OkHttpTokenizer.newBuilder().endpoint(base).maxResponseBytes(1024).build();
      server.enqueue(new MockResponse.Builder().body("<html>not json</html>").build());
      server.enqueue(new MockResponse.Builder().body("{\"tokens\":[1,2],\"count\":3}").build());
      server.enqueue(new MockResponse.Builder().body("{\"tokens\":[" + "1,".repeat(1000) + "1]}").build());
      server.enqueue(new MockResponse.Builder().code(500).body("Internal Server Error").build());
      server.enqueue(new MockResponse.Builder().body("{\"tokens\":[1,2],\"count\":2}").build());
      assertEquals(-1, assertThrows(TokenizeException.class, () -> mock.tokenize(null, "a")).statusCode());
      assertTrue(assertThrows(TokenizeException.class, () -> mock.tokenize(null, "a")).getMessage().contains("count"));
      assertTrue(assertThrows(TokenizeException.class, () -> mock.tokenize(null, "a")).getMessage().contains("1024"));
      TokenizeException status = assertThrows(TokenizeException.class, () -> mock.tokenize(null, "a"));
      assertEquals(500, status.statusCode());
      assertTrue(status.getMessage().contains("Internal Server Error"), status.getMessage());
      assertArrayEquals(new int[] {1, 2}, mock.tokenizeChat("m", List.of(ChatMessage.user("a\u00e9\"\n"))));
      for (int i = 0; i < 4; i++) {
        server.takeRequest(1, TimeUnit.SECONDS);
      }
      mockwebserver3.RecordedRequest chat = server.takeRequest(1, TimeUnit.SECONDS);
      assertEquals("/tokenize", chat.getUrl().encodedPath());
      assertEquals("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\u00e9\\\"\\n\"}]}",
          chat.getBody().utf8());
    }
  }

  /**
   * An error answer is read only up to its 64 KiB bound: a worker that answers 500 and then streams a chunked body
   * without end (a raw loopback server writing 8 KiB chunks until the client hangs up) gets the gateway its typed
   * refusal with the status once the bound is reached, not a read of the whole body that waits out the call's
   * timeout while holding everything in memory.
   */
  @Test
  void anErrorBodyIsReadOnlyUpToItsBound() throws Exception {
    try (java.net.ServerSocket server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      Thread engine = new Thread(() -> {
        try (java.net.Socket socket = server.accept()) {
          // The small request sits in the socket buffer unread: the answer does not depend on it.
          java.io.OutputStream out = socket.getOutputStream();
          out.write(("HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
              + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
          byte[] chunk = "Internal Server Error ".repeat(372).getBytes(StandardCharsets.ISO_8859_1); // ~8 KiB
          byte[] size = (Integer.toHexString(chunk.length) + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
          while (true) { // never the last chunk; ends when the client closes the connection
            out.write(size);
            out.write(chunk);
            out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            Thread.sleep(10); // a trickle, so that an unbounded read cannot fill the heap before its timeout
          }
        } catch (IOException | InterruptedException e) {
          // the client hung up
        }
      }, "endless-error-body");
      engine.setDaemon(true);
      engine.start();
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder()
          .endpoint(URI.create("http://127.0.0.1:" + server.getLocalPort() + "/"))
          .timeout(Duration.ofSeconds(5)).build();
      TokenizeException e = assertThrows(TokenizeException.class, () -> tokenizer.tokenize(null, "a"));
      assertEquals(500, e.statusCode(), e.getMessage());
      assertTrue(e.getMessage().contains("Internal Server Error"), e.getMessage());
      engine.join(10_000);
      assertFalse(engine.isAlive(), "the client closed the endless body");
    }
  }
}
