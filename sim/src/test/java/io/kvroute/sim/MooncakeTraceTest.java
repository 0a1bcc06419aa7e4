package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MooncakeTraceTest {
  @TempDir Path dir;

  private Path write(String... lines) throws IOException {
    Path file = dir.resolve("trace.jsonl");
    Files.writeString(file, String.join("\n", lines) + "\n");
    return file;
  }

  @Test
  void equalHashIdsExpandToEqualTokensAndTheLastBlockMayBePartial() throws IOException {
    MooncakeTrace trace = MooncakeTrace.load(write(
        "{\"timestamp\": 100, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}",
        "",
        "{\"timestamp\": 350, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [0, 5]}"));
    assertEquals(2, trace.size());
    assertEquals(0, trace.arrivalNanos(0));
    assertEquals(250_000_000L, trace.arrivalNanos(1));
    SimRequest a = trace.request(0);
    SimRequest b = trace.request(1);
    assertEquals(1100, a.promptTokens().length);
    assertEquals(7, a.maxTokens());
    assertEquals(600, b.promptTokens().length);
    assertArrayEquals(Arrays.copyOf(a.promptTokens(), 512), Arrays.copyOf(b.promptTokens(), 512));
    assertFalse(Arrays.equals(Arrays.copyOfRange(a.promptTokens(), 512, 600),
        Arrays.copyOfRange(b.promptTokens(), 512, 600)));
    assertEquals(1107, trace.maxSequenceTokens());
    assertArrayEquals(a.promptTokens(), trace.request(0).promptTokens(), "deterministic");
  }

  @Test
  void malformedLinesAreRejectedWithTheirLineNumber() throws IOException {
    Path file = write("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}",
        "{\"timestamp\": 1, \"input_length\": 2000, \"output_length\": 1, \"hash_ids\": [0]}");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MooncakeTrace.load(file));
    assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    Path garbage = write("not json");
    e = assertThrows(IllegalArgumentException.class, () -> MooncakeTrace.load(garbage));
    assertTrue(e.getMessage().contains("line 1"), e.getMessage());
  }

  @Test
  void openLoopReplaySendsAtTheTraceTimes() throws IOException {
    // Three requests a minute apart: each runs alone, so the repeated prefix is always a hit on its worker.
    MooncakeTrace trace = MooncakeTrace.load(write(
        "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [7, 8]}",
        "{\"timestamp\": 60000, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [7, 9]}",
        "{\"timestamp\": 120000, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [7, 10]}"));
    SimulationResult r = Simulation.newBuilder()
        .workers(2)
        .requests(trace.size())
        .workload(trace)
        .openLoop(trace::arrivalNanos)
        .router(ticker -> Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(ticker).randomSeed(1).build())
        .build()
        .run();
    assertEquals(3, r.requests());
    assertEquals(2, r.hitRequests(), "the second and third requests reuse block 7");
    assertEquals(2 * 512, r.cachedTokens());
    assertTrue(r.duration().toSeconds() >= 120, "the last request arrives two minutes in");
  }
}
