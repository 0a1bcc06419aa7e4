package io.kvroute.openai;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class OpenAiRequestTest {
  private static OpenAiRequest parse(String json) {
    return OpenAiRequest.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void readsTheMembersEveryRequestCarries() {
    OpenAiRequest r = parse("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
        + "\"prompt\":\"hi\",\"max_tokens\":7,\"temperature\":0.5}");
    assertEquals("m", r.model());
    assertTrue(r.stream());
    assertTrue(r.includeUsage());
    assertEquals(7, r.maxTokens());
    assertEquals(0.5, r.body().get("temperature"));
    OpenAiRequest bare = parse("{\"model\":null,\"stream\":null,\"input\":\"x\"}");
    assertNull(bare.model());
    assertFalse(bare.stream());
    assertFalse(bare.includeUsage());
    assertNull(bare.maxTokens());
    assertTrue(bare.has("input"));
    assertFalse(bare.has("model"));
    assertEquals(9, parse("{\"max_tokens\":3,\"max_completion_tokens\":9}").maxTokens());
  }

  @Test
  void readsEveryPromptShape() {
    assertEquals("hello world", parse("{\"prompt\":\"hello world\"}").prompt().text());
    assertEquals("one", parse("{\"prompt\":[\"one\"]}").prompt().text());
    assertArrayEquals(new int[] {1, 2, 3}, parse("{\"prompt\":[1,2,3]}").prompt().tokens());
    assertArrayEquals(new int[] {4, 5}, parse("{\"prompt\":[[4,5]]}").completionPrompt().tokens());
    OpenAiRequest.Prompt chat = parse("{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        + "{\"role\":\"assistant\",\"content\":null}]}").prompt();
    assertEquals(List.of(ChatMessage.system("be brief"), ChatMessage.user("a\nb"), ChatMessage.assistant("")),
        chat.messages());
    assertNull(chat.text());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "[]", "{", "{\"prompt\":\"x\",}", "{\"a\":1,\"a\":2}"})
  void malformedJsonIsAJsonException(String body) {
    assertThrows(JsonException.class, () -> parse(body), body);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "{\"model\":1}|model",
      "{\"stream\":\"yes\"}|stream",
      "{}|prompt",
      "{\"prompt\":\"a\",\"messages\":[]}|messages",
      "{\"prompt\":[\"a\",\"b\"]}|prompt",
      "{\"prompt\":[[1],[2]]}|prompt",
      "{\"prompt\":[1,-2]}|prompt",
      "{\"prompt\":[1,2.5]}|prompt",
      "{\"prompt\":[4294967296]}|prompt",
      "{\"prompt\":[]}|prompt",
      "{\"prompt\":[[]]}|prompt",
      "{\"prompt\":7}|prompt",
      "{\"messages\":[]}|messages",
      "{\"messages\":[1]}|messages",
      "{\"messages\":[{\"content\":\"x\"}]}|messages",
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}|messages",
      "{\"messages\":[{\"role\":\"user\",\"content\":5}]}|messages"})
  void unusableRequestsNameTheOffendingMember(String body, String param) {
    OpenAiRequestException e = assertThrows(OpenAiRequestException.class, () -> parse(body).prompt(), body);
    assertEquals(param, e.param(), e.getMessage());
  }

  @Test
  void optionalMembersAreCheckedWhenRead() {
    assertEquals("max_tokens", assertThrows(OpenAiRequestException.class,
        () -> parse("{\"max_tokens\":\"5\"}").maxTokens()).param());
    assertEquals("max_tokens", assertThrows(OpenAiRequestException.class,
        () -> parse("{\"max_tokens\":5000000000}").maxTokens()).param());
    assertEquals("stream_options", assertThrows(OpenAiRequestException.class,
        () -> parse("{\"stream_options\":true}").includeUsage()).param());
    assertThrows(OpenAiRequestException.class, () -> parse("{\"prompt\":\"x\"}").chatMessages());
    assertThrows(OpenAiRequestException.class, () -> parse("{\"messages\":[{\"role\":\"u\"}]}").completionPrompt());
    assertThrows(UnsupportedOperationException.class, () -> parse("{}").body().put("a", 1));
  }
}
