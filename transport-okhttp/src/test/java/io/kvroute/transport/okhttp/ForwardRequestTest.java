package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.openai.JsonException;
import io.kvroute.openai.OpenAiRequest;
import io.kvroute.openai.OpenAiRequestException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ForwardRequestTest {
  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void exposesTheParsedBodyParsedOnceOrAsGiven() {
    ForwardRequest lazy = ForwardRequest.newBuilder("/v1/completions",
        utf8("{\"model\":\"m\",\"stream\":true,\"prompt\":\"a b\"}")).build();
    OpenAiRequest parsed = lazy.parsedBody();
    assertEquals("m", parsed.model());
    assertTrue(parsed.stream());
    assertEquals("a b", parsed.prompt().text());
    assertSame(parsed, lazy.parsedBody());
    assertNull(lazy.model()); // routing is restricted only when asked

    byte[] body = utf8("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    OpenAiRequest given = OpenAiRequest.parse(body);
    assertSame(given, ForwardRequest.newBuilder("/v1/chat/completions", body).parsedBody(given).build()
        .parsedBody());
  }

  @Test
  void aBodyThatIsNotARequestFailsOnlyWhenAskedFor() {
    ForwardRequest notJson = ForwardRequest.newBuilder("/v1/completions", utf8("{oops")).build();
    assertThrows(JsonException.class, notJson::parsedBody);
    ForwardRequest badStream = ForwardRequest.newBuilder("/v1/completions", utf8("{\"stream\":1}")).build();
    assertEquals("stream", assertThrows(OpenAiRequestException.class, badStream::parsedBody).param());
  }
}
