package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every bad input gets an error that names the file, member or construct at fault. */
class BadInputTest {
  @TempDir
  Path dir;

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String message(Throwable t) {
    return t.getMessage() == null ? "" : t.getMessage();
  }

  @Test
  void aMissingTokenizerJsonIsNamed() {
    NoSuchFileException e = assertThrows(NoSuchFileException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(e).contains("tokenizer.json"), message(e));
    assertTrue(e.getReason().contains("no tokenizer.json"), e.getReason());
    NoSuchFileException f = assertThrows(NoSuchFileException.class,
        () -> HfTokenizer.load(dir.resolve("nope.json")));
    assertTrue(message(f).contains("nope.json"));
  }

  @Test
  void corruptTokenizerJsonIsNamed() throws IOException {
    Path json = dir.resolve("tokenizer.json");
    Files.write(json, new byte[] {0x1f, (byte) 0x8b, 8, 0, (byte) 0xff, (byte) 0xfe}); // a gzip header, unpacked
    IOException gz = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(gz).contains("not UTF-8") && message(gz).contains(json.toString()), message(gz));

    String real = Files.readString(TestModels.dir(TestModels.QWEN3).resolve("tokenizer.json"));
    Files.writeString(json, real.substring(0, 100_000)); // truncated
    IOException truncated = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(truncated).contains("is not valid JSON"), message(truncated));

    Files.writeString(json, "[1, 2]");
    assertTrue(message(assertThrows(IOException.class, () -> HfTokenizer.load(dir))).contains("not a JSON object"));
    Files.writeString(json, "{\"version\": \"1.0\", \"added_tokens\": []}");
    assertTrue(message(assertThrows(IOException.class, () -> HfTokenizer.load(dir))).contains("no \"model\""));
    Files.writeString(json, "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": 5}}");
    IOException model = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(model).contains("is not a tokenizer.json the Hugging Face tokenizers library accepts"),
        message(model));
  }

  @Test
  void corruptConfigAndUnsupportedTemplatesAreNamed() throws IOException {
    Files.writeString(dir.resolve("tokenizer.json"), TestModels.TINY_TOKENIZER_JSON);
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": ");
    IOException cfg = assertThrows(IOException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(cfg).contains("tokenizer_config.json is not valid JSON"), message(cfg));

    Files.writeString(dir.resolve("tokenizer_config.json"), "{}");
    Files.writeString(dir.resolve("chat_template.jinja"),
        "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}");
    ChatTemplateException tpl = assertThrows(ChatTemplateException.class, () -> HfTokenizer.load(dir));
    assertTrue(message(tpl).contains("chat_template.jinja") && message(tpl).contains("{% generation %}"),
        message(tpl));

    Files.delete(dir.resolve("chat_template.jinja"));
    try (HfTokenizer noTemplate = HfTokenizer.load(dir)) {
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> noTemplate.tokenizeRequest(utf8("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}")));
      assertTrue(message(e).contains("has no chat template"), message(e));
      assertArrayEquals(new int[] {1, 0, 2, 3}, noTemplate.tokenizeRequest(utf8("{\"prompt\": \"hello<s>world x\"}")));
    }
  }

  @Test
  void badRequestsNameTheMember() {
    HfTokenizer t = TestModels.shared(TestModels.QWEN3);
    assertBad(t, "{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}",
        "messages[0] has the unknown role 'robot'");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"},"
        + " {\"type\": \"text\", \"text\": 42}]}]}", "messages[0].content[1].text must be a string, not a number");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"sparkle\"}]}]}",
        "messages[0].content[0] has the unknown content part type 'sparkle'");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": 7}]}",
        "messages[0].content must be a string, null, or a list of content parts, not a number");
    assertBad(t, "{\"messages\": [{\"content\": \"hi\"}]}", "messages[0].role must be a string");
    assertBad(t, "{\"messages\": []}", "messages must be a non-empty list");
    assertBad(t, "{\"messages\": [{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"type\": "
        + "\"function\", \"function\": {\"name\": \"f\", \"arguments\": \"{not json\"}}]}]}",
        "messages[0].tool_calls[0].function.arguments is not valid JSON");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{\"type\": \"function\","
        + " \"function\": {\"description\": \"no name\"}}]}", "tools[0].function.name must be a string");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"add_generation_prompt\": \"yes\"}",
        "add_generation_prompt must be a boolean");
    assertBad(t, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"chat_template_kwargs\": [1]}",
        "chat_template_kwargs must be an object");
    assertBad(t, "{\"prompt\": \"x\", \"messages\": []}", "exactly one of prompt and messages");
    assertBad(t, "{\"prompt\": [\"a\", \"b\"]}", "batched prompts (2)");
    assertBad(t, "{\"prompt\": [1, -2]}", "prompt[1] is not a token id");
    assertBad(t, "{\"prompt\": \"\\ud800x\"}", "unpaired UTF-16 surrogate at index 0");
    assertBad(t, "not json", "the request body is not valid JSON");
    assertBad(t, "[]", "must be a JSON object");
  }

  /** A JSON null counts as absent, as in OpenAiRequest and vLLM's server: not a second prompt, nor a flag set. */
  @Test
  void nullMembersCountAsAbsent() {
    HfTokenizer t = TestModels.shared(TestModels.QWEN3);
    String chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
    int[] plain = t.tokenizeRequest((chat + "}").getBytes(StandardCharsets.UTF_8));
    assertArrayEquals(plain, t.tokenizeRequest((chat + ", \"prompt\": null, \"tools\": null}")
        .getBytes(StandardCharsets.UTF_8)));
    assertArrayEquals(t.tokenize("x y", true), t.tokenizeRequest("{\"prompt\": \"x y\", \"messages\": null}"
        .getBytes(StandardCharsets.UTF_8)));
    // add_generation_prompt null is its default (true), which continue_final_message turns off without a conflict
    int[] continued = t.tokenizeRequest((chat + ", \"continue_final_message\": true}")
        .getBytes(StandardCharsets.UTF_8));
    assertArrayEquals(continued, t.tokenizeRequest((chat + ", \"continue_final_message\": true, "
        + "\"add_generation_prompt\": null}").getBytes(StandardCharsets.UTF_8)));
    assertBad(t, "{\"prompt\": null}", "exactly one of prompt and messages");
  }

  private static void assertBad(HfTokenizer t, String body, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.tokenizeRequest(utf8(body)));
    assertTrue(message(e).contains(expected), "expected '" + expected + "' in: " + message(e));
  }

  @Test
  void mediaPartsAreUnsupportedNotMalformed() {
    HfTokenizer t = TestModels.shared(TestModels.QWEN3);
    UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> t.tokenizeRequest(
        utf8("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\", \"image_url\": "
            + "{\"url\": \"http://x/y.png\"}}]}]}")));
    assertTrue(message(e).contains("messages[0].content[0] is a 'image_url' part"), message(e));
    assertThrows(UnsupportedOperationException.class, () -> t.tokenizeRequest(utf8(
        "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"chat_template\": \"{{ 1 }}\"}")));
  }

  @Test
  void templateErrorsCarryTheTemplatesMessage() {
    HfTokenizer llama = TestModels.shared(TestModels.LLAMA);
    ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> llama.tokenizeRequest(utf8(
        "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}], \"tools\": [{\"type\": \"function\","
            + " \"function\": {\"name\": \"f\"}}]}")));
    assertEquals("Cannot put tools in the first user message when there's no first user message!", message(e));
    assertTrue(e.isTemplateRaised());
  }

  @Test
  void aClosedTokenizerRefusesCalls() throws IOException {
    Files.writeString(dir.resolve("tokenizer.json"), TestModels.TINY_TOKENIZER_JSON);
    HfTokenizer t = HfTokenizer.load(dir.resolve("tokenizer.json"));
    int[] before = t.tokenize("hello", false);
    t.close();
    t.close(); // idempotent
    assertTrue(message(assertThrows(IllegalStateException.class, () -> t.tokenize("hello", false)))
        .contains("closed"));
    assertTrue(before.length > 0, Arrays.toString(before));
  }

  @Test
  void builderValidatesItsSettings() {
    HfTokenizer.Builder b = HfTokenizer.newBuilder(dir);
    assertTrue(message(assertThrows(IllegalArgumentException.class, () -> b.prefixCacheBytes(-1)))
        .contains("prefixCacheBytes must not be negative but was -1"));
    assertThrows(IllegalArgumentException.class, () -> b.roles(java.util.Set.of()));
  }
}
