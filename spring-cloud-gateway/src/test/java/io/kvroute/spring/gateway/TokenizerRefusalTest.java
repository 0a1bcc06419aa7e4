package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.scheduler.Schedulers;

/**
 * What the client gets when the tokenizer refuses a prompt: the tokenizer (a real {@code /tokenize} over loopback
 * HTTP, answering one status) judges the request, so its 4xx is the client's answer (404 as {@code model_not_found},
 * any other as {@code invalid_prompt}), while its 5xx is the gateway's failure, a 502 {@code tokenizer_failed}.
 * Nothing is routed or booked either way.
 */
class TokenizerRefusalTest {
  private static final WorkerId W = WorkerId.of("w");

  @ParameterizedTest(name = "tokenizer answers {0}")
  @ValueSource(ints = {400, 404, 413, 422, 429, 499, 500, 502, 503})
  void aTokenizersRefusalIsTheClientsAnswerAndItsFailureA502(int status) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/tokenize", exchange -> {
      exchange.getRequestBody().readAllBytes();
      byte[] body = ("{\"error\":{\"message\":\"the tokenizer answers " + status + "\"}}")
          .getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    try {
      Router router = Router.newBuilder().build();
      router.addWorker(Worker.of(W, URI.create("http://127.0.0.1:1/")));
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder()
          .endpoint(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/")).build();
      KvRouteFilter filter = new KvRouteFilter(router, tokenizer, Schedulers.immediate(), 1 << 20, 1, null, null,
          GatewayObserver.NONE);
      MockServerWebExchange exchange = MockServerWebExchange.from(
          MockServerHttpRequest.post("/v1/completions").body("{\"prompt\":\"hello world\"}"));
      filter.filter(exchange, routed -> {
        throw new AssertionError("a prompt the tokenizer refused was forwarded");
      }).block();

      int expected = status < 500 ? status : 502;
      String code = status == 404 ? "model_not_found" : status < 500 ? "invalid_prompt" : "tokenizer_failed";
      assertEquals(expected, exchange.getResponse().getStatusCode().value());
      String body = exchange.getResponse().getBodyAsString().block();
      assertTrue(body.contains("\"" + code + "\""), body);
      assertEquals(0, router.activeRequests(W), "nothing booked");
    } finally {
      server.stop(0);
    }
  }

  /**
   * A {@code model} no registered worker serves is answered 404 {@code model_not_found} before any tokenizing: the
   * tokenizer here would tokenize any model's prompt (and the router would then refuse the model, 404 as well), so
   * only the count of {@code /tokenize} calls, zero, shows that no round trip was spent on a request that cannot be
   * served. A served model is tokenized and routed as usual.
   */
  @Test
  void anUnknownModelIsRefusedBeforeAnyTokenizeCall() throws IOException {
    AtomicInteger calls = new AtomicInteger();
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/tokenize", exchange -> {
      calls.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = "{\"tokens\":[1,2,3,4,5],\"count\":5}".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    try {
      Router router = Router.newBuilder().build();
      router.addWorker(Worker.newBuilder(W).endpoint(Worker.HTTP, URI.create("http://127.0.0.1:1/")).model("served")
          .build());
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder()
          .endpoint(URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/")).build();
      KvRouteFilter filter = new KvRouteFilter(router, tokenizer, Schedulers.immediate(), 1 << 20, 1, null, null,
          GatewayObserver.NONE);
      MockServerWebExchange unknown = MockServerWebExchange.from(MockServerHttpRequest.post("/v1/completions")
          .body("{\"model\":\"no-such-model\",\"prompt\":\"hello world\"}"));
      filter.filter(unknown, routed -> {
        throw new AssertionError("an unknown model's request was forwarded");
      }).block();
      assertEquals(404, unknown.getResponse().getStatusCode().value());
      String body = unknown.getResponse().getBodyAsString().block();
      assertTrue(body.contains("\"model_not_found\""), body);
      assertEquals(0, calls.get(), "the prompt of an unknown model was tokenized");

      MockServerWebExchange served = MockServerWebExchange.from(MockServerHttpRequest.post("/v1/completions")
          .body("{\"model\":\"served\",\"prompt\":\"hello world\"}"));
      AtomicInteger forwarded = new AtomicInteger();
      filter.filter(served, routed -> {
        forwarded.incrementAndGet();
        return reactor.core.publisher.Mono.empty();
      }).block();
      assertEquals(1, calls.get());
      assertEquals(1, forwarded.get());
      assertEquals(0, router.activeRequests(W), "released when the chain completed");
    } finally {
      server.stop(0);
    }
  }
}
