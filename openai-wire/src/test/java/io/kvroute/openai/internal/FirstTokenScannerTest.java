package io.kvroute.openai.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The in-stream error event's {@code code} decides whose fault it was; see {@link FirstTokenScanner}. */
class FirstTokenScannerTest {
  static LongStream seeds() {
    return LongStream.range(0, 300);
  }

  /** One way to write an error object's code, and whether it is the request's fault (a 4xx integer). */
  private record Code(String json, boolean requestsFault) {}

  private static Code code(SplittableRandom random) {
    return switch (random.nextInt(9)) {
      case 0, 1 -> new Code(Integer.toString(400 + random.nextInt(100)), true); // vLLM's 400, 404, 422, 429...
      case 2 -> new Code(Integer.toString(500 + random.nextInt(100)), false); // vLLM's 500, 501, 503
      case 3 -> new Code(null, false); // no code key at all
      case 4 -> new Code("\"" + (400 + random.nextInt(100)) + "\"", false); // a string, not vLLM's integer
      case 5 -> new Code("null", false);
      case 6 -> new Code((400 + random.nextInt(100)) + "." + (1 + random.nextInt(9)), false); // a fraction
      case 7 -> new Code(Integer.toString(4000 + random.nextInt(100_000)), false); // no HTTP status
      default -> new Code(random.nextBoolean() ? "-" + (400 + random.nextInt(100)) : Integer.toString(
          100 + random.nextInt(300)), false); // negative, or a status below 400
    };
  }

  /** A message that itself mentions a code, ends in a backslash or is long: none of it is the code. */
  private static String message(SplittableRandom random) {
    return switch (random.nextInt(5)) {
      case 0 -> "boom";
      case 1 -> "bad \"code\": 404 in the prompt";
      case 2 -> "{\"code\": 400}";
      case 3 -> "path C:\\";
      default -> "x".repeat(random.nextInt(300));
    };
  }

  private static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  private static String space(SplittableRandom random) {
    return random.nextInt(3) == 0 ? "" : " ".repeat(1 + random.nextInt(2));
  }

  /** vLLM's error object ({@code ErrorInfo}: message, type, param, code) in a random member order. */
  private static String errorObject(SplittableRandom random, Code code) {
    List<String> members = new ArrayList<>();
    members.add("\"message\":" + space(random) + quote(message(random)));
    members.add("\"type\":" + space(random) + quote(random.nextBoolean() ? "BadRequestError" : "code"));
    members.add("\"param\":" + space(random) + (random.nextBoolean() ? "null" : quote("code")));
    if (random.nextBoolean()) { // a nested "code" is not the error's code
      members.add("\"details\":" + space(random) + "{\"code\":" + space(random) + "404, \"list\": [\"code\"]}");
    }
    if (code.json() != null) {
      members.add("\"code\":" + space(random) + code.json());
    }
    Collections.shuffle(members, new Random(random.nextLong()));
    return "{" + space(random) + String.join("," + space(random), members) + space(random) + "}";
  }

  private static String lineEnd(SplittableRandom random) {
    return switch (random.nextInt(3)) {
      case 0 -> "\n";
      case 1 -> "\r\n";
      default -> "\r";
    };
  }

  /**
   * A stream of 0-3 output events, then maybe vLLM's error event with a random code, then {@code [DONE]}: the
   * first token fires once unless the error came first; a 4xx integer code is {@link FirstTokenScanner#rejected()},
   * any other (5xx, missing, string, null, fraction, out of range) {@link FirstTokenScanner#failed()}. Both the
   * parsed path (the error before any token) and the byte state machine (after one) are covered.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theErrorCodeTellsTheRequestsFaultFromTheEngines(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int outputs = random.nextInt(4);
    boolean error = random.nextInt(5) != 0;
    Code code = code(random);
    StringBuilder sse = new StringBuilder();
    for (int i = 0; i < outputs; i++) {
      String end = lineEnd(random);
      sse.append("data: {\"choices\":[{\"text\":\" \\\"error\\\": {\\\"code\\\": 400} w").append(i).append("\"}]}")
          .append(end).append(end);
    }
    if (error) {
      String end = lineEnd(random);
      sse.append("data:").append(space(random)).append("{\"error\":").append(space(random))
          .append(errorObject(random, code)).append("}").append(end).append(end);
    }
    String end = lineEnd(random);
    sse.append("data: [DONE]").append(end).append(end);
    byte[] bytes = sse.toString().getBytes(StandardCharsets.UTF_8);
    FirstTokenScanner scanner = new FirstTokenScanner(true);
    int fired = 0;
    for (byte b : bytes) {
      if (scanner.accept(b)) {
        fired++;
      }
    }
    String shown = sse.toString();
    assertEquals(outputs > 0 || !error ? 1 : 0, fired, shown);
    assertEquals(error && code.requestsFault(), scanner.rejected(), shown);
    assertEquals(error && !code.requestsFault(), scanner.failed(), shown);
  }

  @Test
  void vllmsOwnBadRequestAndEngineErrorsAfterOutput() {
    String output = "data: {\"choices\":[{\"index\":0,\"text\":\" a\"}]}\n\n";
    String badRequest = "data: {\"error\": {\"message\": \"Please reduce the length of the input.\", \"type\": "
        + "\"BadRequestError\", \"param\": \"input_tokens\", \"code\": 400}}\n\ndata: [DONE]\n\n";
    String engineDead = "data: {\"error\": {\"message\": \"EngineCore encountered an issue.\", \"type\": "
        + "\"InternalServerError\", \"param\": null, \"code\": 500}}\n\ndata: [DONE]\n\n";
    FirstTokenScanner rejected = feed(output + badRequest);
    assertTrue(rejected.seen());
    assertTrue(rejected.rejected());
    assertFalse(rejected.failed());
    FirstTokenScanner failed = feed(output + engineDead);
    assertTrue(failed.failed());
    assertFalse(failed.rejected());
  }

  private static FirstTokenScanner feed(String sse) {
    FirstTokenScanner scanner = new FirstTokenScanner(true);
    for (byte b : sse.getBytes(StandardCharsets.UTF_8)) {
      scanner.accept(b);
    }
    return scanner;
  }

  /** After the first token, watching every line for an error event and its code allocates nothing. */
  @Test
  void watchingAfterTheFirstTokenAllocatesNothing() {
    var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    byte[] event = ("data: {\"choices\":[{\"text\":\" w\"}]}\n\ndata: {\"errors\": {\"message\": \"x\", "
        + "\"code\": 400}}\n\n").getBytes(StandardCharsets.UTF_8);
    FirstTokenScanner scanner = new FirstTokenScanner(true);
    for (int i = 0; i < 20_000; i++) { // warm up: the first token, then compiled code
      for (byte b : event) {
        scanner.accept(b);
      }
    }
    long thread = Thread.currentThread().getId();
    long before = threads.getThreadAllocatedBytes(thread);
    for (int i = 0; i < 10_000; i++) {
      for (byte b : event) {
        scanner.accept(b);
      }
    }
    long allocated = threads.getThreadAllocatedBytes(thread) - before;
    assertFalse(scanner.failed() || scanner.rejected()); // "errors" is not "error"
    // ~1 MB scanned; a per-event allocation would be >= 160 KB. The bound leaves room for the measuring itself.
    assertTrue(allocated < 16_384, "allocated " + allocated + " bytes over 10,000 events");
  }

