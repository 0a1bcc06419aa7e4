package io.kvroute.transport.okhttp;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * A tolerant parser of the Prometheus text exposition format (0.0.4, and the OpenMetrics text that vLLM's
 * {@code prometheus_client} can also emit); stateless, so thread-safe.
 *
 * <p>Understood: {@code # HELP}, {@code # TYPE} and other comments (skipped), {@code # EOF}, blank lines, CRLF line
 * ends, labels with escaped {@code \\}, {@code \"} and {@code \n}, trailing commas in label sets, Prometheus 3 quoted
 * names ({@code {"my.metric",a="b"} 1}), {@code NaN}, {@code +Inf}, {@code -Inf}, timestamps, and OpenMetrics
 * exemplars ({@code # {...} v}). A line that cannot be read is skipped and counted; it never fails the parse.
 */
final class PrometheusText {
  private PrometheusText() {}

  /**
   * One sample line.
   *
   * @param name the metric name
   * @param labels the label set, in the order written
   * @param value the value (may be NaN or infinite)
   * @param timestampMillis the timestamp in milliseconds, or {@link Long#MIN_VALUE} when absent
   */
  record Sample(String name, Map<String, String> labels, double value, long timestampMillis) {}

  /**
   * Parses {@code text}, handing every well-formed sample whose name {@code wanted} accepts to {@code out}.
   *
   * @return the number of lines skipped because they could not be read
   */
  static int parse(CharSequence text, Predicate<String> wanted, Consumer<Sample> out) {
    int malformed = 0;
    int length = text.length();
    int lineStart = 0;
    while (lineStart < length) {
      int lineEnd = lineStart;
      while (lineEnd < length && text.charAt(lineEnd) != '\n') {
        lineEnd++;
      }
      int end = lineEnd;
      if (end > lineStart && text.charAt(end - 1) == '\r') {
        end--;
      }
      Line line = new Line(text, lineStart, end);
      try {
        Sample sample = line.parse(wanted);
        if (sample != null) {
          out.accept(sample);
        }
      } catch (Malformed e) {
        malformed++;
      }
      lineStart = lineEnd + 1;
    }
    return malformed;
  }

  private static final class Malformed extends Exception {
    private static final long serialVersionUID = 1L;

    Malformed() {
      super(null, null, false, false);
    }
  }

  private static final Malformed MALFORMED = new Malformed();

  /** A cursor over one line. */
  private static final class Line {
    private final CharSequence s;
    private final int end;
    private int pos;

    Line(CharSequence s, int start, int end) {
      this.s = s;
      this.pos = start;
      this.end = end;
    }

    /** The sample on this line, or null for a blank line, a comment or an unwanted sample. */
    Sample parse(Predicate<String> wanted) throws Malformed {
      skipBlanks();
      if (pos >= end || s.charAt(pos) == '#') {
        return null;
      }
      String name = null;
      Map<String, String> labels = Map.of();
      if (s.charAt(pos) != '{') {
        name = readName(true);
        if (pos < end && !isBlank(s.charAt(pos)) && s.charAt(pos) != '{') {
          throw MALFORMED; // a character that cannot be in a name
        }
        skipBlanks();
        if (!wanted.test(name)) {
          return null; // the rest of the line is not looked at: unwanted lines cost little and count as fine
        }
      }
      if (pos < end && s.charAt(pos) == '{') {
        pos++;
        labels = new LinkedHashMap<>();
        while (true) {
          skipBlanks();
          if (pos >= end) {
            throw MALFORMED;
          }
          if (s.charAt(pos) == '}') {
            pos++;
            break;
          }
          String labelName;
          if (s.charAt(pos) == '"') {
            String quoted = readQuoted();
            skipBlanks();
            if (pos < end && (s.charAt(pos) == ',' || s.charAt(pos) == '}') && name == null) {
              name = quoted; // Prometheus 3: {"metric.name", labels…}
              if (s.charAt(pos) == ',') {
                pos++;
              }
              continue;
            }
            labelName = quoted;
          } else {
            labelName = readName(false);
          }
          skipBlanks();
          expect('=');
          skipBlanks();
          String value = readQuoted();
          if (labels.put(labelName, value) != null) {
            throw MALFORMED; // a repeated label name
          }
          skipBlanks();
          if (pos < end && s.charAt(pos) == ',') {
            pos++;
          } else if (pos >= end || s.charAt(pos) != '}') {
            throw MALFORMED;
          }
        }
        if (name == null) {
          throw MALFORMED;
        }
        if (!wanted.test(name)) {
          return null;
        }
        if (pos >= end || !isBlank(s.charAt(pos))) {
          throw MALFORMED;
        }
        skipBlanks();
      }
      double value = parseValue(readToken());
      skipBlanks();
      long timestamp = Long.MIN_VALUE;
      if (pos < end && s.charAt(pos) != '#') {
        timestamp = parseTimestamp(readToken());
        skipBlanks();
      }
      if (pos < end && s.charAt(pos) != '#') {
        throw MALFORMED; // something after the timestamp that is not an exemplar
      }
      return new Sample(name, labels, value, timestamp);
    }

    private String readName(boolean metric) throws Malformed {
      int start = pos;
      while (pos < end) {
        char c = s.charAt(pos);
        boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':')
            || (pos > start && c >= '0' && c <= '9');
        if (!ok) {
          break;
        }
        pos++;
      }
      if (pos == start) {
        throw MALFORMED;
      }
      return s.subSequence(start, pos).toString();
    }

    private String readQuoted() throws Malformed {
      expect('"');
      StringBuilder sb = new StringBuilder();
      while (true) {
        if (pos >= end) {
          throw MALFORMED;
        }
        char c = s.charAt(pos++);
        if (c == '"') {
          return sb.toString();
        }
        if (c == '\\') {
          if (pos >= end) {
            throw MALFORMED;
          }
          char e = s.charAt(pos++);
          switch (e) {
            case 'n' -> sb.append('\n');
            case '\\' -> sb.append('\\');
            case '"' -> sb.append('"');
            default -> sb.append('\\').append(e); // not an escape in the format: kept as written
          }
        } else {
          sb.append(c);
        }
      }
    }

    private String readToken() throws Malformed {
      int start = pos;
      while (pos < end && !isBlank(s.charAt(pos))) {
        pos++;
      }
      if (pos == start) {
        throw MALFORMED;
      }
      return s.subSequence(start, pos).toString();
    }

    private void expect(char c) throws Malformed {
      if (pos >= end || s.charAt(pos) != c) {
        throw MALFORMED;
      }
      pos++;
    }

    private void skipBlanks() {
      while (pos < end && isBlank(s.charAt(pos))) {
        pos++;
      }
    }

    private static boolean isBlank(char c) {
      return c == ' ' || c == '\t';
    }
  }

  /**
   * Parses a sample value with the grammar of Go's {@code strconv.ParseFloat}, which the Prometheus text format
   * prescribes: an optional sign, then either a decimal number ({@code 1}, {@code 1.}, {@code .5}, {@code 1.5e-3})
   * or a hexadecimal one with a mandatory binary exponent ({@code 0x1.8p3}); {@code _} only between digits (or after
   * the {@code 0x} prefix); {@code Inf} and {@code Infinity} with an optional sign and {@code NaN} without one, in
   * any case. A finite number too large for a double is refused, as Go refuses it with {@code ErrRange}. Everything
   * else ({@code --3}, {@code +-3}, {@code 1e}, {@code .}, {@code 1d}, {@code +NaN}, {@code 0x10}) is malformed.
   */
  static double parseValue(String token) throws Malformed {
    int n = token.length();
    int i = 0;
    boolean negative = false;
    if (i < n && (token.charAt(i) == '+' || token.charAt(i) == '-')) {
      negative = token.charAt(i) == '-';
      i++;
    }
    String rest = token.substring(i);
    if (rest.equalsIgnoreCase("inf") || rest.equalsIgnoreCase("infinity")) {
      return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
    }
    if (rest.equalsIgnoreCase("nan") && i == 0) {
      return Double.NaN;
    }
    boolean hex = rest.length() >= 2 && rest.charAt(0) == '0' && (rest.charAt(1) == 'x' || rest.charAt(1) == 'X');
    if (rest.indexOf('_') >= 0) {
      if (!underscoresSeparateDigits(rest, hex)) {
        throw MALFORMED;
      }
      rest = rest.replace("_", "");
    }
    int p = hex ? 2 : 0;
    int len = rest.length();
    int mantissaDigits = 0;
    while (p < len && isDigit(rest.charAt(p), hex)) {
      p++;
      mantissaDigits++;
    }
    if (p < len && rest.charAt(p) == '.') {
      p++;
      while (p < len && isDigit(rest.charAt(p), hex)) {
        p++;
        mantissaDigits++;
      }
    }
    if (mantissaDigits == 0) {
      throw MALFORMED; // no digits: "", "-", ".", "--3", "+-3", "0x.p1"
    }
    char exponent = hex ? 'p' : 'e';
    if (p < len && Character.toLowerCase(rest.charAt(p)) == exponent) {
      p++;
      if (p < len && (rest.charAt(p) == '+' || rest.charAt(p) == '-')) {
        p++;
      }
      int exponentDigits = 0;
      while (p < len && isDigit(rest.charAt(p), false)) {
        p++;
        exponentDigits++;
      }
      if (exponentDigits == 0) {
        throw MALFORMED; // "1e", "1e+"
      }
    } else if (hex) {
      throw MALFORMED; // Go requires the 'p' exponent of a hexadecimal mantissa
    }
    if (p != len) {
      throw MALFORMED; // trailing characters: "1d", "1f", "3-", "1.2.3"
    }
    double v;
    try {
      v = Double.parseDouble(rest); // the grammar above is a subset of Java's, without its suffixes
    } catch (NumberFormatException e) {
      throw MALFORMED;
    }
    if (Double.isInfinite(v)) {
      throw MALFORMED; // out of range ("1e400"): Go's ParseFloat fails with ErrRange
    }
    return negative ? -v : v;
  }

  private static boolean isDigit(char c, boolean hex) {
    return (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
  }

  /** Go's rule: each {@code _} follows a digit (or the base prefix) and is followed by a digit. */
  private static boolean underscoresSeparateDigits(String s, boolean hex) {
    char saw = '^'; // '^' start, '0' digit or base prefix, '_' underscore, '!' anything else
    int i = 0;
    if (hex) {
      i = 2;
      saw = '0';
    }
    for (; i < s.length(); i++) {
      char c = s.charAt(i);
      if (isDigit(c, hex)) {
        saw = '0';
      } else if (c == '_') {
        if (saw != '0') {
          return false;
        }
        saw = '_';
      } else {
        if (saw == '_') {
          return false;
        }
        saw = '!';
      }
    }
    return saw != '_';
  }

  private static long parseTimestamp(String token) throws Malformed {
    try {
      return Long.parseLong(token);
    } catch (NumberFormatException e) {
      // OpenMetrics writes seconds with a fraction
      double seconds = parseValue(token);
      if (!Double.isFinite(seconds)) {
        throw MALFORMED;
      }
      return Math.round(seconds * 1000);
    }
  }
}
