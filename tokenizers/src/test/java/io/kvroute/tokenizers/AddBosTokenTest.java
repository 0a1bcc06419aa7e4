package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * {@code add_bos_token} / {@code add_eos_token} of {@code tokenizer_config.json}, as transformers applies them:
 * for the Llama-style classes ({@code LlamaTokenizerFast}, {@code GemmaTokenizerFast}, ... as DeepSeek and Gemma
 * configs name them) they replace the {@code tokenizer.json} post-processor with
 * {@code [bos if add_bos_token (default true)] $A [eos if add_eos_token (default false)]}; other classes keep the
 * {@code tokenizer.json} post-processor. Expected ids are built from that rule: the encoding without special
 * tokens, with the ids of the named tokens (looked up in {@code tokenizer.json}'s {@code added_tokens}) around it.
 * The {@code tokenizer.json} is Llama 3.2's, whose own post-processor adds {@code <|begin_of_text|>}.
 */
class AddBosTokenTest {
  private static final String TEXT = "Hello world, it's a test.";

  private static int addedTokenId(String content) throws IOException {
    JsonNode root = TokenizerFiles.JSON.readTree(TestModels.dir(TestModels.LLAMA).resolve("tokenizer.json").toFile());
    for (JsonNode t : root.get("added_tokens")) {
      if (t.get("content").asText().equals(content)) {
        return t.get("id").asInt();
      }
    }
    throw new AssertionError(content);
  }

  private static Path model(Consumer<ObjectNode> config) throws IOException {
    Path dir = Files.createTempDirectory(Path.of("target"), "bos-");
    Files.copy(TestModels.dir(TestModels.LLAMA).resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
    ObjectNode root = (ObjectNode) TokenizerFiles.JSON.readTree(
        TestModels.dir(TestModels.LLAMA).resolve("tokenizer_config.json").toFile());
    config.accept(root);
    Files.writeString(dir.resolve("tokenizer_config.json"), TokenizerFiles.JSON.writeValueAsString(root));
    return dir;
  }

  private static int[] plain(String text) {
    return TestModels.shared(TestModels.LLAMA).tokenize(text, false);
  }

  private static int[] concat(int[] head, int[] body, int[] tail) {
    return IntStream.concat(IntStream.concat(IntStream.of(head), IntStream.of(body)), IntStream.of(tail)).toArray();
  }

  private static byte[] completion(String prompt) {
    return ("{\"prompt\":\"" + prompt + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void llamaStyleClassesFollowTheFlags() throws IOException {
    int bos = addedTokenId("<|begin_of_text|>");
    int eos = addedTokenId("<|eot_id|>"); // the config's eos_token
    int[] body = plain(TEXT);
    for (String cls : new String[] {"GemmaTokenizerFast", "LlamaTokenizer"}) {
      try (HfTokenizer absent = HfTokenizer.load(model(c -> c.put("tokenizer_class", cls)))) {
        assertArrayEquals(concat(new int[] {bos}, body, new int[0]), absent.tokenize(TEXT, true),
            cls + " add_bos_token absent: BOS (its default)");
      }
    }
    String cls = "LlamaTokenizerFast";
    try (HfTokenizer off = HfTokenizer.load(model(c -> c.put("tokenizer_class", cls).put("add_bos_token", false)))) {
      assertArrayEquals(body, off.tokenize(TEXT, true), cls + " add_bos_token=false: no BOS");
      assertArrayEquals(body, off.tokenizeRequest(completion(TEXT)), cls + " /v1/completions");
    }
    try (HfTokenizer both = HfTokenizer.load(model(c -> c.put("tokenizer_class", cls).put("add_bos_token", true)
        .put("add_eos_token", true)))) {
      assertArrayEquals(concat(new int[] {bos}, body, new int[] {eos}), both.tokenize(TEXT, true), cls);
      assertArrayEquals(body, both.tokenize(TEXT, false), "without special tokens: neither");
    }
    try (HfTokenizer eosOnly = HfTokenizer.newBuilder(model(c -> c.put("tokenizer_class", cls)
        .put("add_bos_token", false).put("add_eos_token", true))).engine(HfTokenizer.Engine.NATIVE).build()) {
      assertArrayEquals(concat(new int[0], body, new int[] {eos}), eosOnly.tokenize(TEXT, true),
          cls + " on the native encoder");
    }
  }

  @Test
  void otherClassesKeepTheTokenizerJsonPostProcessor() throws IOException {
    int bos = addedTokenId("<|begin_of_text|>");
    try (HfTokenizer t = HfTokenizer.load(model(c -> c.put("add_bos_token", false).put("add_eos_token", true)))) {
      // PreTrainedTokenizerFast (Llama 3.2's own class) ignores the flags: tokenizer.json's template adds the BOS
      assertArrayEquals(concat(new int[] {bos}, plain(TEXT), new int[0]), t.tokenize(TEXT, true));
    }
  }

  @Test
  void chatGetsTheBosOnlyWhereTheTemplateDoesNotWriteIt() throws IOException {
    int bos = addedTokenId("<|begin_of_text|>");
    byte[] chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"add_special_tokens\":true}"
        .getBytes(StandardCharsets.UTF_8);
    // Llama 3.2's template writes <|begin_of_text|> itself: exactly one BOS whatever the flag
    for (boolean flag : new boolean[] {true, false}) {
      try (HfTokenizer t = HfTokenizer.load(model(c -> c.put("tokenizer_class", "LlamaTokenizerFast")
          .put("add_bos_token", flag)))) {
        int[] ids = t.tokenizeRequest(chat);
        assertTrue(ids[0] == bos && ids[1] != bos, "one BOS, add_bos_token=" + flag);
        assertArrayEquals(plain(t.applyChatTemplate(chat)), ids, "the template's text, its BOS once");
      }
    }
    // a Gemma-style template that writes no BOS: the post-processor's BOS, once, where add_bos_token says so
    String template = "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content }}"
        + "<|eot_id|>{% endfor %}";
    try (HfTokenizer t = HfTokenizer.load(model(c -> c.put("tokenizer_class", "GemmaTokenizerFast")
        .put("add_bos_token", true).put("chat_template", template)))) {
      int[] rendered = plain(t.applyChatTemplate(chat));
      assertArrayEquals(concat(new int[] {bos}, rendered, new int[0]), t.tokenizeRequest(chat));
      byte[] defaults = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(rendered, t.tokenizeRequest(defaults), "chat's default add_special_tokens=false");
    }
  }

  @Test
  void badFlagsAreNamed() throws IOException {
    Path noBos = model(c -> c.put("tokenizer_class", "LlamaTokenizerFast").put("add_bos_token", true)
        .remove("bos_token"));
    IOException e = assertThrows(IOException.class, () -> HfTokenizer.load(noBos));
    assertTrue(e.getMessage().contains("add_bos_token is true but bos_token is not set"), e.getMessage());
    Path notBoolean = model(c -> c.put("add_bos_token", "yes"));
    e = assertThrows(IOException.class, () -> HfTokenizer.load(notBoolean));
    assertTrue(e.getMessage().contains("add_bos_token must be true or false"), e.getMessage());
  }
}
