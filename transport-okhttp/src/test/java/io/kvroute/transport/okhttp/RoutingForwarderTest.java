package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.await;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.openai.ChatMessage;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.SocketEffect;
import okio.Buffer;
import okio.BufferedSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Real HTTP on loopback: a router fed by the simulators' KV events, forwarding to them. */
class RoutingForwarderTest {
  private static final Pattern CACHED = Pattern.compile("\"cached_tokens\":(\\d+)");
  private static final SimTokenizer TOKENIZER = SimTokenizer.standard();
  private static final WorkerId[] IDS = {WorkerId.of("sim-0"), WorkerId.of("sim-1"), WorkerId.of("sim-2")};
  private static Router router;
  private static final List<SimServer> sims = new ArrayList<>();
  private static RoutingForwarder forwarder;

  @BeforeAll
  static void start() throws IOException {
    router = Router.newBuilder().policy(RouterPolicy.kvAware()).blockSize(16).build();
    for (WorkerId id : IDS) {
      sims.add(TestSupport.startSim(router, id, 20));
    }
    forwarder = RoutingForwarder.newBuilder(router)
        .tokenizer(OkHttpTokenizer.newBuilder().workers(router.workers()).build())
        .build();
  }

  @AfterAll
  static void stop() {
    sims.forEach(SimServer::close);
  }

  @AfterEach
  void everyBookingIsReleased() {
    for (Worker worker : router.workers().snapshot()) {
      assertEquals(0, router.activeRequests(worker.id()), worker.id() + " still has bookings");
      assertEquals(0, router.pendingPrefillTokens(worker.id()), worker.id() + " still has prefill booked");
    }
  }

