package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.openai.ChatMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The fallback is asked only for the configured failures. The primary here is a test double, since the failures
 * under test (an in-process tokenizer that cannot count a request) come from the tokenizers module, which this
 * module cannot depend on; that module's tests run the real pair against a simulated worker.
 */
class FallbackTokenizerTest {
  /** Answers with fixed ids, or throws the given failure; counts its calls. */
  private static final class Scripted implements Tokenizer {
    final int[] ids;
    final @Nullable Exception failure;
    final AtomicInteger calls = new AtomicInteger();

    Scripted(int[] ids, @Nullable Exception failure) {
      this.ids = ids;
      this.failure = failure;
    }

    private int[] answer() throws IOException {
      calls.incrementAndGet();
      if (failure instanceof IOException io) {
        throw io;
      }
      if (failure != null) {
        throw (RuntimeException) failure;
      }
      return ids;
    }

    @Override
    public int[] tokenize(@Nullable String model, String prompt) throws IOException {
      return answer();
    }

    @Override
    public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) throws IOException {
      return answer();
    }

    @Override
    public int[] tokenizeRequest(byte[] requestBody) throws IOException {
      return answer();
    }
  }

  private static final byte[] BODY = "{\"prompt\":\"x\"}".getBytes(StandardCharsets.UTF_8);

  @Test
  void thePrimaryAnswersWhenItCan() throws IOException {
    Scripted primary = new Scripted(new int[] {1, 2}, null);
    Scripted fallback = new Scripted(new int[] {9}, null);
    FallbackTokenizer t = FallbackTokenizer.of(primary, fallback);
    assertArrayEquals(new int[] {1, 2}, t.tokenizeRequest(BODY));
    assertArrayEquals(new int[] {1, 2}, t.tokenize("m", "x"));
    assertArrayEquals(new int[] {1, 2}, t.tokenizeChat("m", List.of(ChatMessage.user("x"))));
    assertEquals(0, fallback.calls.get());
    assertEquals(0, t.fallbackCount());
  }

  @Test
  void unsupportedRequestsAndIoFailuresGoToTheFallback() throws IOException {
    Scripted fallback = new Scripted(new int[] {9}, null);
    FallbackTokenizer unsupported = FallbackTokenizer.of(
        new Scripted(new int[0], new UnsupportedOperationException("image parts")), fallback);
    assertArrayEquals(new int[] {9}, unsupported.tokenizeRequest(BODY));
    FallbackTokenizer io = FallbackTokenizer.of(new Scripted(new int[0], new IOException("gone")), fallback);
    assertArrayEquals(new int[] {9}, io.tokenize(null, "x"));
    assertArrayEquals(new int[] {9}, io.tokenizeChat(null, List.of(ChatMessage.user("x"))));
    assertEquals(3, fallback.calls.get());
    assertEquals(1, unsupported.fallbackCount());
    assertEquals(2, io.fallbackCount());
  }

  @Test
  void malformedRequestsAreNotRetried() {
    IllegalArgumentException bad = new IllegalArgumentException("messages[0] has the unknown role 'robot'");
    Scripted fallback = new Scripted(new int[] {9}, null);
    FallbackTokenizer t = FallbackTokenizer.of(new Scripted(new int[0], bad), fallback);
    assertSame(bad, assertThrows(IllegalArgumentException.class, () -> t.tokenizeRequest(BODY)));
    assertEquals(0, fallback.calls.get());
  }

  @Test
  void onlyTheConfiguredFailuresFallBack() throws IOException {
    Scripted fallback = new Scripted(new int[] {9}, null);
    FallbackTokenizer t = FallbackTokenizer.of(new Scripted(new int[0], new IOException("down")), fallback,
        List.of(UnsupportedOperationException.class));
    assertEquals("down", assertThrows(IOException.class, () -> t.tokenizeRequest(BODY)).getMessage());
    FallbackTokenizer any = FallbackTokenizer.of(new Scripted(new int[0], new IllegalStateException("closed")),
        fallback, List.of(RuntimeException.class));
    assertArrayEquals(new int[] {9}, any.tokenizeRequest(BODY));
    assertThrows(IllegalArgumentException.class, () -> FallbackTokenizer.of(fallback, fallback, List.of()));
  }
}
