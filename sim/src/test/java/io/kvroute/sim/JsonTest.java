package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {

  @Test
  void parsesEveryKindOfValue() {
    Object v = Json.parse(" {\"a\": [1, -2.5, 3e2, true, false, null], \"b\": {\"c\": \"x\\n\\u00e9\\\"\"},"
        + " \"big\": 12345678901234567890} ");
    Map<String, Object> expected = new LinkedHashMap<>();
    expected.put("a", Arrays.asList(1L, -2.5, 300.0, true, false, null));
    expected.put("b", Map.of("c", "x\né\""));
    expected.put("big", 1.2345678901234567e19);
    assertEquals(expected, v);
    assertNull(Json.parse("null"));
  }

  @Test
  void writesWhatItReads() {
    Map<String, Object> value = new LinkedHashMap<>();
    value.put("s", "quote\" backslash\\ tab\t ctl\u0001");
    value.put("n", List.of(1L, 2.5, -3L));
    value.put("nested", Map.of("empty", List.of()));
    value.put("nil", null);
    assertEquals(value, Json.parse(Json.write(value)));
    assertEquals("[1,2,3]", Json.write(new int[] {1, 2, 3}));
    assertEquals("2", Json.write(2.0));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "tru", "\"unterminated", "01x", "007", "-", "1.",
      "[1] 2", "{1: 2}", "\"bad \\q escape\"", "\"\\u12\""})
  void rejectsMalformedInputWithAnIllegalArgumentException(String text) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(text));
    assertEquals(true, e.getMessage().startsWith("invalid JSON at offset"), e.getMessage());
  }

  @Test
  void rejectsDeepNesting() {
    assertThrows(IllegalArgumentException.class, () -> Json.parse("[".repeat(100) + "]".repeat(100)));
  }

  static Stream<Arguments> seeds() {
    return LongStream.range(1, 21).mapToObj(Arguments::of);
  }

  /** Random byte soup never escapes as anything but {@link IllegalArgumentException}. */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void randomInputFailsCleanly(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    String alphabet = "{}[]\":,\\ntrufalse0123456789.-eE \u00e9";
    for (int i = 0; i < 500; i++) {
      StringBuilder sb = new StringBuilder();
      int length = random.nextInt(30);
      for (int j = 0; j < length; j++) {
        sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
      }
      try {
        Json.parse(sb.toString());
      } catch (IllegalArgumentException expected) {
        // fine
      }
    }
  }
}
