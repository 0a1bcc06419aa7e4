package io.kvroute.sim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A minimal JSON reader and writer for the simulator's HTTP API (RFC 8259, no extensions); stateless and
 * thread-safe.
 *
 * <p>Objects read as {@code LinkedHashMap<String, Object>}, arrays as {@code List<Object>}, numbers as {@code Long}
 * when integral and in range, else {@code Double}, and {@code null} as Java null. Nesting is limited to 64 levels.
 */
final class Json {
  private static final int MAX_DEPTH = 64;

  private Json() {}

  /**
   * Parses one JSON value.
   *
   * @throws IllegalArgumentException with the offending position if the text is not valid JSON
   */
  static @Nullable Object parse(String text) {
    Reader reader = new Reader(text);
    reader.skipWhitespace();
    Object value = reader.value(0);
    reader.skipWhitespace();
    if (reader.pos != text.length()) {
      throw reader.error("unexpected trailing characters");
    }
    return value;
  }

  /** Writes {@code value} (maps, iterables, arrays of int or long, strings, numbers, booleans, null) as JSON. */
  static String write(@Nullable Object value) {
    StringBuilder sb = new StringBuilder();
    write(sb, value);
    return sb.toString();
  }

  private static void write(StringBuilder sb, @Nullable Object value) {
    if (value == null) {
      sb.append("null");
    } else if (value instanceof String s) {
      quote(sb, s);
    } else if (value instanceof Boolean || value instanceof Integer || value instanceof Long) {
      sb.append(value);
    } else if (value instanceof Number n) {
      double d = n.doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        sb.append("null");
      } else if (d == Math.rint(d) && Math.abs(d) < 1e15) {
        sb.append((long) d);
      } else {
        sb.append(d);
      }
    } else if (value instanceof Map<?, ?> map) {
      sb.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        quote(sb, String.valueOf(e.getKey()));
        sb.append(':');
        write(sb, e.getValue());
      }
      sb.append('}');
    } else if (value instanceof Iterable<?> list) {
      sb.append('[');
      boolean first = true;
      for (Object o : list) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        write(sb, o);
      }
      sb.append(']');
    } else if (value instanceof int[] ints) {
      sb.append('[');
      for (int i = 0; i < ints.length; i++) {
        sb.append(i == 0 ? "" : ",").append(ints[i]);
      }
      sb.append(']');
    } else {
      throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON");
    }
  }

  private static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
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
    sb.append('"');
  }

  private static final class Reader {
    private final String s;
    private int pos;

    Reader(String s) {
      this.s = s;
    }

    IllegalArgumentException error(String message) {
      return new IllegalArgumentException("invalid JSON at offset " + pos + ": " + message);
    }

    void skipWhitespace() {
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          pos++;
        } else {
          break;
        }
      }
    }

    @Nullable Object value(int depth) {
      if (depth > MAX_DEPTH) {
        throw error("nesting deeper than " + MAX_DEPTH);
      }
      if (pos >= s.length()) {
        throw error("unexpected end of input");
      }
      char c = s.charAt(pos);
      switch (c) {
        case '{':
          return object(depth);
        case '[':
          return array(depth);
        case '"':
          return string();
        case 't':
          literal("true");
          return Boolean.TRUE;
        case 'f':
          literal("false");
          return Boolean.FALSE;
        case 'n':
          literal("null");
          return null;
        default:
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected character '" + c + "'");
      }
    }

    private void literal(String word) {
      if (!s.startsWith(word, pos)) {
        throw error("expected " + word);
      }
      pos += word.length();
    }

    private Map<String, Object> object(int depth) {
      pos++; // {
      Map<String, Object> map = new LinkedHashMap<>();
      skipWhitespace();
      if (peek() == '}') {
        pos++;
        return map;
      }
      while (true) {
        skipWhitespace();
        if (peek() != '"') {
          throw error("expected a string key");
        }
        String key = string();
        skipWhitespace();
        expect(':');
        skipWhitespace();
        map.put(key, value(depth + 1));
        skipWhitespace();
        char c = next();
        if (c == '}') {
          return map;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or '}'");
        }
      }
    }

    private List<Object> array(int depth) {
      pos++; // [
      List<Object> list = new ArrayList<>();
      skipWhitespace();
      if (peek() == ']') {
        pos++;
        return list;
      }
      while (true) {
        skipWhitespace();
        list.add(value(depth + 1));
        skipWhitespace();
        char c = next();
        if (c == ']') {
          return list;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or ']'");
        }
      }
    }

    private String string() {
      pos++; // opening quote
      StringBuilder sb = new StringBuilder();
      while (true) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos++);
        if (c == '"') {
          return sb.toString();
        }
        if (c == '\\') {
          if (pos >= s.length()) {
            throw error("unterminated escape");
          }
          char e = s.charAt(pos++);
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
                throw error("short unicode escape");
              }
              try {
                sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
              } catch (NumberFormatException ex) {
                throw error("bad unicode escape");
              }
              pos += 4;
            }
            default -> throw error("bad escape '\\" + e + "'");
          }
        } else if (c < 0x20) {
          pos--;
          throw error("control character in string");
        } else {
          sb.append(c);
        }
      }
    }

    private Object number() {
      int start = pos;
      if (peek() == '-') {
        pos++;
      }
      boolean integral = true;
      if (pos + 1 < s.length() && s.charAt(pos) == '0' && s.charAt(pos + 1) >= '0' && s.charAt(pos + 1) <= '9') {
        throw error("leading zeros are not allowed");
      }
      digits();
      if (pos < s.length() && s.charAt(pos) == '.') {
        integral = false;
        pos++;
        digits();
      }
      if (pos < s.length() && (s.charAt(pos) == 'e' || s.charAt(pos) == 'E')) {
        integral = false;
        pos++;
        if (pos < s.length() && (s.charAt(pos) == '+' || s.charAt(pos) == '-')) {
          pos++;
        }
        digits();
      }
      String text = s.substring(start, pos);
      if (integral) {
        try {
          return Long.parseLong(text);
        } catch (NumberFormatException tooBig) {
          return Double.parseDouble(text);
        }
      }
      return Double.parseDouble(text);
    }

    private void digits() {
      int start = pos;
      while (pos < s.length() && s.charAt(pos) >= '0' && s.charAt(pos) <= '9') {
        pos++;
      }
      if (pos == start) {
        throw error("expected a digit");
      }
    }

    private char peek() {
      if (pos >= s.length()) {
        throw error("unexpected end of input");
      }
      return s.charAt(pos);
    }

    private char next() {
      char c = peek();
      pos++;
      return c;
    }

    private void expect(char c) {
      if (next() != c) {
        pos--;
        throw error("expected '" + c + "'");
      }
    }
  }
}
