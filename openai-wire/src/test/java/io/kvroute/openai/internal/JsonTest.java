package io.kvroute.openai.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.openai.JsonException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {
  @Test
  void numbersAreReadExactly() {
    assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808"));
    assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
    assertEquals(new BigInteger("9223372036854775808"), Json.parse("9223372036854775808"));
    assertEquals(new BigInteger("-100000000000000000000000000001"), Json.parse("-100000000000000000000000000001"));
    assertEquals(0L, Json.parse("-0"));
    assertEquals(-0.0, Json.parse("-0.0"));
    assertInstanceOf(Double.class, Json.parse("1.0"));
    assertEquals(100.0, Json.parse("1E2"));
    assertEquals(0.1, Json.parse("0.1"));
    assertEquals(0.0, Json.parse("1e-400"));
    JsonException tooBig = assertThrows(JsonException.class, () -> Json.parse("[1, 1e309]"));
    assertEquals(4, tooBig.offset());
  }

  @Test
  void integersOfMoreDigitsThanPythonConvertsAreRefusedBeforeConversion() {
    // BigInteger(String) is quadratic: a body of 1.6 million digits held a core for about 98 s before the limit
    String limit = "9".repeat(Json.MAX_INTEGER_DIGITS);
    assertEquals(new BigInteger(limit), Json.parse(limit));
    assertEquals(new BigInteger("-" + limit), Json.parse("-" + limit));
    String body = "{\"max_tokens\":" + "1".repeat(200_000) + "}";
    JsonException e = assertThrows(JsonException.class, () -> Json.parse(body));
    assertEquals(14, e.offset());
    assertEquals(true, e.getMessage().contains("200000 digits"), e.getMessage());
    assertThrows(JsonException.class, () -> Json.parse("-" + limit + "1"));
    // a long decimal is read by Double.parseDouble in linear time and stays accepted
    assertEquals(1.0 / 9, (Double) Json.parse("0." + "1".repeat(200_000)), 1e-15);
  }

  @Test
  void writtenNumbersReadBackAsTheSameValueAndType() {
    List<Object> values = List.of(0L, -1L, Long.MAX_VALUE, new BigInteger("123456789012345678901234567890"), 1.0,
        -0.0, 0.1, Double.MIN_VALUE, Double.MAX_VALUE, 1e-7, 123456789.125);
    for (Object v : values) {
      assertEquals(v, Json.parse(Json.write(v)), String.valueOf(v));
    }
    assertEquals("[1,2,3]", Json.write(new int[] {1, 2, 3}));
    assertEquals("[1,2]", Json.write(new long[] {1, 2}));
    assertEquals("1.50", Json.write(new BigDecimal("1.50")));
    assertEquals(7L, Json.parse(Json.write(7)));
  }

  @Test
  void writerRefusesWhatJsonCannotHold() {
    assertThrows(JsonException.class, () -> Json.write(Double.NaN));
    assertThrows(JsonException.class, () -> Json.write(List.of(Double.POSITIVE_INFINITY)));
    assertThrows(JsonException.class, () -> Json.write(Map.of(1, "a")));
    assertThrows(JsonException.class, () -> Json.write(new Object()));
    List<Object> cycle = new ArrayList<>();
    cycle.add(cycle);
    JsonException e = assertThrows(JsonException.class, () -> Json.write(cycle));
    assertEquals(-1, e.offset());
  }

  @Test
  void stringsKeepEveryCharacter() {
    for (String s : Arrays.asList("", "plain", "q\"b\\s/\n\r\t\b\f\u0000\u0001\u001f\u007f", "\u00e9\u4e2d\ud83d\ude00")) {
      assertEquals(s, Json.parse(Json.quote(s)));
      assertEquals(s, Json.parse(Json.quote(s).getBytes(StandardCharsets.UTF_8)));
    }
    assertEquals("\"\\u0001\\u001f\"", Json.quote("\u0001\u001f"));
    assertEquals("\ud83d\ude00", Json.parse("\"\\ud83d\\ude00\""));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "{", "[1,]", "{\"a\":1,}", "01", "-01", "-", "1.", ".5", "1e", "1e+", "+1", "\"a",
      "\"\t\"", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "tru", "nul", "nulls", "{\"a\" 1}", "{a:1}", "[1 2]", "1 2",
      "{\"a\":1,\"a\":2}", "NaN", "-Infinity", "'a'", "[1]]", "{\"a\":1}x", "{\"a\":1}}", "[\"a\",,\"b\"]", "\u00a01",
      "// c\n1", "0x10"})
  void refusesMalformedJsonWithAnOffset(String text) {
    JsonException e = assertThrows(JsonException.class, () -> Json.parse(text), text);
    assertEquals(true, e.offset() >= 0 && e.offset() <= text.length(), e.getMessage());
  }

  @Test
  void refusesDeepNestingAndBadUtf8() {
    assertThrows(JsonException.class, () -> Json.parse("{\"a\":".repeat(Json.MAX_DEPTH + 1) + "1"
        + "}".repeat(Json.MAX_DEPTH + 1)));
    assertEquals(1, ((List<?>) Json.parse("[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH))).size());
    assertThrows(JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xC3, '"'}));
    assertThrows(JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xFF, '"'}));
    assertThrows(JsonException.class, () -> Json.parse(new byte[] {'"', (byte) 0xC0, (byte) 0x80, '"'})); // overlong
    assertThrows(JsonException.class, () -> Json.parseObject("[1]".getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void parsedObjectsKeepOrderAndNulls() {
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("z", 1L);
    expected.put("a", null);
    expected.put("m", List.of(true, false));
    assertEquals(expected, Json.parseObject("{\"z\":1,\"a\":null,\"m\":[true,false]}".getBytes(StandardCharsets.UTF_8)));
    assertEquals(List.of("z", "a", "m"), List.copyOf(((Map<?, ?>) Json.parse(Json.write(expected))).keySet()));
    assertNull(Json.parse(" null "));
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
    assertThrows(JsonException.class, () -> Json.rawMembers("[1]"));
    assertThrows(JsonException.class, () -> Json.rawMembers("{\"a\":1,\"a\":2}"));
    assertThrows(JsonException.class, () -> Json.rawMembers("{\"a\":[1,}"));
    assertThrows(JsonException.class, () -> Json.rawMembers("{\"a\":1} 2"));
    assertThrows(JsonException.class, () -> Json.rawMembers("{\"a\":" + "[".repeat(Json.MAX_DEPTH) + "]".repeat(
        Json.MAX_DEPTH) + "}"));
  }
}
