package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OpenAiBodiesTest {
  private static OpenAiBodies.Prompt prompt(String json) {
    return OpenAiBodies.prompt(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void readsEveryPromptShape() {
    OpenAiBodies.Prompt text = prompt("{\"model\":\"m\",\"prompt\":\"hello world\",\"max_tokens\":3}");
    assertEquals("m", text.model());
    assertEquals("hello world", text.text());
    assertNull(text.tokens());
    assertEquals("one", prompt("{\"prompt\":[\"one\"]}").text());
    assertArrayEquals(new int[] {1, 2, 3}, prompt("{\"prompt\":[1,2,3]}").tokens());
    assertArrayEquals(new int[] {4, 5}, prompt("{\"prompt\":[[4,5]]}").tokens());
    OpenAiBodies.Prompt chat = prompt("{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        + "{\"role\":\"assistant\",\"content\":null}]}");
    assertNull(chat.model());
    assertEquals(List.of(ChatMessage.system("be brief"), ChatMessage.user("a\nb"), ChatMessage.assistant("")),
        chat.messages());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "[]", "{}", "{\"prompt\":\"a\",\"messages\":[]}", "{\"prompt\":[\"a\",\"b\"]}",
      "{\"prompt\":[[1],[2]]}", "{\"prompt\":[1,-2]}", "{\"prompt\":[1,2.5]}", "{\"prompt\":[4294967296]}",
      "{\"prompt\":[]}", "{\"prompt\":7}", "{\"messages\":[]}", "{\"messages\":[1]}",
      "{\"messages\":[{\"content\":\"x\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "{\"model\":1,\"prompt\":\"x\"}", "{\"prompt\":\"x\",}"})
  void refusesWhatCannotBeRouted(String body) {
    assertThrows(IllegalArgumentException.class, () -> prompt(body), body);
  }

  @Test
  void tokenizeResponsesAreReadStrictly() throws Exception {
    assertArrayEquals(new int[] {1, 2, 3}, OkHttpTokenizer.parseTokens(
        "{\"count\":3,\"max_model_len\":8192,\"tokens\":[1,2,3],\"token_strs\":null}"
            .getBytes(StandardCharsets.UTF_8)));
    assertArrayEquals(new int[0], OkHttpTokenizer.parseTokens("{\"tokens\":[]}".getBytes(StandardCharsets.UTF_8)));
    for (String bad : List.of("", "[1,2]", "{\"count\":1}", "{\"tokens\":[1,\"2\"]}", "{\"tokens\":[1.0]}",
        "{\"tokens\":[-1]}", "{\"tokens\":[2147483648]}", "{\"tokens\":[1],\"count\":2}",
        "{\"tokens\":[1],\"count\":\"1\"}",
        "{\"tokens\":[1]} trailing", "{\"tokens\":null}")) {
      TokenizeException e = assertThrows(TokenizeException.class,
          () -> OkHttpTokenizer.parseTokens(bad.getBytes(StandardCharsets.UTF_8)), bad);
      assertEquals(-1, e.statusCode());
    }
  }

  @Test
  void errorMessagesComeFromOpenAiAndVllmBodies() {
    assertEquals("The model `x` does not exist.", OkHttpTokenizer.errorMessage(
        "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"code\":404}}"
            .getBytes(StandardCharsets.UTF_8)));
    assertEquals("bad", OkHttpTokenizer.errorMessage(
        "{\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"code\":400}"
            .getBytes(StandardCharsets.UTF_8)));
    assertEquals("Internal Server Error", OkHttpTokenizer.errorMessage(
        " Internal Server Error\n".getBytes(StandardCharsets.UTF_8)));
    assertEquals("(no body)", OkHttpTokenizer.errorMessage(new byte[0]));
  }
}
