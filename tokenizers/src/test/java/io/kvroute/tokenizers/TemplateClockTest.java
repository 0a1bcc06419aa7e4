package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Llama 3.2's template writes today's date through {@code strftime_now("%d %b %Y")} unless the request gives
 * {@code date_string}: the builder's clock decides it (the golden cases always pass a date_string, since the
 * reference would write the day they were generated).
 */
class TemplateClockTest {
  @Test
  void strftimeNowUsesTheBuildersClock() throws IOException {
    Clock clock = Clock.fixed(Instant.parse("2025-03-05T23:30:00Z"), ZoneOffset.UTC);
    try (HfTokenizer llama = HfTokenizer.newBuilder(TestModels.dir(TestModels.LLAMA)).clock(clock)
        .roles(Set.of("system", "user", "assistant", "tool", "ipython")).build()) {
      byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"today?\"}]}".getBytes(StandardCharsets.UTF_8);
      String text = llama.applyChatTemplate(body);
      assertTrue(text.contains("Cutting Knowledge Date: December 2023\nToday Date: 05 Mar 2025\n\n"), text);
      byte[] dated = ("{\"messages\":[{\"role\":\"user\",\"content\":\"today?\"}],"
          + "\"chat_template_kwargs\":{\"date_string\":\"26 Jul 2024\"}}").getBytes(StandardCharsets.UTF_8);
      assertTrue(llama.applyChatTemplate(dated).contains("Today Date: 26 Jul 2024\n"));
    }
  }
}
