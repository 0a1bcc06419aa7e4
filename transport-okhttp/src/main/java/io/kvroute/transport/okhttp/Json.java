package io.kvroute.transport.okhttp;

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
 * A strict RFC 8259 JSON reader, just enough for the responses and requests this module reads; stateless, so
 * thread-safe.
 *
 * <p>Values become {@link Map} (insertion-ordered, null values allowed), {@link List}, {@link String}, {@link Long}
 * (integers that fit), {@link Double} (every other number), {@link Boolean} and {@code null}. Rejected with
 * {@link JsonException}: trailing commas, leading zeros, unescaped control characters, invalid escapes, duplicate
 * keys, invalid UTF-8, nesting deeper than {@value #MAX_DEPTH}, and anything after the value but whitespace.
 */
final class Json {
  static final int MAX_DEPTH = 128;

  private final String s;
  private int pos;
  private int depth;

  private Json(String s) {
    this.s = s;
  }

  /** Parses one JSON value from UTF-8 bytes. */
  static @Nullable Object parse(byte[] utf8) {
    return parse(decodeUtf8(utf8, 0, utf8.length));
  }

  /** Parses one JSON value. */
  static @Nullable Object parse(String text) {
    Json json = new Json(text);
    json.skipWhitespace();
    Object value = json.readValue();
    json.skipWhitespace();
    if (json.pos != text.length()) {
      throw json.error("unexpected data after the value");
    }
    return value;
  }

  /** Decodes UTF-8 strictly: malformed or unmappable input throws {@link JsonException}. */
  static String decodeUtf8(byte[] bytes, int offset, int length) {
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes, offset, length))
          .toString();
    } catch (CharacterCodingException e) {
      throw new JsonException("invalid UTF-8: " + e.getMessage());
    }
  }

  /**
   * The raw text of each top-level member of a JSON object, as written (for copying members into another request
   * without re-encoding them); the whole text is validated.
   *
   * @throws JsonException if {@code text} is not a JSON object
   */
  static Map<String, String> rawMembers(String text) {
    Json json = new Json(text);
    json.skipWhitespace();
    if (json.pos >= text.length() || text.charAt(json.pos) != '{') {
      throw json.error("expected a JSON object");
    }
    json.pos++;
    Map<String, String> members = new LinkedHashMap<>();
    json.skipWhitespace();
    if (json.peek() == '}') {
      json.pos++;
    } else {
      while (true) {
        json.skipWhitespace();
        String key = json.readString();
        json.skipWhitespace();
        json.expect(':');
        json.skipWhitespace();
        int start = json.pos;
        json.depth = 1;
        json.readValue();
        if (members.put(key, text.substring(start, json.pos)) != null) {
          throw json.error("duplicate key \"" + key + "\"");
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

  /** Encodes a string as a JSON string literal. */
  static String quote(String value) {
    StringBuilder sb = new StringBuilder(value.length() + 2).append('"');
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
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"').toString();
  }

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
        if (c == '-' || (c >= '0' && c <= '9')) {
          return readNumber();
        }
        throw error(pos >= s.length() ? "unexpected end of input" : "unexpected character '" + c + "'");
    }
  }

  private Map<String, Object> readObject() {
    enter();
    pos++;
    Map<String, Object> map = new LinkedHashMap<>();
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

  private List<Object> readArray() {
    enter();
    pos++;
    List<Object> list = new ArrayList<>();
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
    if (integral && pos - start <= 20) {
      try {
        return Long.parseLong(literal);
      } catch (NumberFormatException ignored) {
        // out of long range: a double below
      }
    }
    return Double.parseDouble(literal);
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
    return new JsonException(message + " at offset " + at);
  }

  /** Malformed JSON. */
  static final class JsonException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    JsonException(String message) {
      super(message);
    }
  }
}
