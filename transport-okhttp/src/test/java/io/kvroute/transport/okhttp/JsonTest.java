package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {
  @Test
  void parsesValues() {
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("tokens", List.of(1L, 22L, 333L));
    expected.put("count", 3L);
    expected.put("s", "a\"b\\c/\n\u00e9\ud83d\ude00");
    expected.put("n", null);
    expected.put("d", -1.5e-3);
    expected.put("big", 1.0e20);
    expected.put("t", true);
    expected.put("f", false);
    expected.put("o", Map.of());
    expected.put("a", List.of());
    assertEquals(expected, Json.parse(" {\"tokens\":[1, 22,333],\"count\":3,"
        + "\"s\":\"a\\\"b\\\\c\\/\\n\\u00e9\\ud83d\\ude00\","
        + "\"n\":null,\"d\":-1.5e-3,\"big\":100000000000000000000,\"t\":true,\"f\":false,\"o\":{},\"a\":[]}\r\n"));
    assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808"));
    assertNull(Json.parse("null"));
    assertEquals("\u00fc", Json.parse("\"\u00fc\"".getBytes(StandardCharsets.UTF_8)));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "{", "[1,]", "{\"a\":1,}", "01", "-", "1.", ".5", "1e", "+1", "\"a", "\"\t\"",
      "\"\\x\"", "\"\\u12\"", "tru", "nul", "{\"a\" 1}", "{a:1}", "[1 2]", "1 2", "{\"a\":1,\"a\":2}", "NaN",
      "Infinity", "'a'", "[1]]", "{\"a\":1}x"})
  void rejectsMalformedJson(String text) {
    assertThrows(Json.JsonException.class, () -> Json.parse(text), text);
  }

  @Test
  void rejectsDeepNestingAndBadUtf8() {
    assertThrows(Json.JsonException.class, () -> Json.parse("[".repeat(Json.MAX_DEPTH + 1)
        + "]".repeat(Json.MAX_DEPTH + 1)));
    assertEquals(1, ((List<?>) Json.parse("[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH))).size());
    assertThrows(Json.JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xC3, '"'}));
    assertThrows(Json.JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xFF, '"'}));
  }

  @Test
  void rawMembersKeepTheTextAsWritten() {
    Map<String, String> raw = Json.rawMembers(" { \"model\" : \"m\", \"messages\":[ {\"role\":\"user\",\"content\":"
        + "[{\"type\":\"text\",\"text\":\"hi\"}]} ] ,\"n\":1.50 } ");
    assertEquals(List.of("model", "messages", "n"), List.copyOf(raw.keySet()));
    assertEquals("\"m\"", raw.get("model"));
    assertEquals("[ {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]} ]", raw.get("messages"));
    assertEquals("1.50", raw.get("n"));
    assertEquals(Map.of(), Json.rawMembers("{}"));
    assertThrows(Json.JsonException.class, () -> Json.rawMembers("[1]"));
    assertThrows(Json.JsonException.class, () -> Json.rawMembers("{\"a\":1,\"a\":2}"));
    assertThrows(Json.JsonException.class, () -> Json.rawMembers("{\"a\":[1,}"));
    assertThrows(Json.JsonException.class, () -> Json.rawMembers("{\"a\":1} 2"));
  }

  @Test
  void quoteRoundTrips() {
    for (String s : Arrays.asList("", "plain", "q\"b\\s/\n\r\t\b\f\u0001\u001f", "\u00e9\u4e2d\ud83d\ude00")) {
      assertEquals(s, Json.parse(Json.quote(s)));
    }
  }
}
