package io.kvroute.openai.internal;

import io.kvroute.openai.JsonException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A strict RFC 8259 JSON reader and writer; stateless, thread-safe.
 *
 * <p>Reading: objects become insertion-ordered {@link Map}s ({@code LinkedHashMap}, null values allowed), arrays
 * {@link List}s, strings {@link String}, {@code true}/{@code false} {@link Boolean} and {@code null} Java null.
 * Numbers are read exactly: an integer (no fraction, no exponent) is a {@link Long} when it fits and a
 * {@link BigInteger} otherwise; every other number is a {@link Double}, the nearest to the literal. Rejected with
 * {@link JsonException}, naming the offset: trailing commas, leading zeros, {@code +1}, {@code .5}, {@code 1.},
 * {@code NaN}/{@code Infinity}, single quotes, unescaped control characters, invalid escapes, duplicate keys,
 * numbers beyond the range of a double, integers of more than {@value #MAX_INTEGER_DIGITS} digits, invalid UTF-8 (from bytes), nesting deeper than {@value #MAX_DEPTH}
 * levels, and anything after the value but whitespace.
 *
 * <p>Writing: {@link Map}s with {@link String} keys, {@link Iterable}s, {@code int[]} and {@code long[]},
 * {@link String}s, {@link Boolean}s, integral numbers ({@link Byte}, {@link Short}, {@link Integer}, {@link Long},
 * {@link BigInteger}), {@link BigDecimal}, finite {@link Double} and {@link Float} (written so that they read back
 * as the same double, always with a fraction or exponent), and null. Anything else, a non-finite number, or
 * nesting deeper than {@value #MAX_DEPTH} (a cycle) throws {@link JsonException}. The output is compact and ASCII
 * except for non-ASCII characters in strings, which are written as they are (UTF-8 when encoded).
 */
public final class Json {
  /** The deepest nesting of arrays and objects read or written. */
  public static final int MAX_DEPTH = 128;
  /**
   * The most digits an integer literal may have: converting decimal digits to a {@link BigInteger} costs time
   * quadratic in their number (a 1.6-million-digit {@code max_tokens}, 1.6 MB of body, held a core for 98 s), so
   * longer integers are refused, with Python's limit ({@code sys.int_info.default_max_str_digits}), which vLLM's
   * own server applies to the same bodies.
   */
  public static final int MAX_INTEGER_DIGITS = 4300;

  private final String s;
  private int pos;
  private int depth;

  private Json(String s) {
    this.s = s;
  }

  /**
   * Parses one JSON value from UTF-8 bytes.
   *
   * @param utf8 the text, UTF-8 encoded
   * @return the value (null for JSON {@code null})
   * @throws JsonException if the bytes are not valid UTF-8 or not exactly one JSON value
   */
  public static @Nullable Object parse(byte[] utf8) {
    return parse(decodeUtf8(utf8, 0, utf8.length));
  }

  /**
   * Parses one JSON value.
   *
   * @param text the text
   * @return the value (null for JSON {@code null})
   * @throws JsonException if the text is not exactly one JSON value
   */
  public static @Nullable Object parse(String text) {
    Json json = new Json(text);
    json.skipWhitespace();
    Object value = json.readValue();
    json.skipWhitespace();
    if (json.pos != text.length()) {
      throw json.error("unexpected data after the value");
    }
    return value;
  }

  /**
   * Parses a JSON object from UTF-8 bytes.
   *
   * @param utf8 the text, UTF-8 encoded
   * @return the object's members, in order
   * @throws JsonException if the bytes are not valid UTF-8, not valid JSON, or not an object
   */
  public static Map<String, @Nullable Object> parseObject(byte[] utf8) {
    Object value = parse(utf8);
    if (!(value instanceof Map<?, ?>)) {
      throw new JsonException("expected a JSON object but found " + typeName(value), 0);
    }
    @SuppressWarnings("unchecked")
    Map<String, @Nullable Object> map = (Map<String, @Nullable Object>) value;
    return map;
  }

  /**
   * Decodes UTF-8 strictly.
   *
   * @param bytes the bytes
   * @param offset where the text starts
   * @param length its length in bytes
   * @return the text
   * @throws JsonException if the bytes are malformed or unmappable UTF-8
   */
  public static String decodeUtf8(byte[] bytes, int offset, int length) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes, offset, length))
          .toString();
    } catch (CharacterCodingException e) {
      throw new JsonException("invalid UTF-8: " + e.getMessage(), -1);
    }
  }

  /**
   * The raw text of each top-level member of a JSON object, as written (to copy members into another request
   * without re-encoding them); the whole text is validated as strictly as {@link #parse(String)}.
   *
   * @param text the text of a JSON object
   * @return each member's name and the text of its value, in order
   * @throws JsonException if {@code text} is not a valid JSON object
   */
  public static Map<String, String> rawMembers(String text) {
    Json json = new Json(text);
    json.skipWhitespace();
    if (json.peek() != '{') {
      throw json.error("expected a JSON object");
    }
    json.pos++;
    Map<String, String> members = new LinkedHashMap<>();
    json.skipWhitespace();
    if (json.peek() == '}') {
      json.pos++;
    } else {
      json.depth = 1;
      while (true) {
        json.skipWhitespace();
        int keyAt = json.pos;
        String key = json.readString();
        json.skipWhitespace();
        json.expect(':');
        json.skipWhitespace();
        int start = json.pos;
        json.readValue();
        if (members.put(key, text.substring(start, json.pos)) != null) {
          throw json.error("duplicate key \"" + key + "\"", keyAt);
        }
        json.skipWhitespace();
        char c = json.next();
        if (c == '}') {
          break;
        }
        if (c != ',') {
          throw json.error("expected ',' or '}'", json.pos - 1);
        }
      }
    }
    json.skipWhitespace();
    if (json.pos != text.length()) {
      throw json.error("unexpected data after the value");
    }
    return members;
  }

  /**
   * Writes a value as compact JSON.
   *
   * @param value see the class description for the types written
   * @return the JSON text
   * @throws JsonException if the value (or one inside it) cannot be written
   */
  public static String write(@Nullable Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value, 0);
    return sb.toString();
  }

  /**
   * Appends a value as compact JSON.
   *
   * @param sb where to append
   * @param value see the class description for the types written
   * @throws JsonException if the value (or one inside it) cannot be written; {@code sb} may hold part of it
   */
  public static void write(StringBuilder sb, @Nullable Object value) {
    write(sb, value, 0);
  }

  /**
   * Encodes a string as a JSON string literal, quotes included.
   *
   * @param value the string
   * @return the literal
   */
  public static String quote(String value) {
    StringBuilder sb = new StringBuilder(value.length() + 2);
    quote(sb, value);
    return sb.toString();
  }

  private static void write(StringBuilder sb, @Nullable Object value, int depth) {
    if (value == null) {
      sb.append("null");
    } else if (value instanceof String str) {
      quote(sb, str);
    } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer
        || value instanceof Short || value instanceof Byte || value instanceof BigInteger) {
      sb.append(value);
    } else if (value instanceof Double || value instanceof Float) {
      double d = ((Number) value).doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        throw new JsonException("cannot write the non-finite number " + value, -1);
      }
      sb.append(value); // Double.toString and Float.toString always write a '.' or an exponent: valid JSON
    } else if (value instanceof BigDecimal decimal) {
      sb.append(decimal.toString());
    } else if (value instanceof Map<?, ?> map) {
      enterWrite(depth);
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!(e.getKey() instanceof String key)) {
          throw new JsonException("object keys must be strings but found " + typeName(e.getKey()), -1);
        }
        if (!first) {
          sb.append(',');
        }
        first = false;
        quote(sb, key);
        sb.append(':');
        write(sb, e.getValue(), depth + 1);
      }
      sb.append('}');
    } else if (value instanceof Iterable<?> list) {
      enterWrite(depth);
      sb.append('[');
      boolean first = true;
      for (Object o : list) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        write(sb, o, depth + 1);
      }
      sb.append(']');
    } else if (value instanceof int[] ints) {
      sb.append('[');
      for (int i = 0; i < ints.length; i++) {
        sb.append(i == 0 ? "" : ",").append(ints[i]);
      }
      sb.append(']');
    } else if (value instanceof long[] longs) {
      sb.append('[');
      for (int i = 0; i < longs.length; i++) {
        sb.append(i == 0 ? "" : ",").append(longs[i]);
      }
      sb.append(']');
    } else {
      throw new JsonException("cannot write a " + value.getClass().getName() + " as JSON", -1);
    }
  }

  private static void enterWrite(int depth) {
    if (depth >= MAX_DEPTH) {
      throw new JsonException("nesting deeper than " + MAX_DEPTH + " (a cycle?)", -1);
    }
  }

  private static void quote(StringBuilder sb, String value) {
    sb.append('"');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        case '\b' -> sb.append("\\b");
        case '\f' -> sb.append("\\f");
        default -> {
          if (c < 0x20) {
            sb.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 0xF, 16));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }

  private static String typeName(@Nullable Object value) {
    if (value == null) {
      return "null";
    }
    if (value instanceof Map<?, ?>) {
      return "an object";
    }
    if (value instanceof List<?>) {
      return "an array";
    }
    if (value instanceof String) {
      return "a string";
    }
    if (value instanceof Boolean) {
      return "a boolean";
    }
    if (value instanceof Number) {
      return "a number";
    }
    return "a " + value.getClass().getName();
  }

  // ---- reading ----

  private @Nullable Object readValue() {
    char c = peek();
    switch (c) {
      case '{':
        return readObject();
      case '[':
        return readArray();
      case '"':
        return readString();
      case 't':
        readLiteral("true");
        return Boolean.TRUE;
      case 'f':
        readLiteral("false");
        return Boolean.FALSE;
      case 'n':
        readLiteral("null");
        return null;
      default:
        if (c == '-' || isDigit(c)) {
          return readNumber();
        }
        throw error(pos >= s.length() ? "unexpected end of input" : "unexpected character '" + c + "'");
    }
  }

  private Map<String, @Nullable Object> readObject() {
    enter();
    pos++;
    Map<String, @Nullable Object> map = new LinkedHashMap<>();
    skipWhitespace();
    if (peek() == '}') {
      pos++;
      depth--;
      return map;
    }
    while (true) {
      skipWhitespace();
      int keyAt = pos;
      String key = readString();
      skipWhitespace();
      expect(':');
      skipWhitespace();
      Object value = readValue();
      if (map.containsKey(key)) {
        throw error("duplicate key \"" + key + "\"", keyAt);
      }
      map.put(key, value);
      skipWhitespace();
      char c = next();
      if (c == '}') {
        depth--;
        return map;
      }
      if (c != ',') {
        throw error("expected ',' or '}'", pos - 1);
      }
    }
  }

  private List<@Nullable Object> readArray() {
    enter();
    pos++;
    List<@Nullable Object> list = new ArrayList<>();
    skipWhitespace();
    if (peek() == ']') {
      pos++;
      depth--;
      return list;
    }
    while (true) {
      skipWhitespace();
      list.add(readValue());
      skipWhitespace();
      char c = next();
      if (c == ']') {
        depth--;
        return list;
      }
      if (c != ',') {
        throw error("expected ',' or ']'", pos - 1);
      }
    }
  }

  private void enter() {
    if (++depth > MAX_DEPTH) {
      throw error("nesting deeper than " + MAX_DEPTH);
    }
  }

  private String readString() {
    if (peek() != '"') {
      throw error("expected a string");
    }
    pos++;
    int start = pos;
    StringBuilder sb = null;
    while (true) {
      if (pos >= s.length()) {
        throw error("unterminated string");
      }
      char c = s.charAt(pos);
      if (c == '"') {
        String result = sb == null ? s.substring(start, pos) : sb.append(s, start, pos).toString();
        pos++;
        return result;
      }
      if (c < 0x20) {
        throw error("unescaped control character in a string");
      }
      if (c != '\\') {
        pos++;
        continue;
      }
      if (sb == null) {
        sb = new StringBuilder();
      }
      sb.append(s, start, pos);
      pos++;
      char e = next();
      switch (e) {
        case '"' -> sb.append('"');
        case '\\' -> sb.append('\\');
        case '/' -> sb.append('/');
        case 'b' -> sb.append('\b');
        case 'f' -> sb.append('\f');
        case 'n' -> sb.append('\n');
        case 'r' -> sb.append('\r');
        case 't' -> sb.append('\t');
        case 'u' -> {
          if (pos + 4 > s.length()) {
            throw error("truncated \\u escape");
          }
          int code = 0;
          for (int i = 0; i < 4; i++) {
            int digit = Character.digit(s.charAt(pos + i), 16);
            if (digit < 0) {
              throw error("invalid \\u escape", pos);
            }
            code = code * 16 + digit;
          }
          pos += 4;
          sb.append((char) code);
        }
        default -> throw error("invalid escape '\\" + e + "'", pos - 1);
      }
      start = pos;
    }
  }

  private Object readNumber() {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    if (peek() == '0') {
      pos++;
      if (isDigit(peek())) {
        throw error("leading zero in a number");
      }
    } else if (isDigit(peek())) {
      while (isDigit(peek())) {
        pos++;
      }
    } else {
      throw error("expected a digit");
    }
    boolean integral = true;
    if (peek() == '.') {
      integral = false;
      pos++;
      if (!isDigit(peek())) {
        throw error("expected a digit after '.'");
      }
      while (isDigit(peek())) {
        pos++;
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      pos++;
      if (peek() == '+' || peek() == '-') {
        pos++;
      }
      if (!isDigit(peek())) {
        throw error("expected a digit in the exponent");
      }
      while (isDigit(peek())) {
        pos++;
      }
    }
    String literal = s.substring(start, pos);
    if (integral) {
      if (pos - start <= 18) {
        return Long.parseLong(literal); // at most 18 digits: always fits
      }
      int digits = pos - start - (s.charAt(start) == '-' ? 1 : 0);
      if (digits > MAX_INTEGER_DIGITS) {
        throw error("integer of " + digits + " digits, more than " + MAX_INTEGER_DIGITS, start);
      }
      BigInteger big = new BigInteger(literal);
      return big.bitLength() < 64 ? (Object) big.longValue() : big;
    }
    double d = Double.parseDouble(literal);
    if (Double.isInfinite(d)) {
      throw error("number beyond the range of a double", start);
    }
    return d;
  }

  private void readLiteral(String literal) {
    if (!s.startsWith(literal, pos)) {
      throw error("invalid literal");
    }
    pos += literal.length();
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private char peek() {
    return pos < s.length() ? s.charAt(pos) : '\0';
  }

  private char next() {
    if (pos >= s.length()) {
      throw error("unexpected end of input");
    }
    return s.charAt(pos++);
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("expected '" + c + "'");
    }
    pos++;
  }

  private void skipWhitespace() {
    while (pos < s.length()) {
      char c = s.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      pos++;
    }
  }

  private JsonException error(String message) {
    return error(message, pos);
  }

  private JsonException error(String message, int at) {
    return new JsonException(message, at);
  }
}
