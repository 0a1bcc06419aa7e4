package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import mockwebserver3.MockResponse;
import mockwebserver3.MockWebServer;
import mockwebserver3.RecordedRequest;
import okhttp3.Headers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A client-controlled path or header must never send the request, with the gateway's credentials, anywhere but the
 * chosen worker's base path, nor split a header on the wire. Real HTTP on loopback: the worker lives under a base
 * path ({@code /vllm/}), which the simulator cannot serve, so both servers are MockWebServers.
 */
class ForwarderSecurityTest {
  private static MockWebServer worker;
  private static MockWebServer attacker;
  private static Router router;
  private static RoutingForwarder forwarder;

  @BeforeAll
  static void start() throws Exception {
    worker = new MockWebServer();
    worker.start();
    attacker = new MockWebServer();
    attacker.start();
    router = Router.newBuilder().build();
    router.addWorker(Worker.of(WorkerId.of("w"), URI.create(worker.url("/vllm/").toString())));
    // Short budgets, so that a request wrongly sent to a server with nothing to answer fails the test instead of
    // hanging it. (A client's readTimeout does not do it: the forwarder sets its own from responseTimeout and
    // idleTimeout, so the mutation audit found this test blocked for the 10-minute default instead of failing.)
    forwarder = RoutingForwarder.newBuilder(router)
        .responseTimeout(java.time.Duration.ofSeconds(2))
        .idleTimeout(java.time.Duration.ofSeconds(2))
        .firstByteTimeout(java.time.Duration.ofSeconds(2))
        .build();
  }

  @AfterAll
  static void stop() throws Exception {
    worker.close();
    attacker.close();
  }

  static Stream<String> escapingPaths() {
    String evil = attacker.getHostName() + ":" + attacker.getPort();
    return Stream.of("//" + evil + "/x", "/\\" + evil + "/x", "/\\\\" + evil + "/x", "/../admin", "/%2e%2e/x",
        "/%2E%2e/x", "/v1/../../admin", "/v1/%2e%2e/%2e%2e/admin", "/./admin", "/v1/%2e/x", "/..", "/%2e%2e",
        "/%2f%2f" + evil + "/x", "/v1%5c..%5cadmin", "/v1/x#frag", "/v1/\r\nHost: evil", "//" + evil + "?a=b");
  }

  @ParameterizedTest
  @MethodSource("escapingPaths")
  void clientPathsNeverChangeTheAuthorityOrLeaveTheBasePath(String path) throws Exception {
    int attackerBefore = attacker.getRequestCount();
    int workerBefore = worker.getRequestCount();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> {
      ForwardRequest request = ForwardRequest.newBuilder(path, "{}".getBytes(StandardCharsets.UTF_8))
          .header("Authorization", "Bearer gateway-secret").tokens(new int[] {1, 2, 3}).build();
      forwarder.forward(request).close();
    });
    assertTrue(e.getMessage().contains("path"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Urls.resolve(URI.create(worker.url("/vllm/").toString()),
        path));
    assertEquals(attackerBefore, attacker.getRequestCount(), "the attacker's server was called");
    assertEquals(workerBefore, worker.getRequestCount(), "a refused path was forwarded");
    assertEquals(0, router.activeRequests(WorkerId.of("w")));
  }

  @Test
  void plainPathsAndQueriesStayUnderTheBasePath() throws Exception {
    URI base = URI.create("http://127.0.0.1:9/vllm/");
    for (String path : List.of("/v1/completions", "/v1/x?next=//evil.example/a&b=..", "/v1/a..b/.x/x.",
        "/v1/%2e%2ex", "/v1/x?q=%2e%2e/\\")) {
      okhttp3.HttpUrl url = Urls.resolve(base, path);
      assertEquals("127.0.0.1", url.host(), path);
      assertEquals(9, url.port(), path);
      assertTrue(url.encodedPath().startsWith("/vllm/v1/"), path + " -> " + url);
    }
  }

  @Test
  void forwardedHeadersNeverCarryCrOrLf() throws Exception {
    int before = worker.getRequestCount();
    for (String value : List.of("a\r\nX-Injected: 1", "a\nX-Injected: 1", "a\rb", "a\u0000b", "a\u007fb")) {
      // A gateway that copies its client's headers leniently can build such a Headers; OkHttp's add() cannot.
      Headers lenient = new Headers.Builder().addUnsafeNonAscii("X-Client", "ok").build().newBuilder()
          .addUnsafeNonAscii("X-Forwarded-Note", value).build();
      ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", "{}".getBytes(StandardCharsets.UTF_8))
          .headers(lenient).tokens(new int[] {1, 2, 3}).build();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> forwarder.forward(request).close(), value);
      assertTrue(e.getMessage().contains("X-Forwarded-Note"), e.getMessage());
    }
    assertEquals(before, worker.getRequestCount(), "a header with a control character reached the wire");
    assertEquals(0, router.activeRequests(WorkerId.of("w")));
  }

  @Test
  void hopByHopHeadersAndThoseNamedInConnectionAreNotForwarded() throws Exception {
    worker.enqueue(new MockResponse.Builder().body("{}").build());
    Headers in = new Headers.Builder()
        .add("Connection", "keep-alive, X-Hop-Secret")
        .add("Connection", " x-other-hop ,")
        .add("X-Hop-Secret", "internal")
        .add("X-Other-Hop", "internal")
        .add("Keep-Alive", "timeout=5")
        .add("Proxy-Authorization", "Basic cHJveHk=")
        .add("TE", "trailers")
        .add("Upgrade", "h2c")
        .add("Trailer", "X-T")
        .add("Authorization", "Bearer k")
        .add("X-Request-Id", "r-1")
        .addUnsafeNonAscii("X-Note", "café\tau lait")
        .build();
    ForwardRequest request = ForwardRequest.newBuilder("/v1/completions", "{}".getBytes(StandardCharsets.UTF_8))
        .headers(in).tokens(new int[] {1, 2, 3}).build();
    try (ForwardedResponse response = forwarder.forward(request)) {
      assertEquals(200, response.code());
    }
    RecordedRequest recorded = worker.takeRequest(5, TimeUnit.SECONDS);
    assertEquals("/vllm/v1/completions", recorded.getUrl().encodedPath());
    Headers sent = recorded.getHeaders();
    for (String name : List.of("X-Hop-Secret", "X-Other-Hop", "Keep-Alive", "Proxy-Authorization", "TE", "Upgrade",
        "Trailer")) {
      assertNull(sent.get(name), name + " was forwarded");
    }
    assertEquals("Bearer k", sent.get("Authorization"));
    assertEquals("r-1", sent.get("X-Request-Id"));
    assertEquals("café\tau lait", sent.get("X-Note"));
    // OkHttp sets its own Connection header for its pool; never the client's options.
    for (String value : sent.values("Connection")) {
      assertTrue(!value.toLowerCase(java.util.Locale.ROOT).contains("x-hop-secret"), value);
    }
  }
}
