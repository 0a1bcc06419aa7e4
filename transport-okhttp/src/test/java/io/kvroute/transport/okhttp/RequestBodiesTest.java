package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.openai.ChatMessage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * How request bodies and tokenize responses are read: {@link Tokenizer#tokenizeRequest}'s default (kvroute-openai-wire's
 * {@code OpenAiRequest} underneath) and {@link OkHttpTokenizer}'s strict response parsing.
 */
class RequestBodiesTest {
  /** Records what the default {@code tokenizeRequest} asks for; answers with the text's length. */
  private static final class Recording implements Tokenizer {
    final List<String> calls = new ArrayList<>();

    @Override
    public int[] tokenize(@Nullable String model, String prompt) {
      calls.add("text " + model + " " + prompt);
      return new int[prompt.length()];
    }

    @Override
    public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) {
      calls.add("chat " + model + " " + messages);
      return new int[messages.size()];
    }
  }

  private static int[] tokenize(Recording tokenizer, String json) throws Exception {
    return tokenizer.tokenizeRequest(json.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void theDefaultTokenizeRequestReadsEveryPromptShape() throws Exception {
    Recording t = new Recording();
    assertEquals(11, tokenize(t, "{\"model\":\"m\",\"prompt\":\"hello world\",\"max_tokens\":3}").length);
    assertEquals(3, tokenize(t, "{\"prompt\":[\"one\"]}").length);
    assertArrayEquals(new int[] {1, 2, 3}, tokenize(t, "{\"prompt\":[1,2,3]}"));
    assertArrayEquals(new int[] {4, 5}, tokenize(t, "{\"prompt\":[[4,5]]}"));
    tokenize(t, "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        + "{\"role\":\"assistant\",\"content\":null}]}");
    assertEquals(List.of("text m hello world", "text null one", "chat null " + List.of(ChatMessage.system("be brief"),
        ChatMessage.user("a\nb"), ChatMessage.assistant(""))), t.calls);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "[]", "{}", "{\"prompt\":\"a\",\"messages\":[]}", "{\"prompt\":[\"a\",\"b\"]}",
      "{\"prompt\":[[1],[2]]}", "{\"prompt\":[1,-2]}", "{\"prompt\":[1,2.5]}", "{\"prompt\":[4294967296]}",
      "{\"prompt\":[]}", "{\"prompt\":7}", "{\"messages\":[]}", "{\"messages\":[1]}",
      "{\"messages\":[{\"content\":\"x\"}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "{\"model\":1,\"prompt\":\"x\"}", "{\"prompt\":\"x\",}"})
  void refusesWhatCannotBeRouted(String body) {
    Recording t = new Recording();
    assertThrows(IllegalArgumentException.class, () -> tokenize(t, body), body);
    assertEquals(List.of(), t.calls);
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
