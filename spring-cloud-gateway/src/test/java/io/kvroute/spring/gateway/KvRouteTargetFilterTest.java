package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class KvRouteTargetFilterTest {
  @ParameterizedTest
  @CsvSource({
      "http://10.0.0.5:8000, no://op/v1/completions, http://10.0.0.5:8000/v1/completions",
      "http://10.0.0.5:8000/, no://op/v1/chat/completions?x=1, http://10.0.0.5:8000/v1/chat/completions?x=1",
      "https://gpu.example:443/vllm/, http://gw:8080/v1/completions, https://gpu.example:443/vllm/v1/completions",
      "http://[::1]:8000, no://op/v1/a%20b?q=%2F, http://[::1]:8000/v1/a%20b?q=%2F",
      "http://h:1, no://op, http://h:1/"})
  void keepsThePathAndQueryOnTheWorkersOrigin(String base, String url, String expected) {
    assertEquals(URI.create(expected), KvRouteTargetFilter.retarget(URI.create(base), URI.create(url)));
  }

  /**
   * A path the worker's server would resolve out of the worker's base path (to whatever else its host serves) is
   * refused, as the transport's forwarder refuses it; before, {@code /v1/../../admin} was sent on as it was.
   */
  @ParameterizedTest
  @ValueSource(strings = {"no://op/v1/../../admin", "no://op/v1/%2e%2E/%2e./admin", "no://op/v1/./completions",
      "no://op/v1/..", "no://op/v1/a%2Fb", "no://op/v1/a%5cb"})
  void pathsThatLeaveTheBasePathAreRefused(String url) {
    RoutingFailure e = assertThrows(RoutingFailure.class,
        () -> KvRouteTargetFilter.retarget(URI.create("http://proxy:8000/worker-a/"), URI.create(url)));
    assertEquals(400, e.status());
    assertEquals("invalid_request_path", e.code());
    // dots inside a segment are fine
    assertEquals(URI.create("http://proxy:8000/worker-a/v1/a..b/.c"),
        KvRouteTargetFilter.retarget(URI.create("http://proxy:8000/worker-a/"), URI.create("no://op/v1/a..b/.c")));
  }
}
