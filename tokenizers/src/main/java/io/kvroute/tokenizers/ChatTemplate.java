package io.kvroute.tokenizers;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import com.hubspot.jinjava.tree.Node;
import java.time.Clock;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;
import org.jspecify.annotations.Nullable;

/**
 * One Hugging Face chat template, parsed once and rendered with Jinjava configured as transformers configures
 * Jinja2 ({@code trim_blocks}, {@code lstrip_blocks}, no autoescape, one trailing newline of the source dropped,
 * the globals {@code raise_exception} and {@code strftime_now}, Python's string and dict methods); thread-safe:
 * the parsed tree is read-only and every render has its own interpreter.
 *
 * <p>Constructs Jinjava cannot run are rejected when the template is loaded, with the construct named: slices
 * with a step other than {@code [::-1]} (which becomes {@code |reverse}), {@code {% generation %}},
 * {@code loop.previtem}/{@code nextitem}/{@code changed}, {@code {% filter %}} blocks and {@code {% with %}}.
 */
final class ChatTemplate {
  private static final Pattern REVERSE_SLICE = Pattern.compile("\\[\\s*:\\s*:\\s*-1\\s*]");
  private static final Pattern STEP_SLICE = Pattern.compile("\\[[^\\[\\]{}%]*:[^\\[\\]{}%]*:[^\\[\\]{}%]*]");
  private static final Pattern CONTENT_LOOP = Pattern.compile(
      "\\{%-?\\s*for\\s+\\w+\\s+in\\s+\\w+\\s*(?:\\.\\s*content\\b|\\[\\s*['\"]content['\"]\\s*])");
  private static final Pattern TAG = Pattern.compile("\\{%-?\\s*(\\w+)");
  private static final List<String[]> UNSUPPORTED = List.of(
      new String[] {"loop.previtem", "the loop variable loop.previtem"},
      new String[] {"loop.nextitem", "the loop variable loop.nextitem"},
      new String[] {"loop.changed", "the loop function loop.changed()"},
      new String[] {"loop.cycle", "the loop function loop.cycle()"},
      new String[] {"loop.depth", "the loop variable loop.depth"});
  private static final List<String> UNSUPPORTED_TAGS = List.of("generation", "endgeneration", "filter", "with",
      "trans", "pluralize", "autoescape");

  /** The value of the global functions' names as variables. */
  private static final Object GLOBAL_FUNCTION = new Object() {
    @Override
    public String toString() {
      return "<built-in function>";
    }
  };
  private static final ThreadLocal<Render> CURRENT = new ThreadLocal<>();
  private static final Jinjava JINJAVA = newJinjava();
  /**
   * One interpreter per thread, over a root context of its own: Jinjava records resolved names in every ancestor
   * context (in plain HashSets), so renders on several threads must share no context.
   */
  private static final ThreadLocal<JinjavaInterpreter> INTERPRETER = ThreadLocal.withInitial(() -> {
    Context root = new Context();
    registerCompat(root);
    return new JinjavaInterpreter(JINJAVA, root, JINJAVA.getGlobalConfig());
  });

  private final String name;
  private final Node root;
  private final boolean openAiContent;

  /** Per-render state the global functions read. */
  private static final class Render {
    final Clock clock;
    @Nullable String raised;

    Render(Clock clock) {
      this.clock = clock;
    }
  }

  /**
   * Parses a template.
   *
   * @param name where it came from, for messages
   * @throws ChatTemplateException naming the construct if the template uses one Jinjava cannot run or does not
   *     parse
   */
  ChatTemplate(String source, String name) {
    this.name = name;
    String prepared = prepare(source, name);
    this.openAiContent = CONTENT_LOOP.matcher(prepared).find();
    checkFiltersAndTests(prepared, name);
    JinjavaInterpreter interpreter = INTERPRETER.get();
    int errorsBefore = interpreter.getErrors().size();
    JinjavaInterpreter.pushCurrent(interpreter);
    try {
      this.root = interpreter.parse(prepared);
    } catch (RuntimeException e) {
      INTERPRETER.remove();
      throw new ChatTemplateException(name + " does not parse: " + e.getMessage(), false, e);
    } finally {
      JinjavaInterpreter.popCurrent();
    }
    List<TemplateError> errors = interpreter.getErrors();
    if (errors.size() > errorsBefore) {
      INTERPRETER.remove();
      failOnErrors(errors.subList(errorsBefore, errors.size()), "does not parse");
    }
  }

