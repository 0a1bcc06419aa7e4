package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.kvroute.HealthState;
import io.kvroute.Router;
import io.kvroute.WorkerId;
import io.kvroute.spring.gateway.example.ExampleGatewayApplication;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A worker that answers every request with HTTP 500 (and an error body, as vLLM does) is ejected after
 * {@code kvroute.health.eject-after-failures} answers. The worker is a plain HTTP server: a real engine cannot be
 * made to fail this way on demand.
 */
class ServerErrorEjectionTest {
  private HttpServer failing;
  private ConfigurableApplicationContext app;

  @AfterEach
  void stop() {
    if (app != null) {
      app.close();
    }
    if (failing != null) {
      failing.stop(0);
    }
  }

  @Test
  void aWorkerAnsweringOnly500IsEjectedAfterTheConfiguredFailures() throws Exception {
    AtomicInteger served = new AtomicInteger();
    failing = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    failing.createContext("/", exchange -> {
      served.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = "{\"object\":\"error\",\"message\":\"engine dead\",\"type\":\"InternalServerError\",\"code\":500}"
          .getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(500, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    failing.start();
    app = new SpringApplicationBuilder(ExampleGatewayApplication.class, SimLocalTokenizer.Config.class).run(
        "--server.port=0", "--spring.main.banner-mode=off", "--logging.level.root=WARN",
        "--kvroute.workers[0].id=bad", "--kvroute.workers[0].url=http://127.0.0.1:" + failing.getAddress().getPort(),
        "--kvroute.workers[0].model=" + GatewayFixture.MODEL, "--kvroute.metrics.enabled=false",
        "--kvroute.health.eject-after-failures=3", "--kvroute.health.initial-backoff=60s",
        "--kvroute.health.max-backoff=60s");
    Router router = app.getBean(Router.class);
    URI base = URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port"));
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    WorkerId bad = WorkerId.of("bad");
    for (int i = 1; i <= 3; i++) {
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/v1/completions"))
          .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(GatewayFixture.completion("request " + i, 2, false))).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(500, r.statusCode(), r.body()); // relayed as the worker answered
      assertEquals(i, served.get());
      // the failure is reported when the relayed response completes, which the client may see just before
      HealthState expected = i < 3 ? HealthState.SUSPECT : HealthState.EJECTED;
      int answers = i;
      GatewayFixture.await(() -> router.health(bad) == expected, Duration.ofSeconds(10),
          "the worker " + expected + " after " + answers + " answers of 500");
    }
    HttpResponse<String> after = client.send(HttpRequest.newBuilder(base.resolve("/v1/completions"))
        .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(GatewayFixture.completion("request 4", 2, false))).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(503, after.statusCode(), after.body());
    assertTrue(after.body().contains("all_unhealthy"), after.body());
    assertEquals(3, served.get(), "the ejected worker is not tried again within its backoff");
    assertEquals(0, router.activeRequests(bad));
  }

  /**
   * A worker that answers 200 and then an in-stream error event (vLLM's {@code data: {"error": {..., "code": N}}},
   * then {@code [DONE]}): code 400 is the request's fault, so five in a row leave it HEALTHY and a client sending
   * bad requests cannot eject it; code 500 is the engine's, so it is ejected after 3.
   */
  @ParameterizedTest(name = "code {0}")
  @ValueSource(ints = {400, 500})
  void anInStreamErrorEjectsOnlyWhenItIsTheEngines(int code) throws Exception {
    AtomicInteger served = new AtomicInteger();
    failing = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    failing.createContext("/", exchange -> {
      served.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = ("data: {\"error\": {\"message\": \"boom\", \"type\": \""
          + (code == 400 ? "BadRequestError" : "InternalServerError") + "\", \"param\": null, \"code\": " + code
          + "}}\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/event-stream");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    failing.start();
    app = new SpringApplicationBuilder(ExampleGatewayApplication.class, SimLocalTokenizer.Config.class).run(
        "--server.port=0", "--spring.main.banner-mode=off", "--logging.level.root=WARN",
        "--kvroute.workers[0].id=bad", "--kvroute.workers[0].url=http://127.0.0.1:" + failing.getAddress().getPort(),
        "--kvroute.workers[0].model=" + GatewayFixture.MODEL, "--kvroute.metrics.enabled=false",
        "--kvroute.health.eject-after-failures=3", "--kvroute.health.initial-backoff=60s",
        "--kvroute.health.max-backoff=60s");
    Router router = app.getBean(Router.class);
    URI base = URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port"));
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    WorkerId bad = WorkerId.of("bad");
    int requests = code == 400 ? 5 : 3;
    for (int i = 1; i <= requests; i++) {
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/v1/completions"))
          .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(GatewayFixture.completion("request " + i, 2, true))).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, r.statusCode(), r.body());
      assertTrue(r.body().contains("\"code\": " + code), r.body()); // relayed unchanged
      // the outcome is reported before the routing is released, which the client may see just before
      GatewayFixture.await(() -> router.activeRequests(bad) == 0, Duration.ofSeconds(10), "the routing released");
    }
    assertEquals(requests, served.get());
    assertEquals(code == 400 ? HealthState.HEALTHY : HealthState.EJECTED, router.health(bad));
  }
}
