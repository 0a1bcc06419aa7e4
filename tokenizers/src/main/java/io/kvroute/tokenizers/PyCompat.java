package io.kvroute.tokenizers;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import com.hubspot.jinjava.lib.filter.AdvancedFilter;
import com.hubspot.jinjava.objects.SafeString;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;
import org.jspecify.annotations.Nullable;

/**
 * What Jinja2 templates written for Python expect and Jinjava lacks: Python's {@code str} and {@code dict} methods
 * ({@code startswith}, {@code split}, {@code strip}, {@code items()}, ...), the {@code tojson} and {@code trim}
 * filters with Python's semantics, and the {@code iterable}/{@code sequence} tests that count strings; stateless,
 * thread-safe.
 */
final class PyCompat {
  private PyCompat() {}

  /** Python's {@code str.isspace} for one char (CPython: bidirectional types WS, B, S, and category Zs). */
  static boolean isSpace(char c) {
    return Character.isWhitespace(c) || c == '\u0085' || c == '\u00a0' || c == '\u2007' || c == '\u202f';
  }

  static String strip(String s, @Nullable String chars, boolean left, boolean right) {
    int start = 0;
    int end = s.length();
    while (left && start < end && stripped(s.charAt(start), chars)) {
      start++;
    }
    while (right && end > start && stripped(s.charAt(end - 1), chars)) {
      end--;
    }
    return s.substring(start, end);
  }

  private static boolean stripped(char c, @Nullable String chars) {
    return chars == null ? isSpace(c) : chars.indexOf(c) >= 0;
  }

  /** Python's {@code str.split(sep, maxsplit)}. */
  static List<String> split(String s, @Nullable String sep, int maxsplit) {
    List<String> out = new ArrayList<>();
    if (sep == null) {
      int i = 0;
      int n = s.length();
      while (true) {
        while (i < n && isSpace(s.charAt(i))) {
          i++;
        }
        if (i >= n) {
          break;
        }
        if (maxsplit >= 0 && out.size() == maxsplit) {
          out.add(s.substring(i));
          break;
        }
        int j = i;
        while (j < n && !isSpace(s.charAt(j))) {
          j++;
        }
        out.add(s.substring(i, j));
        i = j;
      }
      return out;
    }
    if (sep.isEmpty()) {
      throw new ChatTemplateException("split: empty separator");
    }
    int from = 0;
    while (maxsplit < 0 || out.size() < maxsplit) {
      int at = s.indexOf(sep, from);
      if (at < 0) {
        break;
      }
      out.add(s.substring(from, at));
      from = at + sep.length();
    }
    out.add(s.substring(from));
    return out;
  }

  /** Python's {@code str.rsplit(sep, maxsplit)} for an explicit separator. */
  static List<String> rsplit(String s, @Nullable String sep, int maxsplit) {
    if (sep == null || maxsplit < 0) {
      return split(s, sep, maxsplit);
    }
    List<String> out = new ArrayList<>();
    int to = s.length();
    while (out.size() < maxsplit) {
      int at = s.lastIndexOf(sep, to - sep.length());
      if (at < 0) {
        break;
      }
      out.add(0, s.substring(at + sep.length(), to));
      to = at;
    }
    out.add(0, s.substring(0, to));
    return out;
  }

  /** Python truthiness. */
  static boolean truthy(@Nullable Object v) {
    if (v == null) {
      return false;
    }
    if (v instanceof Boolean b) {
      return b;
    }
    if (v instanceof String s) {
      return !s.isEmpty();
    }
    if (v instanceof Number n) {
      return n.doubleValue() != 0;
    }
    if (v instanceof Collection<?> c) {
      return !c.isEmpty();
    }
    if (v instanceof Map<?, ?> m) {
      return !m.isEmpty();
    }
    return true;
  }

  private static @Nullable String optString(Object[] params, int i, String method) {
    if (params.length <= i || params[i] == null) {
      return null;
    }
    if (params[i] instanceof String s) {
      return s;
    }
    throw new ChatTemplateException(method + ": argument " + (i + 1) + " must be a string, not "
        + params[i].getClass().getSimpleName());
  }

  private static int optInt(Object[] params, int i, int fallback) {
    return params.length > i && params[i] instanceof Number n ? n.intValue() : fallback;
  }

  private static boolean matchesAffix(String s, Object affix, boolean prefix, String method) {
    if (affix instanceof String a) {
      return prefix ? s.startsWith(a) : s.endsWith(a);
    }
    if (affix instanceof Iterable<?> options) {
      for (Object o : options) {
        if (matchesAffix(s, o, prefix, method)) {
          return true;
        }
      }
      return false;
    }
    throw new ChatTemplateException(method + ": argument must be a string or a tuple of strings");
  }

