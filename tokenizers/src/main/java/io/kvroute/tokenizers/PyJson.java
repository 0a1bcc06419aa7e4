package io.kvroute.tokenizers;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jspecify.annotations.Nullable;

/**
 * Python's {@code json.dumps} as Hugging Face's chat templates call it through their {@code tojson} filter
 * ({@code ensure_ascii=False}, optional {@code indent}, {@code separators}, {@code sort_keys}); stateless,
 * thread-safe.
 *
 * <p>Output rules (CPython's {@code json} encoder): without indent the separators are {@code ", "} and
 * {@code ": "}, with indent {@code ","} and {@code ": "}; strings escape {@code "}, {@code \}, and control
 * characters below U+0020 (as {@code \n}, {@code \r}, {@code \t}, {@code \b}, {@code \f} or {@code \\u00XX}) and
 * keep everything else as is; floats print as Python's {@code repr}; empty lists and objects print as {@code []}
 * and {@code {}} even when indented.
 */
final class PyJson {
  private PyJson() {}

  static String dumps(@Nullable Object value, int indent, @Nullable String itemSeparator,
      @Nullable String keySeparator, boolean sortKeys) {
    String item = itemSeparator != null ? itemSeparator : indent >= 0 ? "," : ", ";
    String key = keySeparator != null ? keySeparator : ": ";
    StringBuilder out = new StringBuilder();
    write(out, value, indent, item, key, sortKeys, 0);
    return out.toString();
  }

  static String dumps(@Nullable Object value) {
    return dumps(value, -1, null, null, false);
  }

  private static void write(StringBuilder out, @Nullable Object v, int indent, String item, String key,
      boolean sortKeys, int depth) {
    if (v == null) {
      out.append("null");
    } else if (v instanceof String s) {
      quote(out, s);
    } else if (v instanceof Boolean b) {
      out.append(b ? "true" : "false");
    } else if (v instanceof Double || v instanceof Float) {
      out.append(floatRepr(((Number) v).doubleValue()));
    } else if (v instanceof BigDecimal d) {
      out.append(floatRepr(d.doubleValue()));
    } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
        || v instanceof BigInteger) {
      out.append(v);
    } else if (v instanceof Map<?, ?> map) {
      if (map.isEmpty()) {
        out.append("{}");
        return;
      }
      Map<?, ?> entries = map;
      if (sortKeys) {
        TreeMap<String, Object> sorted = new TreeMap<>();
        map.forEach((k, x) -> sorted.put(String.valueOf(k), x));
        entries = sorted;
      }
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : entries.entrySet()) {
        if (!first) {
          out.append(item);
        }
        first = false;
        newline(out, indent, depth + 1);
        Object k = e.getKey();
        quote(out, k instanceof String s ? s : keyString(k));
        out.append(key);
        write(out, e.getValue(), indent, item, key, sortKeys, depth + 1);
      }
      newline(out, indent, depth);
      out.append('}');
    } else if (v instanceof Iterable<?> || v instanceof Object[]) {
      List<Object> list = new ArrayList<>();
      if (v instanceof Object[] array) {
        list.addAll(List.of(array));
      } else {
        ((Iterable<?>) v).forEach(list::add);
      }
      if (list.isEmpty()) {
        out.append("[]");
        return;
      }
      out.append('[');
      for (int i = 0; i < list.size(); i++) {
        if (i > 0) {
          out.append(item);
        }
        newline(out, indent, depth + 1);
        write(out, list.get(i), indent, item, key, sortKeys, depth + 1);
      }
      newline(out, indent, depth);
      out.append(']');
    } else if (v instanceof Number n) {
      out.append(floatRepr(n.doubleValue()));
    } else {
      throw new ChatTemplateException("tojson: a " + v.getClass().getSimpleName() + " is not JSON serializable");
    }
  }

  private static String keyString(@Nullable Object k) {
    if (k == null) {
      return "null";
    }
    if (k instanceof Boolean b) {
      return b ? "true" : "false";
    }
    if (k instanceof Double d) {
      return floatRepr(d);
    }
    return k.toString();
  }

  private static void newline(StringBuilder out, int indent, int depth) {
    if (indent >= 0) {
      out.append('\n');
      out.append(" ".repeat(indent * depth));
    }
  }

  static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /** Python's {@code repr(float)}: the shortest round-trip digits, scientific below 1e-4 and from 1e16 on. */
  static String floatRepr(double d) {
    if (Double.isNaN(d)) {
      return "NaN";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "Infinity" : "-Infinity";
    }
    if (d == 0) {
      return (1 / d < 0) ? "-0.0" : "0.0";
    }
    // Double.toString gives the shortest digits that round-trip (JDK 19+; close enough before): re-lay them out.
    BigDecimal exact = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
    String digits = exact.unscaledValue().toString();
    int exponent = digits.length() - 1 - exact.scale(); // decimal exponent of the first digit
    String sign = d < 0 ? "-" : "";
    if (exponent < -4 || exponent >= 16) {
      String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
      return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + (Math.abs(exponent) < 10 ? "0" : "")
          + Math.abs(exponent);
    }
    String plain = exact.toPlainString();
    return sign + (plain.contains(".") ? plain : plain + ".0");
  }
}
