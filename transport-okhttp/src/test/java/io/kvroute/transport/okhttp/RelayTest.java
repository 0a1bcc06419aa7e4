package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.await;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.openai.internal.Json;
import io.kvroute.openai.OpenAiRequest;
import io.kvroute.sim.SimServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.SocketEffect;
import okio.Buffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A JDK HttpServer gateway relaying forwarded responses, with a JDK HttpClient as the gateway's client. */
class RelayTest {
  private final Router router = Router.newBuilder().build();
  private final LinkedBlockingQueue<ResponseRelay.Result> results = new LinkedBlockingQueue<>();
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final HttpClient client = HttpClient.newHttpClient();
  private HttpServer gateway;

  /** Starts a gateway in front of the router's workers: parse once, forward, relay. */
  private URI startGateway() throws IOException {
    RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
        .tokenizer(OkHttpTokenizer.newBuilder().workers(router.workers()).build()).build();
    gateway = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    gateway.setExecutor(executor);
    gateway.createContext("/", exchange -> {
      byte[] body = exchange.getRequestBody().readAllBytes();
      OpenAiRequest parsed = OpenAiRequest.parse(body);
      ForwardRequest request = ForwardRequest.newBuilder(exchange.getRequestURI().getPath(), body)
          .parsedBody(parsed).model(parsed.model()).build();
      exchange.getResponseHeaders().set("X-Gateway", "test");
      try {
        results.add(HttpServerRelay.relay(forwarder.forward(request), exchange));
      } catch (NoWorkerAvailableException e) {
        HttpServerRelay.sendError(exchange, 503, e.getMessage(), "service_unavailable");
      }
    });
    gateway.start();
    return URI.create("http://127.0.0.1:" + gateway.getAddress().getPort());
  }

  @AfterEach
  void stop() {
    if (gateway != null) {
      gateway.stop(0);
    }
    executor.shutdownNow();
  }

