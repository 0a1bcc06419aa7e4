package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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
}