  private static final Pattern CODE = Pattern.compile("(?s)\\{\\{.*?}}|\\{%.*?%}");
  private static final Pattern FILTER = Pattern.compile("\\|\\s*([A-Za-z_]\\w*)");
  private static final Pattern EXP_TEST = Pattern.compile("\\bis\\s+(?:not\\s+)?([A-Za-z_]\\w*)");

  /** Names the first filter or test the template uses that Jinjava does not have (it would silently skip it). */
  private static void checkFiltersAndTests(String template, String name) {
    Context global = JINJAVA.getGlobalContext();
    Matcher code = CODE.matcher(template);
    while (code.find()) {
      String c = stripStrings(code.group());
      Matcher f = FILTER.matcher(c);
      while (f.find()) {
        if (global.getFilter(f.group(1)) == null) {
          throw new ChatTemplateException(name + " uses the filter '" + f.group(1) + "', which is not supported");
        }
      }
      Matcher t = EXP_TEST.matcher(c);
      while (t.find()) {
        if (global.getExpTest(t.group(1)) == null) {
          throw new ChatTemplateException(name + " uses the test '" + t.group(1) + "', which is not supported");
        }
      }
    }
  }

  /** Whether the template loops over a message's content parts (vLLM's "openai" content format). */
  boolean openAiContent() {
    return openAiContent;
  }

  /**
   * Renders the template.
   *
   * @throws ChatTemplateException if the template raises, or Jinjava fails on it (the failure named)
   */
  String render(Map<String, Object> variables, Clock clock) {
    // Jinja2 sees the globals as defined variables ("strftime_now is defined"); Jinjava only as functions
    variables.putIfAbsent("strftime_now", GLOBAL_FUNCTION);
    variables.putIfAbsent("raise_exception", GLOBAL_FUNCTION);
    // An interpreter costs ~100 µs to build (its EL context registers every function): one per thread is kept,
    // and each render runs in a fresh scope of it, dropped afterwards.
    JinjavaInterpreter interpreter = INTERPRETER.get();
    int errorsBefore = interpreter.getErrors().size();
    interpreter.enterScope();
    interpreter.getContext().putAll(variables);
    Render render = new Render(clock);
    Render outer = CURRENT.get();
    CURRENT.set(render);
    JinjavaInterpreter.pushCurrent(interpreter);
    String out;
    try {
      out = interpreter.render(root, false);
    } catch (ChatTemplateException e) {
      INTERPRETER.remove();
      if (render.raised != null) {
        throw new ChatTemplateException(render.raised, true, null);
      }
      throw e;
    } catch (RuntimeException e) {
      INTERPRETER.remove();
      if (render.raised != null) {
        throw new ChatTemplateException(render.raised, true, null);
      }
      throw new ChatTemplateException(name + " failed: " + e.getMessage(), false, e);
    } finally {
      interpreter.leaveScope();
      JinjavaInterpreter.popCurrent();
      if (outer == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(outer);
      }
    }
    if (render.raised != null) {
      INTERPRETER.remove(); // its error list holds this render's errors
      throw new ChatTemplateException(render.raised, true, null);
    }
    List<TemplateError> errors = interpreter.getErrors();
    if (errors.size() > errorsBefore) {
      INTERPRETER.remove();
      failOnErrors(errors.subList(errorsBefore, errors.size()), "failed");
    }
    return out;
  }