  private HttpResponse<String> post(URI base, String path, String json) throws Exception {
    return client.send(HttpRequest.newBuilder(base.resolve(path)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static List<String> dataLines(String sse) {
    List<String> data = new ArrayList<>();
    for (String line : sse.split("\n")) {
      if (line.startsWith("data: ")) {
        data.add(line.substring(6));
      }
    }
    return data;
  }

  @Test
  void statusHeadersAndBodiesReachTheClientStreamedOrNot() throws Exception {
    try (SimServer sim = TestSupport.startSim(router, WorkerId.of("w"), 50.0)) {
      URI base = startGateway();
      HttpResponse<String> plain = post(base, "/v1/completions",
          "{\"model\":\"" + MODEL + "\",\"prompt\":\"" + words("p", 40) + "\",\"max_tokens\":5}");
      assertEquals(200, plain.statusCode());
      assertEquals("application/json", plain.headers().firstValue("Content-Type").orElseThrow());
      assertEquals("test", plain.headers().firstValue("X-Gateway").orElseThrow());
      Map<?, ?> json = (Map<?, ?>) Json.parse(plain.body());
      String text = (String) ((Map<?, ?>) ((List<?>) json.get("choices")).get(0)).get("text");
      assertEquals(5, text.trim().split(" ").length, text);
      assertEquals(ResponseRelay.Outcome.COMPLETED, results.take().outcome());

      HttpResponse<String> streamed = post(base, "/v1/chat/completions", "{\"model\":\"" + MODEL
          + "\",\"stream\":true,\"max_tokens\":7,\"messages\":[{\"role\":\"user\",\"content\":\"" + words("q", 30)
          + "\"}]}");
      assertEquals(200, streamed.statusCode());
      assertTrue(streamed.headers().firstValue("Content-Type").orElseThrow().startsWith("text/event-stream"));
      List<String> data = dataLines(streamed.body());
      assertEquals("[DONE]", data.get(data.size() - 1));
      assertEquals(1 + 7 + 1, data.size(), streamed.body()); // role chunk, 7 tokens, [DONE]
      ResponseRelay.Result result = results.take();
      assertEquals(ResponseRelay.Outcome.COMPLETED, result.outcome());
      assertEquals(streamed.body().getBytes(StandardCharsets.UTF_8).length, result.bytes());

      HttpResponse<String> tooLong = post(base, "/v1/completions",
          "{\"prompt\":\"" + words("p", 5) + "\",\"model\":\"" + MODEL + "\",\"max_tokens\":100000}");
      assertEquals(400, tooLong.statusCode()); // the worker's own answer, relayed
      assertTrue(((Map<?, ?>) Json.parse(tooLong.body())).containsKey("error"));
      // The relay closes the routing handle after the client has its answer: wait for it, then expect exactly 0.
      assertNotNull(results.poll(20, java.util.concurrent.TimeUnit.SECONDS), "the relay of the 400");
      await(() -> router.activeRequests(WorkerId.of("w")) <= 0, "the last booking's release");
      assertEquals(0, router.activeRequests(WorkerId.of("w")));
    }
  }

  @Test
  void anUpstreamThatDiesMidStreamEndsTheStreamWithAnErrorEvent() throws Exception {
    try (MockWebServer upstream = new MockWebServer()) {
      Buffer partial = new Buffer();
      for (int i = 0; i < 50; i++) {
        partial.writeUtf8("data: {\"choices\":[{\"text\":\" w" + i + "\"}]}\n\n");
      }
      partial.writeUtf8("data: {\"choices\":[{\"te"); // cut inside an event
      upstream.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .chunkedBody(partial, 100).onResponseBody(new SocketEffect.CloseSocket()).build());
      upstream.start();
      router.addWorker(Worker.of(WorkerId.of("dying"), URI.create(upstream.url("/").toString())));
      URI base = startGateway();
      HttpResponse<String> response = post(base, "/v1/completions", "{\"prompt\":[1,2,3],\"stream\":true}");
      assertEquals(200, response.statusCode());
      List<String> data = dataLines(response.body());
      Map<?, ?> last = (Map<?, ?>) Json.parse(data.get(data.size() - 1));
      Map<?, ?> error = (Map<?, ?>) last.get("error");
      assertEquals(502L, error.get("code"));
      assertEquals("upstream_error", error.get("type"));
      for (String event : data.subList(0, data.size() - 1)) {
        Json.parse(event); // every event before the error is complete JSON: the cut one was dropped
      }
      assertFalse(response.body().contains("\"te\n"));
      ResponseRelay.Result result = results.take();
      assertEquals(ResponseRelay.Outcome.UPSTREAM_FAILED, result.outcome());
      assertEquals(0, router.activeRequests(WorkerId.of("dying")));
    }
  }

  @Test
  void aPlainBodyCutShortBecomesA502() throws Exception {
    try (MockWebServer upstream = new MockWebServer()) {
      Buffer partial = new Buffer().writeUtf8("{\"choices\":[{\"text\":\"" + "x".repeat(5000));
      upstream.enqueue(new MockResponse.Builder().setHeader("Content-Type", "application/json")
          .chunkedBody(partial, 500).onResponseBody(new SocketEffect.CloseSocket()).build());
      upstream.start();
      router.addWorker(Worker.of(WorkerId.of("cut"), URI.create(upstream.url("/").toString())));
      URI base = startGateway();
      HttpResponse<String> response = post(base, "/v1/completions", "{\"prompt\":[1,2,3]}");
      assertEquals(502, response.statusCode());
      assertEquals("upstream_error", ((Map<?, ?>) ((Map<?, ?>) Json.parse(response.body())).get("error"))
          .get("type"));
      assertEquals(ResponseRelay.Outcome.UPSTREAM_FAILED, results.take().outcome());
    }
  }

  @Test
  void aClientThatDisconnectsCancelsTheUpstreamGeneration() throws Exception {
    WorkerId id = WorkerId.of("w");
    try (SimServer sim = TestSupport.startSim(router, id, 1.0)) {
      URI base = startGateway();
      String body = "{\"model\":\"" + MODEL + "\",\"prompt\":\"" + words("p", 20)
          + "\",\"max_tokens\":3000,\"stream\":true}";
      try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), base.getPort())) {
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
        out.flush();
        InputStream in = socket.getInputStream();
        StringBuilder seen = new StringBuilder();
        while (!seen.toString().contains("\"text\":\" ")) { // the first token event
          int b = in.read();
          assertTrue(b >= 0, "stream ended early: " + seen);
          seen.append((char) b);
        }
        assertEquals(1, router.activeRequests(id));
      } // the client goes away mid-generation
      ResponseRelay.Result result = results.poll(20, TimeUnit.SECONDS);
      assertEquals(ResponseRelay.Outcome.CLIENT_DISCONNECTED, result.outcome());
      await(() -> router.activeRequests(id) == 0, "the booking released");
      await(() -> sim.snapshot().running() == 0 && sim.snapshot().waiting() == 0, "the worker stopped generating");
    }
  }

  @Test
  void aStreamWithoutEventBoundariesIsPassedOnNotHeld() throws Exception {
    try (MockWebServer upstream = new MockWebServer()) {
      int size = (int) ResponseRelay.MAX_PENDING_EVENT_BYTES * 3;
      upstream.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .body(new Buffer().writeUtf8("data: " + "x".repeat(size))).build());
      upstream.start();
      router.addWorker(Worker.of(WorkerId.of("endless"), URI.create(upstream.url("/").toString())));
      URI base = startGateway();
      HttpResponse<String> response = post(base, "/v1/completions", "{\"prompt\":[1,2,3],\"stream\":true}");
      assertEquals(200, response.statusCode());
      assertEquals(6 + size, response.body().length());
      assertEquals(ResponseRelay.Outcome.COMPLETED, results.take().outcome());
    }
  }

  @Test
  void eventBoundariesAreFoundForEveryLineEnding() {
    assertEquals(0, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a")));
    assertEquals(0, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\n")));
    assertEquals(9, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\n\ndata: b")));
    assertEquals(18, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\n\ndata: b\n\ndata")));
    assertEquals(11, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\r\n\r\nda")));
    assertEquals(9, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\r\rd")));
    assertEquals(0, ResponseRelay.completeEventsEnd(new Buffer().writeUtf8("data: a\r\ndata: b\r\n")));
  }
}
