package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Token-exact agreement with the reference JavaScript implementation (@huggingface/transformers: its tokenizers
 * port and its Jinja engine), on the cases {@code tokenizers/golden/generate.mjs} generated from the same fixture
 * files: every request body goes through {@link HfTokenizer#tokenizeRequest} as a gateway would send it.
 */
class GoldenVectorsTest {
  private static final List<JsonNode> CASES = load();

  private static List<JsonNode> load() {
    try (InputStream in = new GZIPInputStream(TestModels.resource("golden.json.gz"))) {
      JsonNode root = TokenizerFiles.JSON.readTree(in);
      List<JsonNode> cases = new ArrayList<>();
      root.get("cases").forEach(cases::add);
      return cases;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Stream<Arguments> cases() {
    return CASES.stream().map(c -> Arguments.of(c.get("family").asText() + "/" + c.get("name").asText(), c));
  }

  @Test
  void coversAtLeast300CasesAcrossBothFamilies() {
    Map<String, Integer> counts = new TreeMap<>();
    for (JsonNode c : CASES) {
      counts.merge(c.get("family").asText(), 1, Integer::sum);
    }
    assertTrue(CASES.size() >= 300, "cases: " + CASES.size());
    assertTrue(counts.getOrDefault(TestModels.QWEN3, 0) >= 150 && counts.getOrDefault(TestModels.LLAMA, 0) >= 150,
        counts.toString());
    assertTrue(CASES.stream().anyMatch(c -> c.has("ids") && c.get("ids").size() >= 7000), "an 8k-token case");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void tokenIdsEqualTheReference(String name, JsonNode c) throws IOException {
    HfTokenizer tokenizer = TestModels.shared(c.get("family").asText());
    byte[] body = TokenizerFiles.JSON.writeValueAsBytes(c.get("body"));
    if (c.has("error")) {
      ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> tokenizer.tokenizeRequest(body));
      assertEquals(c.get("error").asText(), e.getMessage());
      assertTrue(e.isTemplateRaised());
      return;
    }
    if (c.get("kind").asText().equals("chat")) {
      String text = tokenizer.applyChatTemplate(body);
      assertEquals(c.get("text").asText(), text, "rendered text");
    }
    int[] expected = new int[c.get("ids").size()];
    for (int i = 0; i < expected.length; i++) {
      expected[i] = c.get("ids").get(i).asInt();
    }
    assertArrayEquals(expected, tokenizer.tokenizeRequest(body));
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
