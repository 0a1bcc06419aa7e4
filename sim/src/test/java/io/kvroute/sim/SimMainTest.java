package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The launcher's options; the fault-injection suite in transport-okhttp runs it as a process. */
class SimMainTest {
  private static final PrintStream OUT = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);

  @ParameterizedTest
  @ValueSource(strings = {"--bogus", "--port", "--port x", "--speedup fast", "--speedup 0", "--blocks -1",
      "--events-port 70000", "--model"})
  void badOptionsAreRefusedNamingTheOption(String line) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SimMain.parse(line.split(" "), OUT));
    assertTrue(e.getMessage().contains(line.split(" ")[0].substring(2)), e.getMessage());
  }

  @Test
  void tokenizerNeedsKvrouteTokenizersOnTheClassPath() {
    // the sim's own tests do not have kvroute-tokenizers; tokenizers' SimWithRealTokenizerTest runs the option
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SimMain.parse(new String[] {"--tokenizer", "/models/qwen3"}, OUT));
    assertTrue(e.getMessage().contains("kvroute-tokenizers on the class path"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> SimMain.parse(new String[] {"--tokenizer"}, OUT));
    assertTrue(e.getMessage().contains("--tokenizer needs a value"), e.getMessage());
  }

  @Test
  void optionsConfigureTheServerAndRequestsAreLogged() throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8);
    try (SimServer server = SimMain.parse(new String[] {"--model", "m1", "--blocks", "64", "--speedup", "50",
        "--max-tokens", "2", "--no-events", "--log-requests"}, out).build()) {
      assertEquals("m1", server.config().modelName());
      assertEquals(64, server.config().numBlocks());
      assertEquals(null, server.kvEventsEndpoint());
      java.net.http.HttpResponse<String> response = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(server.baseUri().resolve("/v1/completions"))
              .header("X-Request-Id", "req-7")
              .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"prompt\":\"a b c\"}")).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertEquals(200, response.statusCode(), response.body());
      assertEquals("REQUEST /v1/completions req-7\n", log.toString(StandardCharsets.UTF_8));
    }
  }
}