  // Mutation audit (docs/TEST-AUDIT.md): each test below fails on a one-line bug that no test caught.

  /** The byte (1-based) at which accept first returned true, or -1. */
  private static long firstTokenAt(FirstTokenScanner scanner, byte[] bytes) {
    for (int i = 0; i < bytes.length; i++) {
      if (scanner.accept(bytes[i])) {
        return i + 1;
      }
    }
    return -1;
  }

  @Test
  void anEventLongerThanTheBoundIsTheFirstTokenAtItsBoundthByte() {
    // No line end at all: without the bound the scanner would buffer the whole body and never fire.
    byte[] endless = ("data: {\"choices\":[{\"text\":\"" + "x".repeat(FirstTokenScanner.MAX_EVENT_BYTES))
        .getBytes(StandardCharsets.UTF_8);
    FirstTokenScanner scanner = new FirstTokenScanner(true);
    assertEquals(FirstTokenScanner.MAX_EVENT_BYTES + 1L, firstTokenAt(scanner, endless));
    assertTrue(scanner.seen());
    assertFalse(scanner.failed() || scanner.rejected());
  }

  @Test
  void theRoleChunkAndUsageChunksAreNotTheFirstToken() {
    // vLLM's chat stream opens the assistant's turn with an empty content before any output.
    String role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    String usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9}}\n\n";
    String empty = "data: {\"choices\":[{\"delta\":{\"content\":\"\",\"tool_calls\":[]}}]}\n\n";
    String output = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    byte[] stream = (role + usage + empty + output).getBytes(StandardCharsets.UTF_8);
    // The token completes at the blank line ending the output event: the stream's last byte.
    assertEquals(stream.length, firstTokenAt(new FirstTokenScanner(true), stream));
  }

  @Test
  void anErrorCodeBeyondAnIntAfterTheFirstTokenIsTheEnginesFailure() {
    // 2^32 + 400 and 10^10 + 404 wrap to 4xx in a 32-bit accumulator; neither is an HTTP status.
    for (String code : new String[] {"4294967696", "10000000404", "400000000000000000000"}) {
      FirstTokenScanner scanner = feed("data: {\"choices\":[{\"text\":\" a\"}]}\n\n"
          + "data: {\"error\": {\"message\": \"x\", \"code\": " + code + "}}\n\n");
      assertTrue(scanner.failed(), code);
      assertFalse(scanner.rejected(), code);
    }
  }

  /**
   * The edges of "the request's fault": exactly the integer codes 400 to 499 are, 399 and 500 are not, both when the
   * error event comes before any token (the parsed path) and after one (the byte state machine). The seeded test
   * above draws 5xx codes uniformly, so it almost never writes 500 itself before a token.
   */
  @Test
  void theFaultBoundariesAre400And499OnBothPaths() {
    String output = "data: {\"choices\":[{\"text\":\" a\"}]}\n\n";
    for (int code : new int[] {0, 399, 400, 401, 498, 499, 500, 501, 599}) {
      boolean requests = code >= 400 && code <= 499;
      String error = "data: {\"error\": {\"message\": \"x\", \"type\": \"t\", \"code\": " + code + "}}\n\n";
      for (String before : new String[] {"", output}) {
        FirstTokenScanner scanner = feed(before + error + "data: [DONE]\n\n");
        String shown = code + (before.isEmpty() ? " before the first token" : " after it");
        assertEquals(!before.isEmpty(), scanner.seen(), shown);
        assertEquals(requests, scanner.rejected(), shown);
        assertEquals(!requests, scanner.failed(), shown);
      }
    }
  }
}
