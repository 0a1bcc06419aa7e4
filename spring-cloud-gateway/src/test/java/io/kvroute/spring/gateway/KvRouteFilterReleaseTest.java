package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.openai.ChatMessage;
import io.kvroute.transport.okhttp.Tokenizer;
import java.net.URI;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.scheduler.Schedulers;

/**
 * The routing handle is released however the rest of the filter chain ends: here a later filter that throws
 * instead of returning an error (a test double: a real filter chain does so only through a bug).
 */
class KvRouteFilterReleaseTest {
  private static final WorkerId W = WorkerId.of("w");

  private static final Tokenizer WORDS = new Tokenizer() {
    @Override
    public int[] tokenize(@Nullable String model, String prompt) {
      return new int[] {1, 2, 3, 4, 5};
    }

    @Override
    public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) {
      return new int[] {1, 2, 3};
    }
  };

  private final Router router = Router.newBuilder().build();
  private final KvRouteFilter filter = new KvRouteFilter(router, WORDS, Schedulers.immediate(), 1 << 20, 1, null,
      null, GatewayObserver.NONE);

  KvRouteFilterReleaseTest() {
    router.addWorker(Worker.of(W, URI.create("http://127.0.0.1:1/base/")));
  }

  private static MockServerWebExchange exchange(String path) {
    return MockServerWebExchange.from(MockServerHttpRequest.post(path).body("{\"prompt\":\"hello\"}"));
  }

  @Test
  void aLaterFilterThatThrowsLeavesNothingBooked() {
    GatewayFilterChain throwing = ex -> {
      throw new IllegalStateException("a buggy filter");
    };
    assertThrows(IllegalStateException.class, () -> filter.filter(exchange("/v1/completions"), throwing).block());
    assertEquals(0, router.activeRequests(W), "the booking of a request whose chain threw was left open");
  }
}