  private static byte[] completion(String prompt, int maxTokens, boolean stream) {
    return ("{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens + ",\"stream\":"
        + stream + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] chat(String content, int maxTokens, boolean stream) {
    return ("{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}],"
        + "\"max_tokens\":" + maxTokens + ",\"stream\":" + stream + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static long cachedTokens(String body) {
    Matcher m = CACHED.matcher(body);
    assertTrue(m.find(), body);
    return Long.parseLong(m.group(1));
  }

  @Test
  void routesToTheWorkerHoldingThePrefixAndTheEngineConfirmsTheHit() throws Exception {
    String prefix = words("prefix-holder", 80); // 5 blocks
    WorkerId warm = IDS[1];
    ForwardRequest warmUp = ForwardRequest.newBuilder("/v1/completions", completion(prefix + " first", 2, false))
        .model(MODEL)
        .routeOptions(b -> b.allowedWorkers(Set.of(warm)))
        .build();
    try (ForwardedResponse response = forwarder.forward(warmUp)) {
      assertEquals(warm, response.workerId());
      assertEquals(200, response.code());
      assertEquals(0, cachedTokens(response.body().string()));
    }
    await(() -> router.indexer().entriesOf(warm) >= 5, "the warm worker's KV events to reach the router");

    int[] tokens = TOKENIZER.encode(prefix + " second");
    ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion(prefix + " second", 2, false))
        .tokens(tokens)
        .header("X-Request-Id", "abc")
        .header("Host", "client-facing.example") // as a gateway might pass its client's headers: not forwarded
        .header("Accept-Encoding", "br")
        .build();
    try (ForwardedResponse response = forwarder.forward(request)) {
      Routing routing = response.routing();
      assertEquals(warm, response.workerId());
      assertEquals(5, routing.matchedBlocks());
      assertEquals(List.of(), response.failedWorkers());
      assertSame(routing, response.response().request().tag(Routing.class));
      assertEquals("abc", response.response().request().header("X-Request-Id"));
      assertEquals(null, response.response().request().header("Host"));
      assertEquals(null, response.response().request().header("Accept-Encoding"));
      assertEquals(1, router.activeRequests(warm), "booked while the response is open");
      String body = response.body().string(); // read to the end: the handle closes itself
      assertEquals(80, cachedTokens(body), "the engine found the 5 routed blocks cached");
      assertTrue(routing.isClosed());
      assertEquals(0, router.activeRequests(warm));
    }
  }

  @Test
  void streamsAChatReleasingPrefillAtTheFirstTokenAndTheBookingAtTheEnd() throws Exception {
    byte[] body = chat(words("stream", 40), 12, true);
    try (ForwardedResponse response = forwarder.forward(ForwardRequest.newBuilder("/v1/chat/completions", body)
        .build())) {
      WorkerId id = response.workerId();
      assertEquals("text/event-stream", response.body().contentType().type() + "/"
          + response.body().contentType().subtype());
      assertFalse(response.firstTokenSeen());
      assertEquals(1, router.activeRequests(id));
      assertTrue(router.pendingPrefillTokens(id) > 0, "the prompt's uncached tokens are booked");
      // The tokens the tokenizer read from the body are the engine's: the router booked all 48 of them.
      int[] expected = TOKENIZER.encodeChat(List.of(new ChatMessage("user", words("stream", 40))));
      assertEquals(expected.length, response.routing().promptTokens());

      BufferedSource source = response.body().source();
      List<String> events = new ArrayList<>();
      String line;
      while ((line = source.readUtf8Line()) != null) {
        if (line.startsWith("data: ")) {
          events.add(line.substring(6));
          if (events.size() == 1) {
            assertTrue(events.get(0).contains("\"role\":\"assistant\""), events.get(0));
          }
          if (line.contains("\"content\":\" ") && events.stream().filter(e -> e.contains("\"content\":\" ")).count()
              == 1) {
            assertTrue(response.firstTokenSeen(), "the first content event releases the prefill");
            assertEquals(0, router.pendingPrefillTokens(id));
            assertEquals(1, router.activeRequests(id), "still booked while streaming");
          }
        }
      }
      assertEquals("[DONE]", events.get(events.size() - 1));
      assertEquals(12 + 2, events.size(), "role chunk, 12 tokens, [DONE]");
      assertTrue(response.routing().isClosed(), "the exhausted stream closed the handle");
      assertEquals(0, router.activeRequests(id));
    }
  }

  @Test
  void closingEarlyOrCancellingReleasesTheBooking() throws Exception {
    ForwardedResponse closed = forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
        completion(words("early", 20), 50, true)).build());
    assertEquals(1, router.activeRequests(closed.workerId()));
    closed.close(); // without reading
    assertTrue(closed.routing().isClosed());
    assertEquals(0, router.activeRequests(closed.workerId()));
    closed.close();

    ForwardedResponse cancelled = forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
        completion(words("cancel", 20), 500, true)).build());
    BufferedSource source = cancelled.body().source();
    assertNotNull(source.readUtf8Line());
    cancelled.cancel();
    assertTrue(cancelled.routing().isClosed());
    assertEquals(0, router.activeRequests(cancelled.workerId()));
    assertThrows(IOException.class, () -> {
      while (source.readUtf8Line() != null) {
        // a cancelled call fails its reads
      }
    });
    cancelled.close();
  }

  /** Tells the router that {@code worker} holds the first blocks of {@code tokens}, so kvAware prefers it. */
  private static void pretendCached(WorkerId worker, int[] tokens, int blocks) {
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = 1_000_000L + i;
    }
    router.eventSink().apply(worker, KvEvent.BlockStored.of(hashes, null, Arrays.copyOf(tokens, blocks * 16), 16));
  }

  @Test
  void retriesOnTheNextBestWorkerWhenConnectingFails() throws Exception {
    WorkerId dead = WorkerId.of("dead");
    router.addWorker(Worker.of(dead, TestSupport.deadEndpoint()));
    try {
      String prompt = words("dead-prefix", 64);
      int[] tokens = TOKENIZER.encode(prompt);
      pretendCached(dead, tokens, 4);
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion(prompt, 3, false))
          .tokens(tokens).build();
      try (ForwardedResponse response = forwarder.forward(request)) {
        assertEquals(List.of(dead), response.failedWorkers());
        assertFalse(response.workerId().equals(dead));
        assertEquals(0, router.activeRequests(dead), "the failed attempt's booking was released");
        assertTrue(response.body().string().contains("\"choices\""));
      }

      RoutingForwarder once = RoutingForwarder.newBuilder(router).maxAttempts(1).build();
      UpstreamException single = assertThrows(UpstreamException.class, () -> once.forward(request));
      assertEquals(UpstreamException.Reason.CONNECT_FAILED, single.reason());
      assertEquals(502, single.httpStatus());
      assertEquals(dead, single.workerId());
      assertTrue(single.getCause() instanceof ConnectException, String.valueOf(single.getCause()));
      assertEquals(0, router.activeRequests(dead));

      ForwardRequest onlyDead = ForwardRequest.newBuilder("/v1/completions", completion(prompt, 3, false))
          .tokens(tokens).routeOptions(b -> b.allowedWorkers(Set.of(dead))).build();
      UpstreamException e = assertThrows(UpstreamException.class, () -> forwarder.forward(onlyDead));
      assertEquals(UpstreamException.Reason.CONNECT_FAILED, e.reason());
      assertTrue(Arrays.stream(e.getSuppressed()).anyMatch(s -> s instanceof NoWorkerAvailableException),
          "no worker was left to retry on");
      assertEquals(0, router.activeRequests(dead));
    } finally {
      router.removeWorker(dead);
    }
  }

  @Test
  void upstreamFailuresReleaseTheBooking() throws Exception {
    Router solo = Router.newBuilder().build();
    WorkerId id = WorkerId.of("mock");
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      solo.addWorker(Worker.of(id, URI.create(server.url("/base/").toString())));
      RoutingForwarder mock = RoutingForwarder.newBuilder(solo).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 1, true))
          .tokens(new int[] {1, 2, 3}).build();

      // A 500 is the caller's to relay: returned, and the booking released when it is closed.
      server.enqueue(new MockResponse.Builder().code(500).body("{\"error\":{\"message\":\"boom\"}}").build());
      try (ForwardedResponse response = mock.forward(request)) {
        assertEquals(500, response.code());
        assertEquals(1, solo.activeRequests(id));
        assertTrue(response.body().string().contains("boom"));
      }
      assertEquals(0, solo.activeRequests(id));
      assertEquals("/base/v1/completions", server.takeRequest(1, TimeUnit.SECONDS).getUrl().encodedPath());

      // The stream breaks midway: the read fails and the booking goes with it.
      Buffer partial = new Buffer();
      for (int i = 0; i < 200; i++) {
        partial.writeUtf8("data: {\"choices\":[{\"text\":\" w" + i + "\"}]}\n\n");
      }
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .chunkedBody(partial, 256).onResponseBody(new SocketEffect.CloseSocket()).build());
      ForwardedResponse broken = mock.forward(request);
      assertEquals(200, broken.code());
      assertThrows(IOException.class, () -> {
        while (broken.body().source().readUtf8Line() != null) {
          // until the connection breaks
        }
      });
      assertTrue(broken.routing().isClosed());
      assertEquals(0, solo.activeRequests(id));
      broken.close();

      // The connection is reset before any response: not retried (the request may have been processed).
      server.enqueue(new MockResponse.Builder().onResponseStart(new SocketEffect.CloseSocket()).build());
      int before = server.getRequestCount();
      UpstreamException lost = assertThrows(UpstreamException.class, () -> mock.forward(request));
      assertEquals(UpstreamException.Reason.CONNECTION_LOST, lost.reason());
      assertEquals(502, lost.httpStatus());
      assertEquals(before + 1, server.getRequestCount(), "the request was sent again");
      assertEquals(0, solo.activeRequests(id));
      assertEquals(0, solo.pendingPrefillTokens(id));
    }
  }

  @Test
  void refusesRequestsItCannotRoute() {
    int before = router.activeRequests(IDS[0]) + router.activeRequests(IDS[1]) + router.activeRequests(IDS[2]);
    RoutingForwarder noTokenizer = RoutingForwarder.newBuilder(router).build();
    assertThrows(IllegalStateException.class,
        () -> noTokenizer.forward(ForwardRequest.newBuilder("/v1/completions", completion("a", 1, false)).build()));
    assertEquals(400, assertThrows(io.kvroute.InvalidRouteRequestException.class,
        () -> forwarder.forward(ForwardRequest.newBuilder("/v1/completions", "{not json".getBytes(
            StandardCharsets.UTF_8)).build())).httpStatus());
    assertThrows(NoWorkerAvailableException.class, () -> forwarder.forward(ForwardRequest.newBuilder(
        "/v1/completions", completion("a b", 1, false)).model("another-model").build()).close());
    assertEquals(before, router.activeRequests(IDS[0]) + router.activeRequests(IDS[1]) + router.activeRequests(IDS[2]));
    assertThrows(IllegalArgumentException.class, () -> ForwardRequest.newBuilder("v1/completions", new byte[0]));
    assertThrows(IllegalArgumentException.class, () -> ForwardRequest.newBuilder("/x", new byte[0]).tokens(new int[0]));
    assertThrows(IllegalArgumentException.class, () -> RoutingForwarder.newBuilder(router).maxAttempts(0));
    assertThrows(IllegalArgumentException.class,
        () -> ForwardRequest.newBuilder("/x", new byte[0]).contentType("not a media type"));
  }

  @Test
  void tokenIdPromptsAreRoutedWithoutATokenizerCall() throws Exception {
    int[] ids = TOKENIZER.encode(words("ids", 20));
    StringBuilder json = new StringBuilder("{\"model\":\"" + MODEL + "\",\"max_tokens\":1,\"prompt\":[");
    for (int i = 0; i < ids.length; i++) {
      json.append(i == 0 ? "" : ",").append(ids[i]);
    }
    json.append("]}");
    RoutingForwarder offline = RoutingForwarder.newBuilder(router)
        .tokenizer(OkHttpTokenizer.newBuilder().endpoint(TestSupport.deadEndpoint()).build()).build();
    try (ForwardedResponse response = offline.forward(ForwardRequest.newBuilder("/v1/completions",
        json.toString().getBytes(StandardCharsets.UTF_8)).build())) {
      assertEquals(ids.length, response.routing().promptTokens());
      assertEquals(200, response.code());
      assertTrue(response.body().string().contains("\"prompt_tokens\":" + ids.length));
    }
    assertNull(ForwardRequest.newBuilder("/x", new byte[0]).build().tokens());
  }
  @Test
  void forwardsAsynchronouslyWithTheSameLifecycle() throws Exception {
    CompletableFuture<ForwardedResponse> future = forwarder.forwardAsync(ForwardRequest.newBuilder(
        "/v1/chat/completions", chat(words("async", 30), 5, true)).build()); // tokenized on a dispatcher thread
    try (ForwardedResponse response = future.get(20, TimeUnit.SECONDS)) {
      assertEquals(200, response.code());
      assertEquals(1, router.activeRequests(response.workerId()));
      String body = response.body().string();
      assertTrue(body.endsWith("data: [DONE]\n\n"), body);
      assertTrue(response.firstTokenSeen());
      assertTrue(response.routing().isClosed());
    }

    WorkerId dead = WorkerId.of("dead-async");
    router.addWorker(Worker.of(dead, TestSupport.deadEndpoint()));
    try {
      String prompt = words("dead-async-prefix", 64);
      int[] tokens = TOKENIZER.encode(prompt);
      pretendCached(dead, tokens, 4);
      try (ForwardedResponse response = forwarder.forwardAsync(ForwardRequest.newBuilder("/v1/completions",
          completion(prompt, 2, false)).tokens(tokens).build()).get(20, TimeUnit.SECONDS)) {
        assertEquals(List.of(dead), response.failedWorkers());
        assertTrue(response.body().string().contains("\"choices\""));
      }
      ExecutionException failed = assertThrows(ExecutionException.class, () -> forwarder.forwardAsync(
          ForwardRequest.newBuilder("/v1/completions", completion(prompt, 2, false)).tokens(tokens)
              .routeOptions(b -> b.allowedWorkers(Set.of(dead))).build()).get(20, TimeUnit.SECONDS));
      assertTrue(failed.getCause() instanceof UpstreamException u && u.reason() == UpstreamException.Reason
          .CONNECT_FAILED && u.getCause() instanceof ConnectException, failed.getCause().toString());
      assertEquals(0, router.activeRequests(dead));
    } finally {
      router.removeWorker(dead);
    }

    ExecutionException refused = assertThrows(ExecutionException.class, () -> RoutingForwarder.newBuilder(router)
        .build().forwardAsync(ForwardRequest.newBuilder("/v1/completions", completion("a", 1, false)).build())
        .get(20, TimeUnit.SECONDS));
    assertTrue(refused.getCause() instanceof IllegalStateException, refused.getCause().toString());
  }

  @Test
  void cancellingAnAsyncForwardCancelsTheCallAndReleasesTheBooking() throws Exception {
    Router solo = Router.newBuilder().build();
    WorkerId id = WorkerId.of("slow");
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      solo.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
      server.enqueue(new MockResponse.Builder().headersDelay(2, TimeUnit.SECONDS).body("late").build());
      CompletableFuture<ForwardedResponse> future = RoutingForwarder.newBuilder(solo).build().forwardAsync(
          ForwardRequest.newBuilder("/v1/completions", completion("x", 1, false)).tokens(new int[] {1, 2}).build());
      assertNotNull(server.takeRequest(5, TimeUnit.SECONDS), "the call reached the server");
      assertEquals(1, solo.activeRequests(id));
      assertTrue(future.cancel(true));
      await(() -> solo.activeRequests(id) == 0, "the cancelled call to release its booking");
      assertEquals(0, solo.pendingPrefillTokens(id));
    }
  }
  @Test
  void onlyFailuresBeforeTheRequestWasSentAreRetried() {
    assertTrue(RoutingForwarder.isConnectFailure(new ConnectException("Failed to connect to /127.0.0.1:1")));
    assertTrue(RoutingForwarder.isConnectFailure(new java.net.NoRouteToHostException("no route")));
    assertTrue(RoutingForwarder.isConnectFailure(new java.net.UnknownHostException("vllm-9")));
    assertTrue(RoutingForwarder.isConnectFailure(new java.net.SocketTimeoutException("Connect timed out")));
    assertFalse(RoutingForwarder.isConnectFailure(new java.net.SocketTimeoutException("Read timed out")));
    assertFalse(RoutingForwarder.isConnectFailure(new java.net.SocketTimeoutException(null)));
    assertFalse(RoutingForwarder.isConnectFailure(new IOException("unexpected end of stream")));
    assertFalse(RoutingForwarder.isConnectFailure(new java.io.InterruptedIOException("timeout")));
  }

  /**
   * Many threads forward at once and end their responses every way there is (read to the end, closed early,
   * cancelled mid-stream, an unreachable worker on the way); every booking must be released. Seeded.
   */
  @Test
  void concurrentForwardsEndingEveryWayReleaseEveryBooking() throws Exception {
    WorkerId dead = WorkerId.of("dead-concurrent");
    router.addWorker(Worker.of(dead, TestSupport.deadEndpoint()));
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
    try {
      List<java.util.concurrent.Future<String>> outcomes = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        long seed = 1000 + t;
        outcomes.add(pool.submit(() -> {
          java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
          StringBuilder log = new StringBuilder();
          for (int i = 0; i < 12; i++) {
            String prompt = words("c" + random.nextInt(4) + "-", 32 + random.nextInt(32));
            int[] tokens = TOKENIZER.encode(prompt);
            if (random.nextInt(4) == 0) {
              pretendCached(dead, tokens, 2); // lures kvAware to the dead worker: a retry follows
            }
            int ending = random.nextInt(4);
            ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion(prompt, 8, true))
                .tokens(tokens).build();
            ForwardedResponse response = ending == 3 ? forwarder.forwardAsync(request).get(20, TimeUnit.SECONDS)
                : forwarder.forward(request);
            try {
              switch (ending) {
                case 0, 3 -> response.body().string();
                case 1 -> response.body().source().readUtf8Line();
                default -> {
                  response.body().source().readUtf8Line();
                  response.cancel();
                }
              }
            } catch (IOException expectedAfterCancel) {
              // a cancelled call fails its reads
            } finally {
              response.close();
            }
            log.append(ending);
          }
          return log.toString();
        }));
      }
      for (java.util.concurrent.Future<String> outcome : outcomes) {
        assertEquals(12, outcome.get(60, TimeUnit.SECONDS).length());
      }
      assertEquals(0, router.activeRequests(dead));
    } finally {
      pool.shutdownNow();
      router.removeWorker(dead);
    }
  }
}
