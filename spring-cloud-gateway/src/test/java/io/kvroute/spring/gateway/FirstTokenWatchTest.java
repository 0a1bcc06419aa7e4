package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;

class FirstTokenWatchTest {
  private static DataBuffer buffer(byte[] bytes, int from, int to) {
    DataBuffer b = DefaultDataBufferFactory.sharedInstance.allocateBuffer(to - from + 8);
    b.write(new byte[3]); // a read position that is not 0, as pooled Netty buffers have
    b.readPosition(3);
    b.write(bytes, from, to - from);
    return b;
  }

  static LongStream seeds() {
    return LongStream.range(0, 200);
  }

  /**
   * A chat stream as vLLM writes it (role opener, output events, usage, [DONE]), with comments and CRLF, LF or CR
   * line ends at random, cut into random chunks: the watch fires exactly once, on the chunk holding the blank line
   * that ends the first event with output, computed here from the byte offsets alone.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void firesOnTheChunkThatCompletesTheFirstOutputEvent(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    String nl = switch (random.nextInt(3)) { // the event stream grammar's three line ends
      case 0 -> "\n";
      case 1 -> "\r\n";
      default -> "\r";
    };
    StringBuilder sse = new StringBuilder();
    if (random.nextBoolean()) {
      sse.append(": keep-alive").append(nl).append(nl);
    }
    sse.append("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}").append(nl)
        .append(nl);
    int firstEnd = -1;
    int outputs = 1 + random.nextInt(5);
    for (int i = 0; i < outputs; i++) {
      if (random.nextInt(4) == 0) {
        sse.append("event: message").append(nl);
      }
      sse.append("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w").append(i).append("\"}}]}")
          .append(nl);
      if (i == 0) {
        firstEnd = sse.toString().getBytes(StandardCharsets.UTF_8).length; // the blank line ends at its CR or LF
      }
      sse.append(nl);
    }
    sse.append("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5}}").append(nl).append(nl)
        .append("data: [DONE]").append(nl).append(nl);
    byte[] bytes = sse.toString().getBytes(StandardCharsets.UTF_8);
    List<int[]> chunks = new ArrayList<>();
    for (int at = 0; at < bytes.length; ) {
      int len = 1 + random.nextInt(Math.min(64, bytes.length - at));
      chunks.add(new int[] {at, at + len});
      at += len;
    }
    FirstTokenWatch watch = new FirstTokenWatch(true);
    int fired = 0;
    for (int[] c : chunks) {
      DataBuffer b = buffer(bytes, c[0], c[1]);
      int before = b.readPosition();
      boolean hit = watch.onChunk(b);
      assertEquals(before, b.readPosition(), "the chunk passes on unread");
      boolean expected = c[0] <= firstEnd && firstEnd < c[1];
      assertEquals(expected, hit, "chunk [" + c[0] + ", " + c[1] + ") with the first token ending at " + firstEnd);
      fired += hit ? 1 : 0;
    }
    assertEquals(1, fired);
    assertTrue(watch.seen());
  }

  @Test
  void aBodyThatIsNotAnEventStreamHoldsItsFirstTokenInItsFirstByte() {
    FirstTokenWatch watch = new FirstTokenWatch(false);
    assertFalse(watch.onChunk(buffer(new byte[0], 0, 0)), "an empty chunk carries nothing");
    byte[] json = "{\"choices\":[]}".getBytes(StandardCharsets.UTF_8);
    assertTrue(watch.onChunk(buffer(json, 0, 1)));
    assertFalse(watch.onChunk(buffer(json, 1, json.length)), "only once");
  }

  @Test
  void anOversizedEventCountsWithoutBeingBuffered() {
    FirstTokenWatch watch = new FirstTokenWatch(true);
    byte[] chunk = new byte[64 << 10];
    java.util.Arrays.fill(chunk, (byte) 'x');
    boolean hit = false;
    int chunks = 0;
    while (!hit) {
      hit = watch.onChunk(buffer(chunk, 0, chunk.length));
      chunks++;
    }
    assertEquals(FirstTokenWatch.MAX_EVENT_BYTES / chunk.length + 1, chunks);
  }

  @ParameterizedTest
  @ValueSource(strings = {"[DONE]", "not json", "[1,2]",
      "{\"choices\":[{\"text\":\"a\"}]}", "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}",
      "{\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}",
      "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}"})
  void eventsThatCarryOutputOrEndTheStreamCount(String data) {
    assertTrue(FirstTokenWatch.isToken(data), data);
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}",
      "{\"choices\":[],\"usage\":{\"prompt_tokens\":3}}", "{\"choices\":[{\"text\":\"\"}]}", "{\"id\":\"x\"}",
      "{\"error\":null,\"choices\":[{\"delta\":{\"tool_calls\":[]}}]}",
      "{\"error\":{\"message\":\"boom\",\"type\":\"InternalServerError\",\"code\":500}}"})
  void eventsThatOnlyOpenTheTurnOrReportUsageDoNot(String data) {
    assertFalse(FirstTokenWatch.isToken(data), data);
  }

  /**
   * vLLM's in-stream failure ({@code data: {"error": {...}}} then {@code [DONE]}), before or after output, cut into
   * random chunks: the error event is never the first token; its {@code code} says whose fault it was: a 4xx integer
   * is the request's ({@code rejected}, not {@code failed}), a 5xx, no code or a string the engine's
   * ({@code failed}); output that merely mentions "error" or a code does not count.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void anErrorEventIsAFailureNotAToken(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int outputs = random.nextInt(4); // 0: the engine failed before any output
    boolean fails = random.nextInt(4) != 0;
    int kind = random.nextInt(4);
    String code = switch (kind) {
      case 0 -> ", \"code\": " + (400 + random.nextInt(100)); // the request's fault
      case 1 -> ", \"code\": " + (500 + random.nextInt(100));
      case 2 -> ""; // no code
      default -> ", \"code\": \"400\""; // not vLLM's integer
    };
    boolean requestsFault = fails && kind == 0;
    StringBuilder sse = new StringBuilder();
    for (int i = 0; i < outputs; i++) {
      sse.append("data: {\"choices\":[{\"text\":\" \\\"error\\\": {\\\"code\\\": 400} w").append(i)
          .append("\"}]}\n\n");
    }
    if (fails) {
      sse.append("data: {\"error\": {\"message\": \"boom\", \"type\": \"InternalServerError\", \"param\": null")
          .append(code).append("}}\n\n");
    }
    sse.append("data: [DONE]\n\n");
    byte[] bytes = sse.toString().getBytes(StandardCharsets.UTF_8);
    FirstTokenWatch watch = new FirstTokenWatch(true);
    int fired = 0;
    for (int from = 0; from < bytes.length; ) {
      int to = Math.min(bytes.length, from + 1 + random.nextInt(40));
      if (watch.onChunk(buffer(bytes, from, to))) {
        fired++;
      }
      from = to;
    }
    assertEquals(outputs > 0 || !fails ? 1 : 0, fired, sse.toString());
    assertEquals(fails && !requestsFault, watch.failed(), sse.toString());
    assertEquals(requestsFault, watch.rejected(), sse.toString());
  }
}
