package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The Jinja2 features Hugging Face chat templates use, each with the output Jinja2 gives (as transformers renders
 * templates: trim_blocks, lstrip_blocks, one trailing newline of the source dropped).
 */
class ChatTemplateTest {
  private static final Clock CLOCK = Clock.fixed(Instant.parse("2025-03-05T10:00:00Z"), ZoneOffset.UTC);

  private static String render(String template, Map<String, Object> vars) {
    return new ChatTemplate(template, "test template").render(new HashMap<>(vars), CLOCK);
  }

  private static String render(String template) {
    Map<String, Object> vars = new LinkedHashMap<>();
    vars.put("xs", List.of(1, 2, 3, 4));
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("a", 1);
    d.put("b", "two");
    vars.put("d", d);
    vars.put("s", "  Hello World\n");
    vars.put("none", null);
    vars.put("t", true);
    return render(template, vars);
  }

  /**
   * Jinja2 prints a string as itself: quotes, backslashes, escapes, non-ASCII text and template syntax in a message
   * pass through unchanged (never rendered as template code).
   */
  @Test
  void stringsPrintVerbatim() {
    String tricky = "it's \"quoted\" \\ back\\slash \\n not a newline\n a newline \t tab 'x' \u00e9 你好 😀 {{ x }} %}";
    assertEquals(tricky + "|" + tricky, render("{{ v }}|{{ v if v else '' }}", Map.of("v", tricky)));
    assertEquals("{{ raise_exception('injected') }}{% set x = 1 %}",
        render("{{ v }}", Map.of("v", "{{ raise_exception('injected') }}{% set x = 1 %}")));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiterString = " :: ", quoteCharacter = '`', value = {
      "loop controls :: {% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %} :: 13",
      "loop variables :: {% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ 'F' if loop.first }}{{ 'L' if loop.last }}{% endfor %} :: 01F122334L",
      "namespace :: {% set ns = namespace(n=0, last=xs|length - 1) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }},{{ ns.last }} :: 10,3",
      "reverse slice :: {% for x in xs[::-1] %}{{ x }}{% endfor %} :: 4321",
      "slices :: {% for x in xs[1:] %}{{ x }}{% endfor %}/{% for x in xs[:2] %}{{ x }}{% endfor %}/{{ xs[-1] }}/{{ 'hello'[1:3] }} :: 234/12/4/el",
      "dict items :: {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} :: a=1;b=two;",
      "dict keys and get :: {{ d.keys()|list|length }}{{ d.get('b') }}{{ d.get('z', 'none') }} :: 2twonone",
      "membership :: {{ 'yes' if 'a' in d }}{{ 'yes' if 'ell' in 'hello' }}{{ 'no' if 'z' not in d }} :: yesyesno",
      "not binds loosely :: {{ 'A' if not zz is defined }}{{ 'B' if not d.a == 2 }}{{ 'C' if not 'a' in d else 'c' }} :: ABc",
      "string methods :: {{ s.strip() }}|{{ s.lstrip() }}|{{ 'a-b-c'.split('-')[-1] }}|{{ 'X'.lower() }}{{ 'y'.upper() }} :: Hello World|Hello World\\n|c|xY",
      "startswith endswith :: {{ 'T' if s.strip().startswith('Hello') }}{{ 'F' if not s.endswith('x') }} :: TF",
      "tests :: {{ 'S' if s is string }}{{ 'I' if s is iterable }}{{ 'M' if d is mapping }}{{ 'N' if none is none }}{{ 'D' if t is defined }}{{ 'U' if zz is undefined }}{{ 'T' if t is true }}{{ 'f' if t is false }} :: SIMNDUT",
      "filters :: {{ s|trim }}|{{ xs|length }}|{{ xs|join(',') }}|{{ d|tojson }}|{{ xs|first }}{{ xs|last }} :: Hello World|4|1,2,3,4|{\"a\": 1, \"b\": \"two\"}|14",
      "tojson indent :: {{ d|tojson(indent=2) }} :: {\\n  \"a\": 1,\\n  \"b\": \"two\"\\n}",
      "whitespace control :: a  {%- if t -%}  b  {%- endif -%}  c {{- ' d' }} :: abc d",
      "trim_blocks and lstrip_blocks :: `  {% if t %}\\nx\\n  {% endif %}\\ny` :: `x\\ny`",
      "strftime_now :: {{ strftime_now('%d %b %Y') }} {{ 'def' if strftime_now is defined }} :: 05 Mar 2025 def",
      "set block value :: {% set x = xs|length * 2 %}{{ x }} :: 8",
      "macro :: {% macro m(a, b='q') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b='r') }} :: [1q][2r]",
  })
  void rendersAsJinja2(String feature, String template, String expected) {
    assertEquals(expected.replace("\\n", "\n").replace("\\t", "\t"),
        render(template.replace("\\n", "\n").replace("\\t", "\t")), feature);
  }

