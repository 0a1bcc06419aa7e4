package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The pure-Java encoder ({@link ByteLevelBpe}) against the Hugging Face Rust library (through DJL) on the same
 * {@code tokenizer.json}: every golden text, seeded random strings built to hit each branch of the pre-tokenizer
 * regex (mixed scripts, emoji, whitespace runs, contractions in any case, digits of several scripts, special-token
 * text, combining marks that NFC composes, random code points), and a sweep over code points in contexts that expose
 * their regex class (all of the Basic Multilingual Plane, and the edges of every class run above it). The Rust library is the reference: any difference fails.
 */
class JavaEncoderTest {
  private static final Map<String, TextEncoder[]> ENCODERS = new ConcurrentHashMap<>();

  /** {java, native} for a family. */
  private static TextEncoder[] encoders(String family) {
    return ENCODERS.computeIfAbsent(family, f -> {
      try {
        TokenizerFiles files = TestModels.files(f);
        NativeTokenizer reference = NativeTokenizer.load(files.tokenizerJsonText, files.tokenizerJson);
        // texts with code points unassigned in Unicode 13.0 go to the reference itself, as in Engine.AUTO
        ByteLevelBpe.Result java = ByteLevelBpe.create(files.tokenizerJsonText, files.addedTokens,
            (text, special, cp) -> reference.encode(text, special));
        assertTrue(java.encoder() != null, f + ": " + java.unsupported());
        return new TextEncoder[] {java.encoder(), reference};
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  private static void assertSame(String family, String text, String what) {
    TextEncoder[] e = encoders(family);
    for (boolean special : new boolean[] {false, true}) {
      int[] expected = e[1].encode(text, special);
      int[] actual = e[0].encode(text, special);
      if (!java.util.Arrays.equals(expected, actual)) {
        assertArrayEquals(expected, actual, family + " " + what + " (add_special_tokens=" + special + "): "
            + escape(text));
      }
    }
  }

  private static String escape(String s) {
    StringBuilder sb = new StringBuilder();
    s.codePoints().forEach(cp -> {
      if (cp >= 0x20 && cp < 0x7f) {
        sb.appendCodePoint(cp);
      } else {
        sb.append(String.format("\\u{%x}", cp));
      }
    });
    return sb.length() > 2000 ? sb.substring(0, 2000) + "..." : sb.toString();
  }

  @Test
  void bothFixturesUseTheJavaEncoderByDefault() {
    assertEquals("java", TestModels.shared(TestModels.QWEN3).encoderKind());
    assertEquals("java", TestModels.shared(TestModels.LLAMA).encoderKind());
  }

  @Test
  void everyGoldenTextEncodesTheSame() throws IOException {
    int n = 0;
    try (InputStream in = new GZIPInputStream(TestModels.resource("golden.json.gz"))) {
      for (JsonNode c : TokenizerFiles.JSON.readTree(in).get("cases")) {
        String family = c.get("family").asText();
        String text = c.has("text") ? c.get("text").asText() : c.path("body").path("prompt").asText(null);
        if (text != null) {
          assertSame(family, text, c.get("name").asText());
          n++;
        }
      }
    }
    assertTrue(n >= 300, "golden texts: " + n);
  }

  private static final String[] POOL = {
      "the", "The", "THE", "router", "cache", " ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\t\n\t",
      "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'Ll", "'d", "'D",
      "'\u017f", "'x", "''", "don't", "I'M", "you'RE", "'", "’s",
      "0", "7", "42", "123", "1234", "12345", "3.14", "1,000", "٣٤٥", "१२३", "½", "²", "Ⅻ", "①", "𝟙𝟚",
      "你好", "世界", "日本語", "한국어", "ㄱㅏ", "Привет", "Ελλάδα", "مرحبا", "שלום", "नमस्ते", "ไทย", "ᚠᚢ",
      "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇩🇪", "❤️", "✨", "𝓗𝓮𝓵𝓵𝓸", "𐍈",
      "e\u0301", "é", "A\u030a", "\u1100\u1161", "\u0915\u093c", "o\u0308\u0304", "\u0301", "\u0345",
      "\u00a0", "\u2000", "\u2003", "\u3000", "\u0085", "\u2028", "\u2029", "\u202f", "\u205f", "\u1680",
      "\u001c", "\u001f", "\u180e", "\u200b", "\u200d", "\ufeff", "\u000b", "\u000c",
      ".", ",", "!", "?", "...", "--", "==", "```", "{", "}", "[", "]", "(", ")", "\"", "#", "$", "%", "&", "*",
      "+", "-", "/", ":", ";", "<", "=", ">", "@", "\\", "^", "_", "`", "|", "~", "§", "©", "¬", "\u00ad",
      "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|im_", "|>", "<|",
      "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|reserved_special_token_7|>", "<|python_tag|>",
      "user", "assistant", "system", "{\"a\": 1}", "http://x.y/z?q=1", "a_b", "camelCase", "x86_64"};

  private static int randomCodePoint(SplittableRandom r) {
    while (true) {
      int cp = switch (r.nextInt(4)) {
        case 0 -> r.nextInt(0x80, 0x800);
        case 1 -> r.nextInt(0x800, 0x10000);
        case 2 -> r.nextInt(0x10000, 0x40000);
        default -> r.nextInt(0, 0x110000);
      };
      if (cp < 0xd800 || cp > 0xdfff) {
        return cp;
      }
    }
  }

  static String randomText(SplittableRandom r) {
    StringBuilder sb = new StringBuilder();
    int n = 1 + r.nextInt(40);
    for (int i = 0; i < n; i++) {
      int k = r.nextInt(12);
      if (k == 0) {
        sb.appendCodePoint(randomCodePoint(r));
      } else if (k == 1) {
        String ws = POOL[5 + r.nextInt(10)];
        sb.append(ws.repeat(1 + r.nextInt(5)));
      } else {
        sb.append(POOL[r.nextInt(POOL.length)]);
      }
    }
    return sb.toString();
  }

  static Stream<Arguments> seeds() {
    List<Arguments> out = new ArrayList<>();
    for (String family : List.of(TestModels.QWEN3, TestModels.LLAMA)) {
      for (long seed = 1; seed <= 25; seed++) {
        out.add(Arguments.of(family, seed));
      }
    }
    return out.stream();
  }

  /** 25 seeds x 200 strings per family: 10,000 strings. */
  @ParameterizedTest(name = "{0} seed={1}")
  @MethodSource("seeds")
  void randomStringsEncodeTheSame(String family, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 200; i++) {
      assertSame(family, randomText(r), "seed " + seed + " string " + i);
    }
  }

  /** Long runs (the merge queue over hundreds of symbols, words past the cache bound). */
  @ParameterizedTest(name = "{0} seed={1}")
  @MethodSource("seeds")
  void longRunsEncodeTheSame(String family, long seed) {
    if (seed > 3) {
      return;
    }
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 10; i++) {
      String unit = POOL[r.nextInt(POOL.length)];
      assertSame(family, unit.repeat(50 + r.nextInt(400)), "seed " + seed + " run " + i);
    }
  }

  static Stream<Arguments> planes() {
    List<Arguments> out = new ArrayList<>();
    for (String family : List.of(TestModels.QWEN3, TestModels.LLAMA)) {
      for (int plane : new int[] {0, 1, 2, 3, 14}) {
        out.add(Arguments.of(family, plane));
      }
    }
    return out.stream();
  }

  /**
   * Code points in contexts where their class (letter, number, whitespace, other) and their NFC behaviour change
   * the pieces: after a space, between letters, after a digit and an apostrophe, doubled. Every code point of the
   * Basic Multilingual Plane; in the planes above it (mostly long runs of one class: CJK ideographs, historic
   * scripts, symbols), the first and last two code points of every run of one class in the encoder's table and
   * every 16th code point.
   */
  @ParameterizedTest(name = "{0} plane={1}")
  @MethodSource("planes")
  void codePointsEncodeTheSame(String family, int plane) {
    StringBuilder sb = new StringBuilder();
    int from = plane << 16;
    for (int cp = from; cp < from + 0x10000; cp++) {
      if ((cp >= 0xd800 && cp <= 0xdfff) || (plane > 0 && cp % 16 != 0 && !nearRunEdge(cp))) {
        continue;
      }
      String c = new String(Character.toChars(cp));
      sb.append(" ").append(c).append("a").append(c).append("1").append(c).append("'").append(c).append(c)
          .append(".").append(c).append("\n");
      if (sb.length() > 4000) {
        assertSame(family, sb.toString(), "code points up to U+" + Integer.toHexString(cp));
        sb.setLength(0);
      }
    }
    assertSame(family, sb.toString(), "the plane's last code points");
  }

  private static boolean nearRunEdge(int cp) {
    byte c = UnicodeClasses.of(cp);
    return UnicodeClasses.of(cp - 1) != c || UnicodeClasses.of(cp - 2) != c
        || UnicodeClasses.of(Math.min(cp + 1, Character.MAX_CODE_POINT)) != c
        || UnicodeClasses.of(Math.min(cp + 2, Character.MAX_CODE_POINT)) != c;
  }

  /** The shipped table is the JVM's Unicode 13.0 data (Java 17 and 18 have Unicode 13.0). */
  @Test
  void theUnicodeTableIsUnicode13() {
    org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() <= 18, "a JVM with Unicode 13.0");
    for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
      char expected = UnicodeTableGenerator.jvmClass(cp);
      byte actual = UnicodeClasses.of(cp);
      if ("OLNU".charAt(actual) != expected) {
        assertEquals(expected, "OLNU".charAt(actual), String.format("U+%04X", cp));
      }
    }
  }

