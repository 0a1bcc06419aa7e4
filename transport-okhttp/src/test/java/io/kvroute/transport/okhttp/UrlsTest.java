package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import org.junit.jupiter.api.Test;

class UrlsTest {
  private static String resolve(String base, String path) {
    return Urls.resolve(URI.create(base), path).toString();
  }

  @Test
  void appendsThePathToTheEndpointsPath() {
    assertEquals("http://127.0.0.1:8000/metrics", resolve("http://127.0.0.1:8000", "/metrics"));
    assertEquals("http://127.0.0.1:8000/metrics", resolve("http://127.0.0.1:8000/", "/metrics"));
    assertEquals("http://h/vllm/v1/completions", resolve("http://h/vllm/", "/v1/completions"));
    assertEquals("http://h/vllm/v1/completions", resolve("http://h/vllm", "/v1/completions"));
    assertEquals("https://h:8443/a/tokenize?x=1&y=%20", resolve("https://h:8443/a?ignored=1", "/tokenize?x=1&y=%20"));
    assertEquals("http://[::1]:9/metrics", resolve("http://[::1]:9", "/metrics"));
  }

  @Test
  void refusesWhatOkHttpCannotCall() {
    assertThrows(IllegalArgumentException.class, () -> resolve("tcp://127.0.0.1:5557", "/metrics"));
    assertThrows(IllegalArgumentException.class, () -> Urls.checkPath("metrics", "path"));
  }

  @Test
  void dropsHopByHopAndOkHttpOwnedHeaders() {
    okhttp3.Headers in = new okhttp3.Headers.Builder().add("Host", "client.example").add("Connection", "keep-alive")
        .add("Content-Length", "12").add("Accept-Encoding", "br").add("Transfer-Encoding", "chunked")
        .add("Authorization", "Bearer k").add("X-Request-Id", "1").add("x-request-id", "2").build();
    okhttp3.Headers out = RoutingForwarder.forwardable(in);
    assertEquals(3, out.size());
    assertEquals("Bearer k", out.get("Authorization"));
    assertEquals(java.util.List.of("1", "2"), out.values("X-Request-Id"));
  }
}
