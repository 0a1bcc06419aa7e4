package io.kvroute.openai.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.kvroute.openai.JsonException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Json} against Jackson as an independent oracle: random documents round-trip through both in every
 * direction, and randomly damaged documents are accepted or refused exactly when Jackson (configured to RFC 8259's
 * strictness: duplicate keys, trailing tokens, the same depth limit) accepts or refuses them, with equal values.
 */
class JsonPropertyTest {
  private static final ObjectMapper JACKSON = JsonMapper.builder(JsonFactory.builder()
          .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(Json.MAX_DEPTH).build()).build())
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  static Stream<Arguments> seeds() {
    return LongStream.range(0, 300).mapToObj(seed -> Arguments.of(seed));
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void randomDocumentsRoundTripThroughBothParsers(long seed) throws Exception {
    SplittableRandom random = new SplittableRandom(seed);
    Object doc = value(random, 0);
    String ours = Json.write(doc);
    assertEquals(doc, Json.parse(ours), ours);
    assertEquals(doc, Json.parse(ours.getBytes(StandardCharsets.UTF_8)), ours);
    assertEquals(doc, fromJackson(JACKSON.readValue(ours.getBytes(StandardCharsets.UTF_8), JsonNode.class)), ours);
    String theirs = JACKSON.writeValueAsString(doc);
    assertEquals(doc, Json.parse(theirs), theirs);
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void damagedDocumentsAreRefusedExactlyWhenJacksonRefusesThem(long seed) {
    SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
    byte[] text = Json.write(value(random, 0)).getBytes(StandardCharsets.UTF_8);
    for (int round = 0; round < 20; round++) {
      byte[] damaged = damage(random, text);
      Object oracle;
      boolean oracleAccepts;
      try {
        JsonNode node = JACKSON.readValue(damaged, JsonNode.class);
        oracle = fromJackson(node);
        oracleAccepts = validUtf8(damaged) && !hasNumberBeyondDoubleRange(oracle, damaged);
      } catch (Exception e) {
        oracle = null;
        oracleAccepts = false;
      }
      String shown = new String(damaged, StandardCharsets.ISO_8859_1);
      try {
        Object ours = Json.parse(damaged);
        if (!oracleAccepts) {
          fail("accepted what Jackson refuses: " + shown);
        }
        assertEquals(oracle, ours, shown);
      } catch (JsonException e) {
        if (oracleAccepts) {
          fail("refused what Jackson accepts (" + e.getMessage() + "): " + shown);
        }
        assertNotNull(e.getMessage());
      }
    }
  }

  @ParameterizedTest(name = "depth {0}")
  @MethodSource("depths")
  void theDepthLimitIsJacksonsConfiguredOne(int depth) {
    String nested = "[".repeat(depth) + "]".repeat(depth);
    boolean jackson;
    try {
      JACKSON.readTree(nested);
      jackson = true;
    } catch (Exception e) {
      jackson = false;
    }
    boolean ours;
    try {
      Json.parse(nested);
      ours = true;
    } catch (JsonException e) {
      ours = false;
    }
    assertEquals(depth <= Json.MAX_DEPTH, ours);
    assertEquals(jackson, ours);
  }

  static Stream<Arguments> depths() {
    return Stream.of(1, Json.MAX_DEPTH - 1, Json.MAX_DEPTH, Json.MAX_DEPTH + 1, 10_000).map(Arguments::of);
  }

  /**
   * Jackson 2.21 lets invalid UTF-8 through in object keys, so validity is decided by the JDK's encoder: valid
   * bytes are exactly those that survive decoding and re-encoding unchanged.
   */
  private static boolean validUtf8(byte[] bytes) {
    return Arrays.equals(bytes, new String(bytes, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Jackson reads a number whose exponent overflows an int as a finite double (or Infinity); such literals are
   * decided here by BigDecimal: beyond {@link Double#MAX_VALUE} after rounding means out of range.
   */
  private static boolean hasNumberBeyondDoubleRange(Object value, byte[] text) {
    if (value instanceof Double d && d.isInfinite()) {
      return true;
    }
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?[eE][+-]?[0-9]+")
        .matcher(new String(text, StandardCharsets.ISO_8859_1));
    while (m.find()) {
      if (m.group().replaceAll("[eE].*", "").replaceAll("[-.0]", "").isEmpty()) {
        continue; // zero times any power of ten is zero
      }
      try {
        if (Double.isInfinite(new java.math.BigDecimal(m.group()).doubleValue())) {
          return true;
        }
      } catch (NumberFormatException | ArithmeticException e) {
        return true; // an exponent beyond an int: beyond any double too, unless the mantissa is zero
      }
    }
    return false;
  }

  // ---- generation ----

  private static Object value(SplittableRandom random, int depth) {
    int kind = random.nextInt(depth >= 5 ? 6 : 8);
    switch (kind) {
      case 0:
        return random.nextBoolean();
      case 1:
        return string(random);
      case 2:
        return number(random);
      case 3:
        return random.nextBoolean() ? "" : string(random);
      case 4:
        return random.nextLong();
      case 5:
        return random.nextInt(3) == 0 ? (Object) Boolean.FALSE : number(random);
      case 6: {
        List<Object> list = new ArrayList<>();
        int n = random.nextInt(5);
        for (int i = 0; i < n; i++) {
          list.add(random.nextInt(10) == 0 ? null : value(random, depth + 1));
        }
        return list;
      }
      default: {
        Map<String, Object> map = new LinkedHashMap<>();
        int n = random.nextInt(5);
        for (int i = 0; i < n; i++) {
          map.put(string(random) + i, random.nextInt(10) == 0 ? null : value(random, depth + 1));
        }
        return map;
      }
    }
  }

  private static Object number(SplittableRandom random) {
    switch (random.nextInt(5)) {
      case 0:
        return (long) random.nextInt(1000) - 500;
      case 1:
        return random.nextLong();
      case 2: {
        BigInteger big = new BigInteger(64 + random.nextInt(100), new java.util.Random(random.nextLong()))
            .add(BigInteger.ONE.shiftLeft(63));
        return random.nextBoolean() ? big : big.negate().subtract(BigInteger.ONE);
      }
      case 3:
        return random.nextDouble() * Math.pow(10, random.nextInt(40) - 20) * (random.nextBoolean() ? 1 : -1);
      default: {
        double d;
        do {
          d = Double.longBitsToDouble(random.nextLong());
        } while (Double.isNaN(d) || Double.isInfinite(d));
        return d;
      }
    }
  }

  private static final String ALPHABET = "ab \"\\/\n\t\u0001\u001f\u007f\u00e9\u4e2d\ud83d\ude00{}[]:,";

  private static String string(SplittableRandom random) {
    StringBuilder sb = new StringBuilder();
    int n = random.nextInt(8);
    for (int i = 0; i < n; i++) {
      int c = random.nextInt(ALPHABET.length());
      char ch = ALPHABET.charAt(c);
      if (Character.isHighSurrogate(ch)) {
        sb.append(ch).append(ALPHABET.charAt(c + 1));
      } else if (!Character.isLowSurrogate(ch)) {
        sb.append(ch);
      }
    }
    return sb.toString();
  }

  private static final byte[] NOISE = "{}[],:\"\\ 0-1.eE+tfnul\t\n".getBytes(StandardCharsets.US_ASCII);

  private static byte[] damage(SplittableRandom random, byte[] text) {
    byte[] out = text;
    int edits = 1 + random.nextInt(2);
    for (int e = 0; e < edits; e++) {
      int at = out.length == 0 ? 0 : random.nextInt(out.length + 1);
      switch (random.nextInt(6)) {
        case 0 -> out = delete(out, Math.min(at, Math.max(0, out.length - 1)));
        case 1 -> out = insert(out, at, NOISE[random.nextInt(NOISE.length)]);
        case 2 -> out = Arrays.copyOf(out, at); // truncated
        case 3 -> out = insert(out, at, (byte) (random.nextBoolean() ? 0xFF : 0xC3)); // never valid / cut short
        case 4 -> out = insert(out, at, (byte) random.nextInt(0x20)); // a raw control character
        default -> {
          if (out.length > 0) {
            out = out.clone();
            out[Math.min(at, out.length - 1)] = NOISE[random.nextInt(NOISE.length)];
          }
        }
      }
    }
    return out;
  }

  private static byte[] delete(byte[] a, int at) {
    if (a.length == 0) {
      return a;
    }
    byte[] out = new byte[a.length - 1];
    System.arraycopy(a, 0, out, 0, at);
    System.arraycopy(a, at + 1, out, at, a.length - at - 1);
    return out;
  }

  private static byte[] insert(byte[] a, int at, byte b) {
    byte[] out = new byte[a.length + 1];
    System.arraycopy(a, 0, out, 0, at);
    out[at] = b;
    System.arraycopy(a, at, out, at + 1, a.length - at);
    return out;
  }

  /** Jackson's tree in this module's types (Long or BigInteger for integers, Double for the rest). */
  private static Object fromJackson(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (node.isObject()) {
      Map<String, Object> map = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        map.put(e.getKey(), fromJackson(e.getValue()));
      }
      return map;
    }
    if (node.isArray()) {
      List<Object> list = new ArrayList<>();
      node.forEach(n -> list.add(fromJackson(n)));
      return list;
    }
    if (node.isTextual()) {
      return node.textValue();
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    if (node.isIntegralNumber()) {
      BigInteger big = node.bigIntegerValue();
      return big.bitLength() < 64 ? (Object) big.longValue() : big;
    }
    assertTrue(node.isFloatingPointNumber(), node.toString());
    return node.doubleValue();
  }
}
