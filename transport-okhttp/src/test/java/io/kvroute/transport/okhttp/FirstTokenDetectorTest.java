package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import okhttp3.MediaType;
import okio.Buffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FirstTokenDetectorTest {
  private static final MediaType SSE = MediaType.get("text/event-stream; charset=utf-8");
  private static final String ROLE = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\","
      + "\"choices\":[{\"index\":0,"
      + "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  private static final String CONTENT = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w1\"},"
      + "\"finish_reason\":null}]}\n\n";

  /** Feeds {@code text} in pieces of {@code step} bytes; returns the byte offset after which the token was seen. */
  private static long feed(FirstTokenDetector detector, String text, int step) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    Buffer buffer = new Buffer();
    buffer.writeUtf8("prefix already consumed");
    for (int i = 0; i < bytes.length; i += step) {
      int n = Math.min(step, bytes.length - i);
      long offset = buffer.size();
      buffer.write(bytes, i, n);
      if (detector.onBytes(buffer, offset, n)) {
        return i + n;
      }
    }
    return -1;
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 3, 7, 64, 100_000})
  void theRoleChunkIsNotATokenButTheFirstContentIs(int step) {
    FirstTokenDetector detector = FirstTokenDetector.of(SSE);
    assertTrue(detector.isEventStream());
    long at = feed(detector, ROLE + CONTENT + CONTENT, step);
    int contentEnd = (ROLE + CONTENT).getBytes(StandardCharsets.UTF_8).length;
    assertTrue(at >= contentEnd && at < contentEnd + step, "seen at " + at + " with step " + step);
  }

  @Test
  void completionTextCountsWhenNotEmpty() {
    assertFalse(FirstTokenDetector.isToken("{\"choices\":[{\"text\":\"\",\"finish_reason\":null}]}"));
    assertTrue(FirstTokenDetector.isToken("{\"choices\":[{\"text\":\" hello\",\"finish_reason\":null}]}"));
    assertFalse(FirstTokenDetector.isToken("{\"choices\":[],\"usage\":{\"prompt_tokens\":3}}"));
    assertTrue(FirstTokenDetector.isToken("{\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}"));
    assertTrue(FirstTokenDetector.isToken("{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}"));
    assertTrue(FirstTokenDetector.isToken(" [DONE] "));
    assertFalse(FirstTokenDetector.isToken("{\"error\":{\"message\":\"boom\"}}")); // a failure, not output
    assertTrue(FirstTokenDetector.isToken("not json"));
    assertFalse(FirstTokenDetector.isToken("{\"object\":\"keepalive\"}"));
  }

  @Test
  void handlesCrlfCommentsAndMultiLineData() {
    FirstTokenDetector detector = FirstTokenDetector.of(SSE);
    String stream = ": keep-alive\r\n\r\nevent: message\r\ndata: {\"choices\":[{\"delta\":\r\n"
        + "data: {\"role\":\"assistant\"}}]}"
        + "\r\n\r\ndata: {\"choices\":[{\"text\":\"x\"}]}\r\n\r\n";
    long at = feed(detector, stream, 5);
    assertEquals(stream.length(), at, "only the last event carries output");
  }

  @Test
  void otherBodiesHoldTheTokenInTheirFirstByte() {
    FirstTokenDetector detector = FirstTokenDetector.of(MediaType.get("application/json"));
    assertFalse(detector.isEventStream());
    assertEquals(1, feed(detector, "{\"choices\":[]}", 1));
    assertEquals(1, feed(FirstTokenDetector.of(null), "x", 1));
  }

  @Test
  void hugeEventsCountWithoutBeingParsed() {
    FirstTokenDetector detector = FirstTokenDetector.of(SSE);
    String huge = "data: " + "x".repeat(FirstTokenDetector.MAX_EVENT_BYTES + 10);
    assertTrue(feed(detector, huge, 4096) > 0);
  }
}