  @Test
  void theJavaEngineRefusesCodePointsNewerThanItsTables() throws IOException {
    try (HfTokenizer java = TestModels.builder(TestModels.QWEN3).engine(HfTokenizer.Engine.JAVA).build()) {
      assertEquals("java", java.encoderKind());
      // U+31350: CJK Unified Ideographs Extension H, added in Unicode 15.0
      UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
          () -> java.tokenize("a \ud884\udf50 b", false));
      assertTrue(e.getMessage().contains("U+31350"), e.getMessage());
      assertArrayEquals(TestModels.shared(TestModels.QWEN3).tokenize("a 你 b", false), java.tokenize("a 你 b", false));
    }
    // AUTO hands such a text to the native library
    assertSame(TestModels.QWEN3, "a \ud884\udf50 b", "Extension H");
    assertArrayEquals(encoders(TestModels.QWEN3)[1].encode("a \ud884\udf50 b", false),
        TestModels.shared(TestModels.QWEN3).tokenize("a \ud884\udf50 b", false));
  }

  @Test
  void otherConfigurationsAreRefusedWithTheComponentNamed() throws IOException {
    TokenizerFiles files = TestModels.files(TestModels.QWEN3);
    ObjectNode root = (ObjectNode) TokenizerFiles.JSON.readTree(files.tokenizerJsonText);
    ((ObjectNode) root.get("normalizer")).put("type", "NFKC");
    ByteLevelBpe.Result r = ByteLevelBpe.create(TokenizerFiles.JSON.writeValueAsString(root), files.addedTokens,
        ByteLevelBpe.REFUSE);
    assertEquals(null, r.encoder());
    assertTrue(r.unsupported().contains("NFKC"), r.unsupported());

    root.putNull("normalizer");
    ((ObjectNode) root.get("pre_tokenizer").get("pretokenizers").get(0).get("pattern")).put("Regex", "\\s+");
    r = ByteLevelBpe.create(TokenizerFiles.JSON.writeValueAsString(root), files.addedTokens,
        ByteLevelBpe.REFUSE);
    assertTrue(r.unsupported().contains("pre-tokenizer"), r.unsupported());

    Path dir = Files.createTempDirectory(Path.of("target"), "tiny-");
    Files.writeString(dir.resolve("tokenizer.json"), TestModels.TINY_TOKENIZER_JSON);
    try (HfTokenizer auto = HfTokenizer.load(dir)) {
      assertEquals("native", auto.encoderKind(), "a WordLevel model falls back to the native library");
      assertArrayEquals(new int[] {1, 2}, auto.tokenize("hello world", false));
    }
    IOException e = assertThrows(IOException.class,
        () -> HfTokenizer.newBuilder(dir).engine(HfTokenizer.Engine.JAVA).build());
    assertTrue(e.getMessage().contains("WordLevel"), e.getMessage());
  }
}
