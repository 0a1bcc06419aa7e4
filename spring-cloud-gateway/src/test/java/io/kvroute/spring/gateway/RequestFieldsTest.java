package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestFieldsTest {
  private static RequestFields read(String json) {
    return RequestFields.read(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void readsTheTopLevelModelAndStreamOnly() {
    RequestFields f = read("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"model\":\"inner\",\"stream\":true}],"
        + "\"model\":\"qwen3\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    assertEquals("qwen3", f.model());
    assertTrue(f.stream());
    RequestFields g = read("{\"prompt\":\"x\",\"stream\":false,\"model\":null}");
    assertNull(g.model());
    assertFalse(g.stream());
    assertFalse(read("{\"prompt\":[1,2,3]}").stream());
  }

  @ParameterizedTest
  @ValueSource(strings = {"[]", "\"text\"", "{\"model\":3,\"prompt\":\"x\"}", "{\"prompt\":\"x\"", "{\"prompt\":\"x\"} {}",
      "{\"model\":[\"a\"]}", ""})
  void refusesBodiesThatAreNotOneJsonObjectWithAStringModel(String body) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> read(body));
    assertTrue(e.getMessage().contains("request body") || e.getMessage().contains("model"), e.getMessage());
  }
}