  /** Calls {@code method} on a Python {@code str}, or returns {@link #NO_SUCH_METHOD}. */
  static Object strMethod(String s, String method, Object[] params) {
    switch (method) {
      case "startswith":
      case "endswith": {
        if (params.length < 1) {
          throw new ChatTemplateException(method + "() takes at least 1 argument");
        }
        int start = optInt(params, 1, 0);
        int end = optInt(params, 2, s.length());
        String sub = s.substring(Math.max(0, Math.min(start, s.length())), Math.max(0, Math.min(end, s.length())));
        return matchesAffix(sub, params[0], method.equals("startswith"), method);
      }
      case "strip":
        return strip(s, optString(params, 0, method), true, true);
      case "lstrip":
        return strip(s, optString(params, 0, method), true, false);
      case "rstrip":
        return strip(s, optString(params, 0, method), false, true);
      case "split":
        return split(s, optString(params, 0, method), optInt(params, 1, -1));
      case "rsplit":
        return rsplit(s, optString(params, 0, method), optInt(params, 1, -1));
      case "splitlines": {
        List<String> lines = new ArrayList<>();
        int from = 0;
        for (int i = 0; i < s.length(); i++) {
          char c = s.charAt(i);
          if (c == '\n' || c == '\r') {
            lines.add(s.substring(from, i));
            if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') {
              i++;
            }
            from = i + 1;
          }
        }
        if (from < s.length()) {
          lines.add(s.substring(from));
        }
        return lines;
      }
      case "upper":
        return s.toUpperCase(Locale.ROOT);
      case "lower":
        return s.toLowerCase(Locale.ROOT);
      case "capitalize":
        return s.isEmpty() ? s : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
      case "title":
        return title(s);
      case "replace": {
        String old = optString(params, 0, method);
        String rep = optString(params, 1, method);
        if (old == null || rep == null) {
          throw new ChatTemplateException("replace() takes 2 string arguments");
        }
        int count = optInt(params, 2, -1);
        if (count < 0) {
          return s.replace(old, rep);
        }
        StringBuilder out = new StringBuilder();
        int from = 0;
        for (int n = 0; n < count; n++) {
          int at = s.indexOf(old, from);
          if (at < 0) {
            break;
          }
          out.append(s, from, at).append(rep);
          from = at + old.length();
        }
        return out.append(s.substring(from)).toString();
      }
      case "find":
        return s.indexOf(require(optString(params, 0, method), method));
      case "rfind":
        return s.lastIndexOf(require(optString(params, 0, method), method));
      case "count": {
        String sub = require(optString(params, 0, method), method);
        if (sub.isEmpty()) {
          return s.length() + 1;
        }
        int n = 0;
        for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
          n++;
        }
        return n;
      }
      case "join": {
        if (params.length != 1 || !(params[0] instanceof Iterable<?> items)) {
          throw new ChatTemplateException("join() takes one iterable");
        }
        StringBuilder out = new StringBuilder();
        boolean first = true;
        for (Object o : items) {
          if (!(unwrap(o) instanceof String x)) {
            throw new ChatTemplateException("join(): sequence item is not a string but " + o);
          }
          out.append(first ? "" : s).append(x);
          first = false;
        }
        return out.toString();
      }
      case "isdigit":
        return !s.isEmpty() && s.chars().allMatch(Character::isDigit);
      case "isalpha":
        return !s.isEmpty() && s.chars().allMatch(Character::isLetter);
      case "isspace":
        return !s.isEmpty() && s.chars().allMatch(c -> isSpace((char) c));
      case "islower":
        return !s.equals(s.toUpperCase(Locale.ROOT)) && s.equals(s.toLowerCase(Locale.ROOT));
      case "isupper":
        return !s.equals(s.toLowerCase(Locale.ROOT)) && s.equals(s.toUpperCase(Locale.ROOT));
      default:
        return NO_SUCH_METHOD;
    }
  }

  private static String require(@Nullable String s, String method) {
    if (s == null) {
      throw new ChatTemplateException(method + "() takes a string argument");
    }
    return s;
  }

  private static String title(String s) {
    StringBuilder out = new StringBuilder(s.length());
    boolean prevCased = false;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      out.append(prevCased ? Character.toLowerCase(c) : Character.toUpperCase(c));
      prevCased = Character.isLetter(c);
    }
    return out.toString();
  }

  /** Calls {@code method} on a Python {@code dict}, or returns {@link #NO_SUCH_METHOD}. */
  static Object dictMethod(Map<?, ?> map, String method, Object[] params) {
    switch (method) {
      case "items": {
        List<List<Object>> items = new ArrayList<>(map.size());
        map.forEach((k, v) -> {
          List<Object> pair = new ArrayList<>(2);
          pair.add(k);
          pair.add(v);
          items.add(pair);
        });
        return items;
      }
      case "keys":
        return new ArrayList<>(map.keySet());
      case "values":
        return new ArrayList<>(map.values());
      case "get":
        if (params.length < 1) {
          throw new ChatTemplateException("get() takes at least 1 argument");
        }
        return map.containsKey(params[0]) ? map.get(params[0]) : params.length > 1 ? params[1] : null;
      default:
        return NO_SUCH_METHOD;
    }
  }

  static final Object NO_SUCH_METHOD = new Object();

  /** Resolves Python method calls on strings, dicts and lists before Jinjava's own resolvers try Java methods. */
  static final class MethodResolver extends ELResolver {
    @Override
    public @Nullable Object invoke(ELContext context, @Nullable Object base, Object method,
        Class<?>[] paramTypes, Object[] params) {
      if (base == null || !(method instanceof String name)) {
        return null;
      }
      Object[] args = params == null ? new Object[0] : params;
      Object result = NO_SUCH_METHOD;
      if (base instanceof SafeString safe) {
        base = safe.toString();
      }
      if (base instanceof String s) {
        result = strMethod(s, name, args);
      } else if (base instanceof Map<?, ?> map && !map.containsKey(name)) {
        result = dictMethod(map, name, args);
      } else if (base instanceof List<?> list && name.equals("append") && args.length == 1) {
        @SuppressWarnings("unchecked")
        List<Object> mutable = (List<Object>) list;
        mutable.add(args[0]);
        result = "";
      }
      if (result == NO_SUCH_METHOD) {
        return null;
      }
      context.setPropertyResolved(true);
      return result;
    }

    @Override
    public @Nullable Object getValue(ELContext context, @Nullable Object base, Object property) {
      return null;
    }

    @Override
    public @Nullable Class<?> getType(ELContext context, @Nullable Object base, Object property) {
      return null;
    }

    @Override
    public void setValue(ELContext context, @Nullable Object base, Object property, Object value) {}

    @Override
    public boolean isReadOnly(ELContext context, @Nullable Object base, Object property) {
      return true;
    }

    @Override
    public @Nullable Iterator<java.beans.FeatureDescriptor> getFeatureDescriptors(ELContext context,
        @Nullable Object base) {
      return null;
    }

    @Override
    public @Nullable Class<?> getCommonPropertyType(ELContext context, @Nullable Object base) {
      return null;
    }
  }

  /** {@code tojson(indent=None, separators=None, sort_keys=False)}, as Hugging Face's chat templates define it. */
  static final class ToJsonFilter implements AdvancedFilter {
    @Override
    public String getName() {
      return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object indent = kwargs.containsKey("indent") ? kwargs.get("indent") : args.length > 0 ? args[0] : null;
      int n = indent instanceof Number num ? num.intValue() : -1;
      String item = null;
      String key = null;
      if (kwargs.get("separators") instanceof List<?> seps && seps.size() == 2) {
        item = String.valueOf(seps.get(0));
        key = String.valueOf(seps.get(1));
      }
      boolean sort = PyCompat.truthy(kwargs.get("sort_keys"));
      return new SafeString(PyJson.dumps(unwrap(var), n, item, key, sort));
    }
  }

  /** Jinja2's {@code trim(chars=None)}: Python's {@code str.strip}. */
  static final class TrimFilter implements AdvancedFilter {
    @Override
    public String getName() {
      return "trim";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object chars = kwargs.containsKey("chars") ? kwargs.get("chars") : args.length > 0 ? args[0] : null;
      String s = var == null ? "None" : var instanceof String str ? str : var.toString();
      return strip(s, chars == null ? null : chars.toString(), true, true);
    }
  }

  /** Python's {@code iterable}: strings, lists and dicts; or {@code sequence}: strings and lists (and dicts). */
  static final class IterableTest implements ExpTest {
    private final String name;

    IterableTest(String name) {
      this.name = name;
    }

    @Override
    public String getName() {
      return name;
    }

    @Override
    public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
      Object v = unwrap(var);
      return v instanceof String || v instanceof Iterable<?> || v instanceof Map<?, ?>
          || (v != null && v.getClass().isArray());
    }
  }

  static @Nullable Object unwrap(@Nullable Object v) {
    return v instanceof SafeString s ? s.toString() : v;
  }
}