  private void failOnErrors(List<TemplateError> errors, String what) {
    for (TemplateError error : errors) {
      Throwable cause = error.getException();
      if (cause instanceof ChatTemplateException e) {
        throw e;
      }
      String item = error.getItem() == null ? "" : error.getItem().name().toLowerCase(Locale.ROOT) + " ";
      String field = error.getFieldName() == null ? "" : "'" + error.getFieldName() + "' ";
      throw new ChatTemplateException(name + " " + what + " (" + item + field + "line " + error.getLineno()
          + "): " + error.getMessage(), false, cause);
    }
  }

  /** Applies Jinja2's source rules and rewrites or rejects what Jinjava would run differently. */
  static String prepare(String source, String name) {
    String s = source.replace("\r\n", "\n").replace('\r', '\n');
    if (s.endsWith("\n")) {
      s = s.substring(0, s.length() - 1); // Jinja2's keep_trailing_newline=False
    }
    for (String[] unsupported : UNSUPPORTED) {
      if (s.contains(unsupported[0])) {
        throw new ChatTemplateException(name + " uses " + unsupported[1] + ", which is not supported");
      }
    }
    Matcher tags = TAG.matcher(s);
    while (tags.find()) {
      if (UNSUPPORTED_TAGS.contains(tags.group(1))) {
        throw new ChatTemplateException(name + " uses the {% " + tags.group(1) + " %} tag, which is not supported");
      }
    }
    s = REVERSE_SLICE.matcher(s).replaceAll("|reverse");
    s = rewriteCode(s);
    Matcher step = STEP_SLICE.matcher(s);
    while (step.find()) {
      if (insideCode(s, step.start()) && !step.group().contains("'") && !step.group().contains("\"")) {
        throw new ChatTemplateException(name + " uses the slice " + step.group()
            + " with a step, which is not supported (only [::-1] is)");
      }
    }
    return s;
  }

  /**
   * Parenthesizes keyword argument values ({@code f(a=x|length - 1)} becomes {@code f(a=(x|length - 1))}): Jinjava
   * binds {@code a=x|length} first, where Jinja2 takes the whole expression as the value.
   */
  static String rewriteCode(String s) {
    StringBuilder out = new StringBuilder(s.length() + 16);
    int i = 0;
    while (i < s.length()) {
      int open = s.indexOf('{', i);
      if (open < 0 || open + 1 >= s.length()) {
        out.append(s, i, s.length());
        break;
      }
      char kind = s.charAt(open + 1);
      if (kind != '{' && kind != '%') {
        out.append(s, i, open + 1);
        i = open + 1;
        continue;
      }
      String closer = kind == '{' ? "}}" : "%}";
      int close = endOfCode(s, open + 2, closer);
      if (close < 0) {
        out.append(s, i, s.length());
        break;
      }
      out.append(s, i, open + 2);
      String code = s.substring(open + 2, close);
      String tag = code.strip().replaceFirst("^[-+]", "").strip();
      boolean definition = tag.startsWith("macro") || tag.startsWith("call");
      out.append(definition ? code : wrapNot(wrapKeywords(code)));
      i = close;
    }
    return out.toString();
  }

  /** The index of {@code closer} after {@code from}, outside string literals, or -1. */
  private static int endOfCode(String s, int from, String closer) {
    for (int i = from; i < s.length(); i++) {
      if (isQuote(s.charAt(i))) {
        i = afterString(s, i) - 1;
      } else if (s.startsWith(closer, i)) {
        return i;
      }
    }
    return -1;
  }

  private static boolean isQuote(char c) {
    return c == '\'' || c == '"';
  }

