package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Python's semantics, as CPython 3.12 documents and prints them; each expected value is CPython's output. */
class PyCompatTest {
  @Test
  void splitFollowsPython() {
    assertEquals(List.of("a", "b"), PyCompat.split("  a \t b  ", null, -1));
    assertEquals(List.of("a", "", "b"), PyCompat.split("a,,b", ",", -1));
    assertEquals(List.of("", "a", ""), PyCompat.split(",a,", ",", -1));
    assertEquals(List.of("1", "2   3   "), PyCompat.split("   1   2   3   ", null, 1));
    assertEquals(List.of("a", "b,c"), PyCompat.split("a,b,c", ",", 1));
    assertEquals(List.of("a,b", "c"), PyCompat.rsplit("a,b,c", ",", 1));
    assertEquals(List.of(), PyCompat.split("   ", null, -1));
    assertEquals(List.of("x"), PyCompat.split("x", "</think>", -1));
    assertEquals(List.of("<think>\nr\n", "\n\nanswer"), PyCompat.split("<think>\nr\n</think>\n\nanswer", "</think>", -1));
    assertThrows(ChatTemplateException.class, () -> PyCompat.split("a", "", -1));
  }

  @Test
  void stripTakesOnlyTheGivenCharacters() {
    assertEquals(" hi ", PyCompat.strip("\n\n hi \n", "\n", true, true));
    assertEquals("hi \n", PyCompat.strip("\n\nhi \n", "\n", true, false));
    assertEquals("\n\n hi", PyCompat.strip("\n\n hi \n", " \n", false, true));
    assertEquals("hi", PyCompat.strip("xxhixy", "xy", true, true));
    // str.strip() removes Unicode whitespace, including no-break and ideographic spaces
    assertEquals("hi", PyCompat.strip(" \u00a0\t hi\u3000\u2007\n", null, true, true));
    assertEquals("\u200bhi", PyCompat.strip("\u200bhi ", null, true, true)); // zero width space is not space
  }

  @Test
  void stringMethodsThroughTheResolver() {
    assertEquals(true, PyCompat.strMethod("<tool_response>x", "startswith", new Object[] {"<tool_response>"}));
    assertEquals(true, PyCompat.strMethod("abc", "endswith", new Object[] {List.of("x", "bc")}));
    assertEquals(false, PyCompat.strMethod("abc", "startswith", new Object[] {"b", 0}));
    assertEquals(true, PyCompat.strMethod("abc", "startswith", new Object[] {"b", 1}));
    assertEquals("Hello World", PyCompat.strMethod("hello world", "title", new Object[0]));
    assertEquals("a-b.c", PyCompat.strMethod("a.b.c", "replace", new Object[] {".", "-", 1}));
    assertEquals(2, PyCompat.strMethod("a.b.c", "count", new Object[] {"."}));
    assertEquals("a, b", PyCompat.strMethod(", ", "join", new Object[] {List.of("a", "b")}));
    assertEquals(List.of("a", "", "b"), PyCompat.strMethod("a\n\r\nb\n", "splitlines", new Object[0]));
    assertEquals(PyCompat.NO_SUCH_METHOD, PyCompat.strMethod("a", "frobnicate", new Object[0]));
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("a", 1);
    d.put("b", 2);
    assertEquals(List.of(List.of("a", 1), List.of("b", 2)), PyCompat.dictMethod(d, "items", new Object[0]));
    assertEquals("z", PyCompat.dictMethod(d, "get", new Object[] {"c", "z"}));
    assertEquals(null, PyCompat.dictMethod(d, "get", new Object[] {"c"}));
  }

  @Test
  void jsonDumpsLikePython() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("b", Arrays.asList(1, 2.5, true, null));
    m.put("a", new LinkedHashMap<>());
    m.put("s", "é\n\"\\\u0001\t");
    m.put("e", new ArrayList<>());
    // json.dumps(m, ensure_ascii=False)
    assertEquals("{\"b\": [1, 2.5, true, null], \"a\": {}, \"s\": \"é\\n\\\"\\\\\\u0001\\t\", \"e\": []}",
        PyJson.dumps(m));
    // json.dumps(m, ensure_ascii=False, indent=2)
    assertEquals("{\n  \"b\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"a\": {},\n"
        + "  \"s\": \"é\\n\\\"\\\\\\u0001\\t\",\n  \"e\": []\n}", PyJson.dumps(m, 2, null, null, false));
    // json.dumps(m, sort_keys=True, separators=(",", ":"))
    assertEquals("{\"a\":{},\"b\":[1,2.5,true,null],\"e\":[],\"s\":\"é\\n\\\"\\\\\\u0001\\t\"}",
        PyJson.dumps(m, -1, ",", ":", true));
  }

  @Test
  void floatsPrintAsPythonRepr() {
    assertEquals("1.0", PyJson.floatRepr(1.0));
    assertEquals("0.1", PyJson.floatRepr(0.1));
    assertEquals("-2.5", PyJson.floatRepr(-2.5));
    assertEquals("1e-05", PyJson.floatRepr(1e-5));
    assertEquals("0.0001", PyJson.floatRepr(1e-4));
    assertEquals("1e+16", PyJson.floatRepr(1e16));
    assertEquals("1234567890123456.0", PyJson.floatRepr(1234567890123456.0));
    assertEquals("1.5e+300", PyJson.floatRepr(1.5e300));
    assertEquals("3.141592653589793", PyJson.floatRepr(Math.PI));
    assertEquals("-0.0", PyJson.floatRepr(-0.0));
    assertEquals("NaN", PyJson.floatRepr(Double.NaN));
  }
}
