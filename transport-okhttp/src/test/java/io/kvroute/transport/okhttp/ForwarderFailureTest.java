package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.HealthState;
import io.kvroute.InvalidRouteRequestException;
import io.kvroute.NoWorkerAvailableException;
import io.kvroute.Router;
import io.kvroute.RouterListener;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.SocketEffect;
import okio.Buffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Per-attempt budgets, no duplicate once a request may have reached an engine, typed failures, and every outcome
 * fed to the router's health model. Real HTTP on loopback: simulated vLLM workers, a real socket that never answers
 * (a hung worker), and MockWebServer only for a 500 and a connection cut at a chosen moment.
 */
class ForwarderFailureTest {
  private static final SimTokenizer TOKENIZER = SimTokenizer.standard();
  private static final Duration GUARD = Duration.ofSeconds(30); // a real hang, not a slow run, breaks this

  private static byte[] completion(String prompt, int maxTokens, boolean stream) {
    return ("{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens + ",\"stream\":"
        + stream + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** Records every health transition. */
  private static final class Transitions implements RouterListener {
    final List<String> seen = new CopyOnWriteArrayList<>();

    @Override
    public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
      seen.add(worker + " " + from + "->" + to + " " + reason);
    }
  }

  @Test
  void aStreamedRequestToAHungWorkerFailsWith504WithinItsFirstByteBudgetAndIsNotSentElsewhere() throws Exception {
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).blockSize(16).build();
    AtomicInteger simRequests = new AtomicInteger();
    WorkerId hungId = WorkerId.of("hung");
    try (SimServer sim = TestSupport.startSim(router, WorkerId.of("sim"), 20, simRequests);
        TestSupport.HungServer hung = new TestSupport.HungServer()) {
      router.addWorker(Worker.newBuilder(hungId).endpoint(Worker.HTTP, hung.uri()).model(MODEL).build());
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
          .firstByteTimeout(Duration.ofMillis(300))
          .idleTimeout(Duration.ofSeconds(20))
          .build();
      String prompt = words("hung-prefix", 64);
      int[] tokens = TOKENIZER.encode(prompt);
      TestSupport.pretendCached(router, hungId, tokens, 4); // the hung worker holds the prefix: it is chosen
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion(prompt, 4, true))
          .tokens(tokens).build();

      UpstreamException e = assertTimeoutPreemptively(GUARD,
          () -> assertThrows(UpstreamException.class, () -> forwarder.forward(request).close()));
      assertEquals(UpstreamException.Reason.FIRST_BYTE_TIMEOUT, e.reason());
      assertEquals(504, e.httpStatus());
      assertEquals(hungId, e.workerId());
      assertEquals(0, simRequests.get(), "a request that may have reached an engine was sent elsewhere");
      assertEquals(1, hung.connections.get());
      assertEquals(HealthState.SUSPECT, router.health(hungId));
      assertEquals(0, router.activeRequests(hungId));

      // Two more timeouts eject it: its cached prefix no longer attracts the request, which goes to the sim.
      for (int i = 0; i < 2; i++) {
        assertThrows(UpstreamException.class, () -> forwarder.forward(request).close());
      }
      assertEquals(HealthState.EJECTED, router.health(hungId));
      assertEquals(0, simRequests.get());
      try (ForwardedResponse response = assertTimeoutPreemptively(GUARD, () -> forwarder.forward(request))) {
        assertEquals(WorkerId.of("sim"), response.workerId());
        assertTrue(response.body().string().endsWith("data: [DONE]\n\n"));
      }
      assertEquals(1, simRequests.get());
      assertEquals(3, hung.connections.get());
    }
  }

  @Test
  void anAsyncStreamedRequestToAHungWorkerFailsWith504Too() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId hungId = WorkerId.of("hung");
    try (TestSupport.HungServer hung = new TestSupport.HungServer()) {
      router.addWorker(Worker.of(hungId, hung.uri()));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).firstByteTimeout(Duration.ofMillis(300))
          .build();
      java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
          () -> forwarder.forwardAsync(ForwardRequest.newBuilder("/v1/completions", completion("a", 4, true))
              .tokens(new int[] {1, 2, 3}).build()).get(30, java.util.concurrent.TimeUnit.SECONDS));
      assertTrue(e.getCause() instanceof UpstreamException u
          && u.reason() == UpstreamException.Reason.FIRST_BYTE_TIMEOUT && hungId.equals(u.workerId()),
          String.valueOf(e.getCause()));
      assertEquals(HealthState.SUSPECT, router.health(hungId));
      assertEquals(0, router.activeRequests(hungId));
    }
  }

  @Test
  void aNonStreamedRequestToAHungWorkerFailsWith504AfterItsResponseBudget() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId hungId = WorkerId.of("hung");
    try (TestSupport.HungServer hung = new TestSupport.HungServer()) {
      router.addWorker(Worker.of(hungId, hung.uri()));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
          .responseTimeout(Duration.ofMillis(300))
          .build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("a b c", 4, false))
          .tokens(new int[] {1, 2, 3}).build();
      UpstreamException e = assertTimeoutPreemptively(GUARD,
          () -> assertThrows(UpstreamException.class, () -> forwarder.forward(request).close()));
      assertEquals(UpstreamException.Reason.RESPONSE_TIMEOUT, e.reason());
      assertEquals(504, e.httpStatus());
      assertEquals(HealthState.SUSPECT, router.health(hungId));
      assertEquals(1, hung.connections.get());
    }
  }

  @Test
  void aConnectionThatBreaksAfterTheRequestWasSentIsNeverSentAgain() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("mock");
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 1, false))
          .tokens(new int[] {1, 2, 3}).build();
      // A pooled connection that served a request, then breaks once the next request was read: OkHttp's own
      // retry would resend the request on a new connection, to an engine that may be processing it.
      server.enqueue(new MockResponse.Builder().body("{}").build());
      server.enqueue(new MockResponse.Builder().onResponseStart(new SocketEffect.CloseSocket()).build());
      server.enqueue(new MockResponse.Builder().body("{\"resent\":true}").build());
      try (ForwardedResponse first = forwarder.forward(request)) {
        assertEquals("{}", first.body().string());
      }
      UpstreamException e = assertThrows(UpstreamException.class, () -> forwarder.forward(request).close());
      assertEquals(UpstreamException.Reason.CONNECTION_LOST, e.reason());
      assertEquals(502, e.httpStatus());
      assertEquals(2, server.getRequestCount(), "the request was sent again");
      assertEquals(HealthState.SUSPECT, router.health(id));
    }
  }

  /**
   * vLLM answers 200 and, when generation raises, ends the stream with {@code data: {"error": {...}}} then
   * {@code data: [DONE]} (create_streaming_error_response): an engine-side failure, neither a first token nor a
   * success.
   */
  @Test
  void anErrorEventInsideA200StreamIsAServerErrorNotATokenOrASuccess() throws Exception {
    Transitions transitions = new Transitions();
    List<String> firstTokens = new CopyOnWriteArrayList<>();
    Router router = Router.newBuilder().listener(transitions).listener(new RouterListener() {
      @Override
      public void onFirstToken(io.kvroute.Routing routing, long elapsedNanos) {
        firstTokens.add(routing.workerId().name());
      }
    }).build();
    WorkerId id = WorkerId.of("mock");
    String error = "data: {\"error\": {\"message\": \"CUDA error: an illegal memory access\", "
        + "\"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\ndata: [DONE]\n\n";
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 4, true))
          .tokens(new int[] {1, 2, 3}).build();
      // Failing before any output: the error event is no first token (nor is the [DONE] after it).
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream").body(error).build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        assertEquals(200, response.code());
        assertTrue(response.body().string().contains("illegal memory access"));
      }
      assertEquals(List.of(), firstTokens, "the error event counted as a first token");
      assertEquals(HealthState.SUSPECT, router.health(id));
      assertTrue(transitions.seen.get(0).contains("SERVER_ERROR"), transitions.seen.toString());
      // Failing after some output (in chunks, so that the error event arrives in a later read): a failure too.
      Buffer body = new Buffer();
      for (int i = 0; i < 50; i++) {
        body.writeUtf8("data: {\"choices\":[{\"text\":\" w" + i + "\"}]}\n\n");
      }
      body.writeUtf8(error);
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .chunkedBody(body, 64).build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        response.body().string();
      }
      assertEquals(List.of("mock"), firstTokens); // the first token proves it alive (SUSPECT -> HEALTHY) ...
      assertEquals(HealthState.SUSPECT, router.health(id)); // ... and the error event at the end does not
      assertEquals(3, transitions.seen.size(), transitions.seen.toString());
      assertTrue(transitions.seen.get(2).contains("HEALTHY->SUSPECT"), transitions.seen.toString());
      assertTrue(transitions.seen.get(2).contains("SERVER_ERROR"), transitions.seen.toString());
    }
  }

  static LongStream seeds() {
    return LongStream.range(0, 40);
  }

  /** vLLM's streaming error event ({@code ErrorInfo}: message, type, param, code); {@code code} null leaves it out. */
  private static String errorEvent(String type, String code) {
    return "data: {\"error\": {\"message\": \"the \\\"code\\\": 400 of it\", \"type\": \"" + type
        + "\", \"param\": null" + (code == null ? "" : ", \"code\": " + code) + "}}\n\ndata: [DONE]\n\n";
  }

  /**
   * An error event inside a 200 stream, before or after output, cut into random chunks: its {@code code} decides the
   * report. A 4xx integer is the request's fault: the stream's end is a success, as an HTTP 4xx answer is; a 5xx, no
   * code or a string is the engine's: {@code SERVER_ERROR}. Each response goes to a fresh worker, so the expected
   * health is that of one report: SUSPECT after a failure, HEALTHY otherwise.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anInStreamErrorsCodeDecidesWhetherItIsAServerError(long seed) throws Exception {
    SplittableRandom random = new SplittableRandom(seed);
    Transitions transitions = new Transitions();
    List<String> firstTokens = new CopyOnWriteArrayList<>();
    Router router = Router.newBuilder().listener(transitions).listener(new RouterListener() {
      @Override
      public void onFirstToken(io.kvroute.Routing routing, long elapsedNanos) {
        firstTokens.add(routing.workerId().name());
      }
    }).build();
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 4, true))
          .tokens(new int[] {1, 2, 3}).build();
      WorkerId previous = null;
      for (int round = 0; round < 4; round++) {
        WorkerId id = WorkerId.of("w" + round);
        if (previous != null) {
          router.removeWorker(previous);
        }
        router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
        previous = id;
        int outputs = random.nextInt(3);
        int kind = random.nextInt(5);
        String event = switch (kind) {
          case 0 -> errorEvent("BadRequestError", Integer.toString(400 + random.nextInt(100)));
          case 1 -> errorEvent("InternalServerError", Integer.toString(500 + random.nextInt(100)));
          case 2 -> errorEvent("InternalServerError", null);
          case 3 -> errorEvent("BadRequestError", "\"400\"");
          default -> "data: [DONE]\n\n"; // no error at all
        };
        boolean serverError = kind == 1 || kind == 2 || kind == 3;
        Buffer body = new Buffer();
        for (int i = 0; i < outputs; i++) {
          body.writeUtf8("data: {\"choices\":[{\"text\":\" w" + i + "\"}]}\n\n");
        }
        body.writeUtf8(event);
        String shown = "round " + round + ": " + body.clone().readUtf8();
        server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
            .chunkedBody(body, 1 + random.nextInt(64)).build());
        int transitionsBefore = transitions.seen.size();
        try (ForwardedResponse response = forwarder.forward(request)) {
          assertEquals(200, response.code());
          response.body().string();
        }
        boolean token = outputs > 0 || kind == 4;
        assertEquals(token, firstTokens.contains(id.name()), shown);
        assertEquals(serverError ? HealthState.SUSPECT : HealthState.HEALTHY, router.health(id), shown);
        List<String> now = transitions.seen.subList(transitionsBefore, transitions.seen.size());
        assertEquals(serverError, now.stream().anyMatch(t -> t.contains("SERVER_ERROR")), shown + now);
      }
    }
  }

  /**
   * A client that can make vLLM answer in-stream 400s (a bad request) cannot get a healthy worker ejected: five in a
   * row, none with output, leave it HEALTHY; the same five with code 500 eject it (3 consecutive failures).
   */
  @Test
  void aWorkerAnsweringInStream4xxErrorsIsNotEjected() throws Exception {
    for (String code : new String[] {"400", "500"}) {
      Transitions transitions = new Transitions();
      Router router = Router.newBuilder().listener(transitions).build();
      WorkerId id = WorkerId.of("mock");
      try (MockWebServer server = new MockWebServer()) {
        server.start();
        router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
        RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
        ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 4, true))
            .tokens(new int[] {1, 2, 3}).build();
        int answered = 0;
        for (int i = 0; i < 5 && router.health(id) != HealthState.EJECTED; i++) {
          server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
              .body(errorEvent(code.equals("400") ? "BadRequestError" : "InternalServerError", code)).build());
          try (ForwardedResponse response = forwarder.forward(request)) {
            assertEquals(200, response.code());
            response.body().string();
          }
          answered++;
        }
        if (code.equals("400")) {
          assertEquals(5, answered);
          assertEquals(HealthState.HEALTHY, router.health(id));
          assertEquals(List.of(), transitions.seen);
        } else {
          assertEquals(3, answered, transitions.seen.toString());
          assertEquals(HealthState.EJECTED, router.health(id));
        }
      }
    }
  }

  @Test
  void aStreamSilentForTheIdleTimeoutAfterItsHeadersIsATimeoutNotACut() throws Exception {
    // Mutation audit: reporting every mid-stream IOException as STREAM_CUT went unnoticed; a stall is TIMEOUT.
    Transitions transitions = new Transitions();
    Router router = Router.newBuilder().listener(transitions).build();
    WorkerId id = WorkerId.of("stalls");
    String first = "data: {\"choices\":[{\"text\":\" a\"}]}\n\n";
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).idleTimeout(Duration.ofMillis(300)).build();
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .body(first + "data: {\"choices\":[{\"text\":\" b\"}]}\n\ndata: [DONE]\n\n")
          .bodyDelay(5, TimeUnit.SECONDS).build()); // the headers, then 5 s of silence
      try (ForwardedResponse response = forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
          completion("x", 2, true)).tokens(new int[] {1, 2, 3}).build())) {
        assertThrows(IOException.class, () -> response.body().string());
      }
      assertEquals(HealthState.SUSPECT, router.health(id));
      String last = transitions.seen.get(transitions.seen.size() - 1);
      assertTrue(last.contains("TIMEOUT") && !last.contains("STREAM_CUT"), transitions.seen.toString());
      assertEquals(0, router.activeRequests(id), "the stalled stream's booking is released");
    }
  }

  @Test
  void everyAttemptOutcomeIsReportedToTheHealthModel() throws Exception {
    Transitions transitions = new Transitions();
    Router router = Router.newBuilder().listener(transitions).build();
    WorkerId id = WorkerId.of("mock");
    try (MockWebServer server = new MockWebServer()) {
      server.start();
      router.addWorker(Worker.of(id, URI.create(server.url("/").toString())));
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", completion("x", 1, true))
          .tokens(new int[] {1, 2, 3}).build();

      server.enqueue(new MockResponse.Builder().code(500).body("{\"error\":{\"message\":\"engine dead\"}}").build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        assertEquals(500, response.code()); // the engine's own answer is the gateway's to relay
      }
      assertEquals(HealthState.SUSPECT, router.health(id));
      assertTrue(transitions.seen.get(0).contains("SERVER_ERROR"), transitions.seen.toString());

      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .body("data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: [DONE]\n\n").build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        response.body().string(); // read to its end: a success
      }
      assertEquals(HealthState.HEALTHY, router.health(id));

      Buffer partial = new Buffer();
      for (int i = 0; i < 200; i++) {
        partial.writeUtf8("data: {\"choices\":[{\"text\":\" w" + i + "\"}]}\n\n");
      }
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .chunkedBody(partial, 256).onResponseBody(new SocketEffect.CloseSocket()).build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        assertThrows(IOException.class, () -> response.body().string());
      }
      assertEquals(HealthState.SUSPECT, router.health(id));
      assertTrue(transitions.seen.get(transitions.seen.size() - 1).contains("STREAM_CUT"), transitions.seen.toString());

      // A 4xx proves the worker alive; closing a healthy stream early is the client's doing, not a failure.
      server.enqueue(new MockResponse.Builder().code(400).body("{\"error\":{\"message\":\"bad\"}}").build());
      forwarder.forward(request).close();
      assertEquals(HealthState.HEALTHY, router.health(id));
      server.enqueue(new MockResponse.Builder().setHeader("Content-Type", "text/event-stream")
          .chunkedBody(partial.clone(), 256).build());
      try (ForwardedResponse response = forwarder.forward(request)) {
        response.body().source().readUtf8Line();
      }
      assertEquals(HealthState.HEALTHY, router.health(id));

      for (int i = 0; i < Router.DEFAULT_EJECT_AFTER_FAILURES; i++) {
        server.enqueue(new MockResponse.Builder().code(503).build());
        forwarder.forward(request).close();
      }
      assertEquals(HealthState.EJECTED, router.health(id));
      NoWorkerAvailableException none = assertThrows(NoWorkerAvailableException.class,
          () -> forwarder.forward(request).close());
      assertEquals(NoWorkerAvailableException.Reason.ALL_UNHEALTHY, none.reason());
      assertEquals(503, none.httpStatus());
    }

    WorkerId dead = WorkerId.of("dead");
    router.addWorker(Worker.of(dead, TestSupport.deadEndpoint()));
    UpstreamException e = assertThrows(UpstreamException.class, () -> RoutingForwarder.newBuilder(router).build()
        .forward(ForwardRequest.newBuilder("/v1/completions", completion("x", 1, false))
            .tokens(new int[] {1, 2, 3}).routeOptions(b -> b.allowedWorkers(java.util.Set.of(dead))).build()));
    assertEquals(UpstreamException.Reason.CONNECT_FAILED, e.reason());
    assertEquals(HealthState.SUSPECT, router.health(dead));
    assertTrue(transitions.seen.get(transitions.seen.size() - 1).contains("CONNECT_FAILED"),
        transitions.seen.toString());
  }

  @Test
  void aWorkerWithoutAnEndpointIsSkippedButNotReportedUnhealthy() throws Exception {
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).blockSize(16).build();
    WorkerId inProcess = WorkerId.of("in-process");
    router.addWorker(Worker.newBuilder(inProcess).model(MODEL).build());
    try (SimServer sim = TestSupport.startSim(router, WorkerId.of("sim"), 20)) {
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
      for (int i = 0; i < Router.DEFAULT_EJECT_AFTER_FAILURES + 1; i++) {
        String prompt = words("local-prefix" + i + "w", 64);
        int[] tokens = TOKENIZER.encode(prompt);
        TestSupport.pretendCached(router, inProcess, tokens, 4); // it holds the prefix: chosen first
        try (ForwardedResponse response = forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
            completion(prompt, 2, false)).tokens(tokens).build())) {
          assertEquals(List.of(inProcess), response.failedWorkers());
          assertEquals(WorkerId.of("sim"), response.workerId());
        }
      }
      assertEquals(HealthState.HEALTHY, router.health(inProcess));
    }
  }

  @Test
  void anUnknownModelWithATextPromptIsATyped404() throws Exception {
    Router router = Router.newBuilder().build();
    try (SimServer sim = TestSupport.startSim(router, WorkerId.of("sim"), 20)) {
      for (Tokenizer tokenizer : List.of(OkHttpTokenizer.newBuilder().router(router).build(),
          OkHttpTokenizer.newBuilder().workers(router.workers()).build())) {
        RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).tokenizer(tokenizer).build();
        for (String body : List.of("{\"model\":\"no-such-model\",\"prompt\":\"hello there\"}",
            "{\"model\":\"no-such-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}")) {
          NoWorkerAvailableException e = assertThrows(NoWorkerAvailableException.class,
              () -> forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
                  body.getBytes(StandardCharsets.UTF_8)).build()).close(), body);
          assertEquals(NoWorkerAvailableException.Reason.NO_WORKER_FOR_MODEL, e.reason());
          assertEquals(404, e.httpStatus());
          assertTrue(e.getMessage().contains("no-such-model"), e.getMessage());
        }
        // A prompt the engine's tokenizer refuses, and a body without a prompt, are the client's: 400.
        InvalidRouteRequestException bad = assertThrows(InvalidRouteRequestException.class,
            () -> forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
                ("{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":7}]}").getBytes(StandardCharsets.UTF_8))
                .build()).close());
        assertEquals(400, bad.httpStatus());
        assertEquals(400, assertThrows(InvalidRouteRequestException.class,
            () -> forwarder.forward(ForwardRequest.newBuilder("/v1/completions",
                "{\"model\":\"x\"}".getBytes(StandardCharsets.UTF_8)).build()).close()).httpStatus());
      }
      assertEquals(0, router.activeRequests(WorkerId.of("sim")));
    }
  }

  @Test
  void eachTokenizerStatusMapsToTheGatewaysTypedFailure() throws Exception {
    // Mutation audit: the 4xx statuses that mean "the prompt is bad" (vLLM answers 400; a proxy in front of it may
    // answer 413 or 422) are the client's fault, 404 is an unknown model, anything else the tokenizer's failure.
    Router router = Router.newBuilder().build();
    router.addWorker(Worker.newBuilder(WorkerId.of("w")).endpoint(Worker.HTTP, TestSupport.deadEndpoint())
        .model(MODEL).build());
    int[] statuses = {400, 413, 422, 404, 500, 503};
    try (MockWebServer tokenizer = new MockWebServer()) {
      tokenizer.start();
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).tokenizer(OkHttpTokenizer.newBuilder()
          .endpoint(URI.create(tokenizer.url("/").toString())).build()).build();
      for (int status : statuses) {
        tokenizer.enqueue(new MockResponse.Builder().code(status)
            .body("{\"error\":{\"message\":\"refused " + status + "\"}}").build());
        RuntimeException e = assertThrows(RuntimeException.class, () -> forwarder.forward(ForwardRequest
            .newBuilder("/v1/completions", completion("hello", 1, false)).build()).close(), "status " + status);
        io.kvroute.RoutingException typed = assertInstanceOf(io.kvroute.RoutingException.class, e);
        int expected = status == 404 ? 404 : status < 500 ? 400 : 502;
        assertEquals(expected, typed.httpStatus(), "tokenizer status " + status + ": " + e);
        assertTrue(e.getMessage().contains("refused " + status), e.getMessage());
      }
    }
    assertEquals(0, router.activeRequests(WorkerId.of("w")), "nothing was routed");
  }

  @Test
  void aTokenizerThatCannotBeReachedIsATyped502() throws Exception {
    Router router = Router.newBuilder().build();
    router.addWorker(Worker.newBuilder(WorkerId.of("w")).endpoint(Worker.HTTP, TestSupport.deadEndpoint())
        .model(MODEL).build());
    RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
        .tokenizer(OkHttpTokenizer.newBuilder().endpoint(TestSupport.deadEndpoint()).build()).build();
    UpstreamException e = assertThrows(UpstreamException.class, () -> forwarder.forward(ForwardRequest.newBuilder(
        "/v1/completions", completion("hello", 1, false)).build()).close());
    assertEquals(UpstreamException.Reason.TOKENIZER_FAILED, e.reason());
    assertEquals(502, e.httpStatus());
    assertNull(e.workerId());
  }

  @Test
  void budgetsAreValidatedNamingTheField() {
    Router router = Router.newBuilder().build();
    for (String field : List.of("connectTimeout", "firstByteTimeout", "idleTimeout", "responseTimeout")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
        RoutingForwarder.Builder b = RoutingForwarder.newBuilder(router);
        switch (field) {
          case "connectTimeout" -> b.connectTimeout(Duration.ZERO);
          case "firstByteTimeout" -> b.firstByteTimeout(Duration.ofMillis(-1));
          case "idleTimeout" -> b.idleTimeout(Duration.ZERO);
          default -> b.responseTimeout(Duration.ZERO);
        }
      });
      assertTrue(e.getMessage().startsWith(field), e.getMessage());
    }
    assertNotEquals(RoutingForwarder.DEFAULT_FIRST_BYTE_TIMEOUT, RoutingForwarder.DEFAULT_RESPONSE_TIMEOUT);
  }

  @Test
  void onlyStreamedBodiesAreDetectedAsStreams() {
    assertTrue(RoutingForwarder.streams("{\"stream\":true}".getBytes(StandardCharsets.UTF_8)));
    assertTrue(RoutingForwarder.streams("{\"a\":\"x\", \"stream\" : true }".getBytes(StandardCharsets.UTF_8)));
    for (String body : List.of("{\"stream\":false}", "{}", "{\"a\":\"\\\"stream\\\":true\"}", "{not json \"stream\"",
        "{\"stream\":\"true\"}", "{\"o\":{\"stream\":true}}")) {
      assertTrue(!RoutingForwarder.streams(body.getBytes(StandardCharsets.UTF_8)), body);
    }
  }
}
