package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The prefix cache returns exactly what encoding the whole text returns: for conversations that grow one message at
 * a time (its workload), and for random texts full of special tokens, partial special tokens and whitespace around
 * them (the boundaries it must get right). The reference is the native tokenizer on the whole text, uncached.
 */
class PrefixCacheTest {
  private static final String[] WORDS = {"the", "cache", "router", " ", "  ", "\n", "\n\n", "\t", "你好", "世界",
      "😀", "👨‍👩‍👧‍👦", "don't", "42", "3.14", "<", ">", "|", "<|", "|>", "im_", "<think>", "</think>", "é", "e\u0301",
      "\u00a0", "```", "{\"a\": 1}"};

  static Stream<Arguments> seeds() {
    List<Arguments> out = new ArrayList<>();
    for (String family : List.of(TestModels.QWEN3, TestModels.LLAMA)) {
      for (long seed = 1; seed <= 6; seed++) {
        out.add(Arguments.of(family, seed));
      }
    }
    return out.stream();
  }

  private static String text(SplittableRandom r, List<String> specials, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      int k = r.nextInt(10);
      if (k == 0) {
        sb.append(specials.get(r.nextInt(specials.size())));
      } else if (k == 1) {
        String s = specials.get(r.nextInt(specials.size()));
        sb.append(s, 0, 1 + r.nextInt(s.length() - 1)); // a partial special token
      } else {
        sb.append(WORDS[r.nextInt(WORDS.length)]);
      }
    }
    return sb.toString();
  }

  private static List<String> specials(HfTokenizer t) {
    List<String> out = new ArrayList<>();
    for (String s : List.of("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "<|begin_of_text|>",
        "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|python_tag|>")) {
      int[] ids = t.tokenize(s, false);
      if (ids.length == 1) {
        out.add(s);
      }
    }
    return out;
  }

  @ParameterizedTest(name = "{0} seed {1}")
  @MethodSource("seeds")
  void randomTextsEncodeAsTheWholeText(String family, long seed) throws IOException {
    HfTokenizer full = TestModels.shared(family);
    PrefixCache cache = new PrefixCache(TestModels.files(family).addedTokens, 1 << 20);
    SplittableRandom r = new SplittableRandom(seed);
    List<String> specials = specials(full);
    assertFalse(specials.isEmpty());
    String base = text(r, specials, 40);
    for (int step = 0; step < 40; step++) {
      // extend the previous text (a hit), or branch from a random earlier point (a partial hit or a miss)
      int cut = r.nextInt(base.length() + 1);
      if (cut > 0 && cut < base.length() && Character.isLowSurrogate(base.charAt(cut))) {
        cut--; // texts are valid UTF-16 (HfTokenizer refuses unpaired surrogates)
      }
      String text = r.nextInt(4) == 0 ? base.substring(0, cut) + text(r, specials, 20)
          : base + text(r, specials, 1 + r.nextInt(30));
      int[] expected = full.tokenize(text, false);
      assertArrayEquals(expected, cache.encode(text, s -> full.tokenize(s, false)), "seed " + seed + " step " + step
          + ": " + text);
      base = text;
    }
    assertTrue(cache.hits.get() > 0, "hits");
  }

  static Map<String, Object> message(String role, String content) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("role", role);
    m.put("content", content);
    return m;
  }

  static byte[] chatBody(List<Map<String, Object>> messages, Map<String, Object> extra) throws IOException {
    Map<String, Object> body = new LinkedHashMap<>(extra);
    body.put("messages", messages);
    return TokenizerFiles.JSON.writeValueAsBytes(body);
  }

  @ParameterizedTest(name = "{0} seed {1}")
  @MethodSource("seeds")
  void growingConversationsReuseTheirPrefixExactly(String family, long seed) throws IOException {
    HfTokenizer tokenizer = TestModels.shared(family);
    PrefixCache cache = new PrefixCache(TestModels.files(family).addedTokens, 1 << 24);
    assertTrue(PrefixCache.usable(TestModels.files(family)), "Qwen3 and Llama 3 tokenizers allow the prefix cache");
    SplittableRandom r = new SplittableRandom(seed);
    List<String> specials = specials(tokenizer);
    List<Map<String, Object>> messages = new ArrayList<>();
    messages.add(message("system", text(r, specials, 10)));
    Map<String, Object> extra = new LinkedHashMap<>();
    if (family.equals(TestModels.LLAMA)) {
      extra.put("chat_template_kwargs", Map.of("date_string", "26 Jul 2024"));
    } else if (r.nextBoolean()) {
      extra.put("chat_template_kwargs", Map.of("enable_thinking", r.nextBoolean()));
    }
    long reusedBefore = 0;
    int totalTokens = 0;
    for (int turn = 0; turn < 10; turn++) {
      messages.add(message("user", text(r, specials, 5 + r.nextInt(60))));
      String rendered = tokenizer.applyChatTemplate(chatBody(messages, extra));
      int[] expected = tokenizer.tokenize(rendered, false);
      int[] actual = cache.encode(rendered, s -> tokenizer.tokenize(s, false));
      assertArrayEquals(expected, actual, "seed " + seed + " turn " + turn);
      if (turn > 0) {
        assertTrue(cache.reusedTokens.get() > reusedBefore, "turn " + turn + " re-used a prefix");
      }
      reusedBefore = cache.reusedTokens.get();
      totalTokens += actual.length;
      messages.add(message("assistant", text(r, specials, 5 + r.nextInt(60))));
    }
    // all but the first turn found the previous rendering, up to its last message
    assertEquals(9, cache.hits.get());
    assertTrue(cache.reusedTokens.get() > totalTokens / 3, cache.reusedTokens.get() + " of " + totalTokens);
  }

  @ParameterizedTest(name = "{0} seed {1}")
  @MethodSource("seeds")
  void siblingRequestsReuseTheSharedHistory(String family, long seed) throws IOException {
    HfTokenizer tokenizer = TestModels.shared(family);
    PrefixCache cache = new PrefixCache(TestModels.files(family).addedTokens, 1 << 24);
    SplittableRandom r = new SplittableRandom(seed);
    List<String> specials = specials(tokenizer);
    List<Map<String, Object>> history = new ArrayList<>();
    history.add(message("system", text(r, specials, 10)));
    for (int i = 0; i < 4; i++) {
      history.add(message(i % 2 == 0 ? "user" : "assistant", text(r, specials, 20)));
    }
    Map<String, Object> extra = family.equals(TestModels.LLAMA)
        ? Map.of("chat_template_kwargs", Map.of("date_string", "26 Jul 2024")) : Map.of();
    // the history as it renders with no last message: what every sibling shares, at least
    List<Map<String, Object>> closed = new ArrayList<>(history);
    closed.add(message("user", "x"));
    String shared = tokenizer.applyChatTemplate(chatBody(closed, Map.of("add_generation_prompt", false,
        "chat_template_kwargs", extra.getOrDefault("chat_template_kwargs", Map.of()))));
    for (int i = 0; i < 6; i++) {
      List<Map<String, Object>> messages = new ArrayList<>(history);
      messages.add(message("user", "sibling " + i + " " + text(r, specials, 10)));
      String rendered = tokenizer.applyChatTemplate(chatBody(messages, extra));
      long reused = cache.reusedTokens.get();
      assertArrayEquals(tokenizer.tokenize(rendered, false), cache.encode(rendered, s -> tokenizer.tokenize(s, false)));
      if (i > 0) {
        int common = 0;
        while (common < shared.length() && common < rendered.length()
            && shared.charAt(common) == rendered.charAt(common)) {
          common++;
        }
        // at least the history up to the last message's start came from the cache
        assertTrue(cache.reusedTokens.get() - reused >= tokenizer.tokenize(history(shared, common), false).length
            - 8, "sibling " + i);
      }
    }
    assertEquals(5, cache.hits.get());
  }

  /** The text before the last special-token-free stretch ending at {@code common}: the last message's start. */
  private static String history(String text, int common) {
    int cut = Math.max(text.lastIndexOf("<|im_start|>", common - 1), text.lastIndexOf("<|start_header_id|>",
        common - 1));
    return text.substring(0, Math.max(cut, 0));
  }

  @Test
  void theTokenizerUsesItsCacheForChats() throws IOException {
    HfTokenizer tokenizer = TestModels.shared(TestModels.QWEN3);
    PrefixCache cache = tokenizer.prefixCache();
    assertNotNull(cache);
    List<Map<String, Object>> messages = new ArrayList<>();
    messages.add(message("user", "first question about 缓存"));
    int[] first = tokenizer.tokenizeRequest(chatBody(messages, Map.of()));
    long hits = cache.hits.get();
    messages.add(message("assistant", "first answer"));
    messages.add(message("user", "second question"));
    byte[] body = chatBody(messages, Map.of());
    int[] second = tokenizer.tokenizeRequest(body);
    assertTrue(cache.hits.get() > hits, "the second turn hit the first's prefix");
    assertArrayEquals(tokenizer.tokenize(tokenizer.applyChatTemplate(body), false), second);
    // the first turn's prompt up to its last special token starts the second's
    assertArrayEquals(java.util.Arrays.copyOf(first, first.length - 2), java.util.Arrays.copyOf(second, first.length - 2));
  }

  @Test
  void theCacheStaysWithinItsBound() throws IOException {
    PrefixCache cache = new PrefixCache(TestModels.files(TestModels.QWEN3).addedTokens, 64 << 10);
    HfTokenizer t = TestModels.shared(TestModels.QWEN3);
    SplittableRandom r = new SplittableRandom(7);
    for (int i = 0; i < 60; i++) {
      String text = "<|im_start|>user\n" + text(r, List.of("<|im_end|>"), 100) + "<|im_end|>\n<|im_start|>x";
      assertArrayEquals(t.tokenize(text, false), cache.encode(text, s -> t.tokenize(s, false)));
      assertTrue(cache.bytes() <= 64 << 10, "bytes " + cache.bytes());
    }
    assertTrue(cache.size() > 0);
  }

  @Test
  void aTextTooLargeForTheBoundIsEncodedButNotCachedAndEvictsNothing() {
    // Mutation audit: storing such an entry anyway pushed the cache past its bound (evict() spares the newest
    // group) and evicted everything else. Encoder: one id per char, an independent model of "encode".
    PrefixCache.Encoder chars = text -> text.chars().toArray();
    long bound = 200; // one small entry fits: 2 * 4 chars + 4 * 4 ids + 64 (group) + 96 (entry) = 184 bytes
    PrefixCache cache = new PrefixCache(List.of(
        new TokenizerFiles.AddedToken(1, "<a>", true, false, false, false, false)), bound);
    String small = "<a>y";
    assertArrayEquals(small.chars().toArray(), cache.encode(small, chars));
    assertEquals(1, cache.size());
    String large = "<a>" + "x".repeat(200) + "<a>"; // a new boundary at 206: the entry it would store is ~1.4 KB
    assertArrayEquals(large.chars().toArray(), cache.encode(large, chars));
    assertTrue(cache.bytes() <= bound, "bytes " + cache.bytes());
    assertEquals(1, cache.size(), "the small entry is still cached");
    assertArrayEquals(small.chars().toArray(), cache.encode(small, chars));
  }

  @Test
  void boundariesAreTheEndsOfLeftmostLongestMatches() throws IOException {
    PrefixCache cache = new PrefixCache(List.of(
        new TokenizerFiles.AddedToken(1, "<a>", true, false, false, false, false),
        new TokenizerFiles.AddedToken(2, "<a><b>", true, false, false, false, false),
        new TokenizerFiles.AddedToken(3, "<b>", true, false, false, false, false),
        new TokenizerFiles.AddedToken(4, "zz", false, true, false, false, false)), 1 << 20);
    // "<a><b>" wins over "<a>" then "<b>"; normalized tokens ("zz") are no boundary
    assertArrayEquals(new int[] {6, 11, 16}, cache.boundaries("<a><b>xx<b>zz<a><"));
    assertArrayEquals(new int[0], cache.boundaries("no tokens here zz"));
    assertEquals("x", new String("x".getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8));
  }

  @Test
  void tokenizersThatTreatTheFirstPieceSpeciallyGetNoCache() throws IOException {
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory(java.nio.file.Path.of("target"), "metaspace");
    String json = "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":0,\"content\":\"<s>\",\"special\":true,"
        + "\"normalized\":false,\"lstrip\":false,\"rstrip\":false,\"single_word\":false}],"
        + "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"▁\",\"prepend_scheme\":\"first\","
        + "\"split\":true},\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"<s>\":0,\"▁a\":1,\"a\":2,\"[UNK]\":3},"
        + "\"unk_token\":\"[UNK]\"}}";
    java.nio.file.Files.writeString(dir.resolve("tokenizer.json"), json);
    try (HfTokenizer t = HfTokenizer.load(dir)) {
      assertEquals(null, t.prefixCache());
      // why: the piece after <s> is not the text's first piece, so it gets no ▁ in the whole text
      assertArrayEquals(new int[] {1, 0, 2}, t.tokenize("a<s>a", false));
      assertArrayEquals(new int[] {1}, t.tokenize("a", false));
    }
  }

  /**
   * The byte count is exact, not merely within the bound: with one id per char (an independent model of encode),
   * an entry of a 4-char text costs 2 * 4 + 4 * 4 + 64 bytes for its text and ids plus 96 for the entry, 184 in
   * all. Whether an entry leaves by replacement (a text with the same prefix to its boundary) or by eviction (a
   * second text that does not fit beside the first), the count returns to exactly what is held; a count that
   * drifted upward would evict more than needed and, past the bound, report a cache over it.
   */
  @Test
  void theByteCountIsExactAcrossReplacementAndEviction() {
    PrefixCache.Encoder chars = text -> text.chars().toArray();
    List<TokenizerFiles.AddedToken> added = List.of(
        new TokenizerFiles.AddedToken(1, "<a>", true, false, false, false, false));
    long one = 2 * 4 + 4 * 4 + 64 + 96;

    PrefixCache roomy = new PrefixCache(added, 10_000);
    roomy.encode("<a>y", chars);
    assertEquals(one, roomy.bytes());
    assertEquals(1, roomy.size());
    for (String text : new String[] {"<a>z", "<a>w", "<a>y"}) { // the same boundary: each replaces the last
      assertArrayEquals(text.chars().toArray(), roomy.encode(text, chars));
      assertEquals(roomy.size() * one, roomy.bytes(), text);
    }

    PrefixCache tight = new PrefixCache(added, 200); // room for one such entry
    for (String text : new String[] {"<a>y", "w<a>", "v<a>", "u<a>"}) { // each evicts the one before
      assertArrayEquals(text.chars().toArray(), tight.encode(text, chars));
      assertEquals(1, tight.size(), text);
      assertEquals(one, tight.bytes(), text);
    }
  }
}