  /**
   * The index after the string literal whose opening quote is at {@code at} (a backslash escapes the next
   * character), or the length of {@code s} if it does not close.
   */
  private static int afterString(String s, int at) {
    char quote = s.charAt(at);
    for (int i = at + 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\') {
        i++;
      } else if (c == quote) {
        return i + 1;
      }
    }
    return s.length();
  }

  private static String wrapKeywords(String code) {
    StringBuilder out = new StringBuilder(code.length() + 8);
    int i = 0;
    while (i < code.length()) {
      char c = code.charAt(i);
      if (isQuote(c)) {
        int end = afterString(code, i);
        out.append(code, i, end);
        i = end;
      } else if (c == '(' && i > 0 && (Character.isLetterOrDigit(code.charAt(i - 1)) || code.charAt(i - 1) == '_')) {
        int close = matching(code, i);
        if (close < 0) {
          out.append(code.substring(i));
          break;
        }
        out.append('(');
        List<String> args = splitArgs(code.substring(i + 1, close));
        for (int a = 0; a < args.size(); a++) {
          String arg = args.get(a);
          Matcher kw = KEYWORD_ARG.matcher(arg);
          out.append(a == 0 ? "" : ",");
          if (kw.matches() && !kw.group(2).isBlank()) {
            out.append(kw.group(1)).append('(').append(wrapKeywords(kw.group(2))).append(')');
          } else {
            out.append(wrapKeywords(arg));
          }
        }
        out.append(')');
        i = close + 1;
      } else {
        out.append(c);
        i++;
      }
    }
    return out.toString();
  }

  private static final Pattern NOT = Pattern.compile("\\bnot\\s+");
  private static final Pattern STOP_WORD = Pattern.compile("(and|or|if|else|not)\\b");
  private static final Pattern COMPARISON = Pattern.compile("\\s(is|in)\\s|==|!=|<|>");

  /**
   * Parenthesizes the operand of {@code not} up to the next {@code and}/{@code or}: in Jinja2 {@code not} binds
   * looser than {@code is}, {@code in} and comparisons ({@code not x is defined} is {@code not (x is defined)}),
   * in Jinjava tighter.
   */
  static String wrapNot(String code) {
    Matcher m = NOT.matcher(code);
    StringBuilder out = new StringBuilder(code.length() + 8);
    int from = 0;
    while (m.find(from)) {
      int start = m.end();
      if (insideString(code, m.start()) || (m.start() > 0 && code.charAt(m.start() - 1) == '.')) {
        out.append(code, from, start);
        from = start;
        continue;
      }
      int end = operandEnd(code, start);
      String operand = code.substring(start, end);
      out.append(code, from, start);
      if (COMPARISON.matcher(stripStrings(operand)).find() && !operand.isBlank()) {
        String trimmed = operand.stripTrailing();
        out.append('(').append(wrapNot(trimmed)).append(')').append(operand.substring(trimmed.length()));
      } else {
        out.append(wrapNot(operand));
      }
      from = end;
    }
    out.append(code.substring(from));
    return out.toString();
  }

  private static boolean insideString(String code, int at) {
    for (int i = 0; i < at; i++) {
      if (isQuote(code.charAt(i))) {
        int end = afterString(code, i);
        if (end > at) {
          return true;
        }
        i = end - 1;
      }
    }
    return false;
  }

  private static String stripStrings(String code) {
    return code.replaceAll("'(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\"", "''");
  }

  /** The end of the operand starting at {@code from}: a top-level and/or/if/else, a closing bracket, a comma. */
  private static int operandEnd(String code, int from) {
    int end = scan(code, from, (i, c, depth) -> depth < 0 || (depth == 0 && c == ',')
        || (depth == 0 && i > from && wordStart(code, i) && stopWord(code, i)));
    return end < 0 ? code.length() : end;
  }

  private static boolean stopWord(String code, int i) {
    Matcher stop = STOP_WORD.matcher(code).region(i, code.length());
    return stop.lookingAt() && !stop.group(1).equals("not");
  }

  /** Decides at each character outside string literals whether {@link #scan} stops there. */
  private interface Stop {
    /**
     * @param depth the bracket depth: of the bracket itself for an opening or closing one, -1 for a closing
     *     bracket that matches none after {@code from}
     */
    boolean at(int index, char c, int depth);
  }

  /** The first index from {@code from} where {@code stop} says so, skipping string literals, or -1. */
  private static int scan(String code, int from, Stop stop) {
    int depth = 0;
    for (int i = from; i < code.length(); i++) {
      char c = code.charAt(i);
      if (isQuote(c)) {
        i = afterString(code, i) - 1;
        continue;
      }
      boolean close = c == ')' || c == ']' || c == '}';
      if (close) {
        depth--;
      }
      if (stop.at(i, c, depth)) {
        return i;
      }
      if (!close && (c == '(' || c == '[' || c == '{')) {
        depth++;
      }
    }
    return -1;
  }

  private static boolean wordStart(String code, int i) {
    char prev = code.charAt(i - 1);
    return !(Character.isLetterOrDigit(prev) || prev == '_' || prev == '.');
  }

  private static final Pattern KEYWORD_ARG = Pattern.compile("(?s)(\\s*[A-Za-z_]\\w*\\s*=)(?!=)(.*)");

  /** The index of the parenthesis closing the one at {@code open}, or -1 (also if another bracket closes it). */
  private static int matching(String code, int open) {
    int end = scan(code, open, (i, c, depth) -> depth == 0 && (c == ')' || c == ']' || c == '}'));
    return end >= 0 && code.charAt(end) == ')' ? end : -1;
  }

  private static List<String> splitArgs(String inner) {
    List<String> args = new java.util.ArrayList<>();
    int[] start = {0};
    scan(inner, 0, (i, c, depth) -> {
      if (c == ',' && depth == 0) {
        args.add(inner.substring(start[0], i));
        start[0] = i + 1;
      }
      return false;
    });
    args.add(inner.substring(start[0]));
    return args;
  }

  /** Whether {@code at} lies inside a {@code {{ }}} or {@code {% %}} block. */
  private static boolean insideCode(String s, int at) {
    int open = Math.max(s.lastIndexOf("{{", at), s.lastIndexOf("{%", at));
    int close = Math.max(s.lastIndexOf("}}", at), s.lastIndexOf("%}", at));
    return open > close;
  }

  private static Jinjava newJinjava() {
    CompositeELResolver resolver = new CompositeELResolver();
    resolver.add(new PyCompat.MethodResolver());
    resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
    JinjavaConfig config = JinjavaConfig.newBuilder()
        .withTrimBlocks(true)
        .withLstripBlocks(true)
        .withElResolver(resolver)
        .withLegacyOverrides(LegacyOverrides.newBuilder()
            .withUseNaturalOperatorPrecedence(true)
            .withParseWhitespaceControlStrictly(true)
            .withUseTrimmingForNotesAndExpressions(true)
            .withUsePyishObjectMapper(true)
            .withIterateOverMapKeys(true)
            .withKeepNullableLoopValues(true)
            .withHandleBackslashInQuotesOnly(true)
            .withDefaultKeepTrailingNewlineBehavior(false)
            .build())
        .withMaxOutputSize(64L << 20)
        .build();
    Jinjava jinjava = new Jinjava(config);
    registerCompat(jinjava.getGlobalContext()); // read for the function mapper and the load-time name checks
    return jinjava;
  }

  private static void registerCompat(Context global) {
    global.registerFilter(new PyCompat.ToJsonFilter());
    global.registerFilter(new PyCompat.TrimFilter());
    global.registerExpTest(new PyCompat.IterableTest("iterable"));
    global.registerExpTest(new PyCompat.IterableTest("sequence"));
    global.registerFunction(new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException",
        Object.class));
    global.registerFunction(new ELFunctionDefinition("", "strftime_now", ChatTemplate.class, "strftimeNow",
        String.class));
  }

  /** The template global {@code raise_exception(message)}. */
  public static Object raiseException(Object message) {
    Render render = CURRENT.get();
    String text = String.valueOf(message);
    if (render != null && render.raised == null) {
      render.raised = text;
    }
    throw new ChatTemplateException(text, true, null);
  }

  /** The template global {@code strftime_now(format)}: the render clock's time, formatted as Python would. */
  public static String strftimeNow(String format) {
    Render render = CURRENT.get();
    Clock clock = render != null ? render.clock : Clock.systemDefaultZone();
    return StrftimeFormatter.format(ZonedDateTime.now(clock), format, Locale.ENGLISH);
  }
}