  @Test
  void oneTrailingNewlineOfTheSourceIsDropped() {
    assertEquals("x", render("x\n"));
    assertEquals("x\n", render("x\n\n"));
  }

  @Test
  void stringLiteralEscapesAreDecoded() {
    assertEquals("a\nb\tit's\\", render("{{ 'a\\nb' }}{{ \"\\t\" }}{{ 'it\\'s' }}{{ '\\\\' }}"));
  }

  @Test
  void raiseExceptionStopsTheRenderWithTheTemplatesMessage() {
    ChatTemplateException e = assertThrows(ChatTemplateException.class,
        () -> render("a{% if t %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}b"));
    assertEquals("Conversation roles must alternate", e.getMessage());
    assertTrue(e.isTemplateRaised());
  }

  @Test
  void unsupportedFeaturesAreNamedWhenTheTemplateLoads() {
    assertTrue(assertThrows(ChatTemplateException.class, () -> new ChatTemplate(
        "{% for m in messages %}{% generation %}{{ m }}{% endgeneration %}{% endfor %}", "t")).getMessage()
        .contains("{% generation %}"));
    assertTrue(assertThrows(ChatTemplateException.class,
        () -> new ChatTemplate("{% for m in xs %}{{ loop.previtem }}{% endfor %}", "t")).getMessage()
        .contains("loop.previtem"));
    assertTrue(assertThrows(ChatTemplateException.class,
        () -> new ChatTemplate("{% for m in xs[::2] %}{{ m }}{% endfor %}", "t")).getMessage()
        .contains("[::2]"));
    assertTrue(assertThrows(ChatTemplateException.class,
        () -> new ChatTemplate("{% filter upper %}x{% endfilter %}", "t")).getMessage()
        .contains("{% filter %}"));
    ChatTemplateException e = assertThrows(ChatTemplateException.class,
        () -> new ChatTemplate("{{ xs | frobnicate }}", "t"));
    assertTrue(e.getMessage().contains("the filter 'frobnicate'"), e.getMessage());
    assertFalse(e.isTemplateRaised());
    assertTrue(assertThrows(ChatTemplateException.class,
        () -> new ChatTemplate("{% if x is not sameish %}{% endif %}", "t")).getMessage()
        .contains("the test 'sameish'"));
    // a '|' inside a string is no filter
    assertEquals("a|b", render("{{ 'a|b' }}"));
  }

  @Test
  void detectsTemplatesThatLoopOverContentParts() {
    assertTrue(new ChatTemplate("{% for m in messages %}{% for p in m['content'] %}{{ p.text }}{% endfor %}"
        + "{% endfor %}", "t").openAiContent());
    assertTrue(new ChatTemplate("{% for message in messages %}{%- for item in message.content -%}{{ item }}"
        + "{%- endfor %}{% endfor %}", "t").openAiContent());
    assertFalse(new ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}", "t").openAiContent());
  }
}
