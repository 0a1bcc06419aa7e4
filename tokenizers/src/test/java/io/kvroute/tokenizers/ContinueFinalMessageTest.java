package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * {@code continue_final_message}: transformers renders without the generation prompt and cuts the text right after
 * the final message's content (its trailing whitespace kept only where the template kept it). The reference
 * JavaScript implementation ignores the option, so these expectations come from that rule applied to the full
 * renderings, which the golden cases do check.
 */
class ContinueFinalMessageTest {
  private static byte[] body(String last, boolean cont) {
    return ("{\"messages\":[{\"role\":\"user\",\"content\":\"Go on\"},{\"role\":\"assistant\",\"content\":\"" + last
        + "\"}],\"add_generation_prompt\":false" + (cont ? ",\"continue_final_message\":true" : "")
        + ",\"chat_template_kwargs\":{\"date_string\":\"26 Jul 2024\"}}").getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void cutsAfterTheFinalMessage() {
    HfTokenizer qwen = TestModels.shared(TestModels.QWEN3);
    String full = qwen.applyChatTemplate(body("The cache is", false));
    assertTrue(full.endsWith("The cache is<|im_end|>\n"), full);
    assertEquals(full.substring(0, full.length() - "<|im_end|>\n".length()),
        qwen.applyChatTemplate(body("The cache is", true)));
    // Qwen3's template keeps the trailing space: so does the cut
    assertTrue(qwen.applyChatTemplate(body("Routing by prefix means ", true)).endsWith("prefix means "));
    assertArrayEquals(qwen.tokenize(qwen.applyChatTemplate(body("The cache is", true)), false),
        qwen.tokenizeRequest(body("The cache is", true)));

    // Llama's template trims the content: the cut follows the trimmed text
    HfTokenizer llama = TestModels.shared(TestModels.LLAMA);
    String llamaFull = llama.applyChatTemplate(body("Routing by prefix means ", false));
    assertTrue(llamaFull.endsWith("Routing by prefix means<|eot_id|>"), llamaFull);
    assertEquals(llamaFull.substring(0, llamaFull.length() - "<|eot_id|>".length()),
        llama.applyChatTemplate(body("Routing by prefix means ", true)));
  }

  @Test
  void bothFlagsTrueIsRefused() {
    byte[] both = ("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"add_generation_prompt\":true,"
        + "\"continue_final_message\":true}").getBytes(StandardCharsets.UTF_8);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TestModels.shared(TestModels.QWEN3)
        .tokenizeRequest(both)).getMessage().contains("cannot both be true"));
  }
}
