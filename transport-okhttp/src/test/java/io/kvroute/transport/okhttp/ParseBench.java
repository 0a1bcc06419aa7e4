package io.kvroute.transport.okhttp;

import io.kvroute.WorkerId;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Measures parsing a vLLM exposition into {@link EngineMetrics}; a program, not a test (the README quotes its output).
 * Run from the module folder as {@link ForwardOverheadBench} says, with the class
 * {@code io.kvroute.transport.okhttp.ParseBench}.
 */
final class ParseBench {
  private ParseBench() {}

  public static void main(String[] args) throws Exception {
    String sample = Files.readString(Path.of("src/test/resources/io/kvroute/transport/okhttp/vllm-v1-metrics.txt"));
    // A large exposition: the sample's histogram repeated as a real server with many buckets and models would.
    StringBuilder big = new StringBuilder(sample);
    int i = 0;
    while (big.length() < 900_000) {
      big.append("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"").append(i++)
          .append(".0\",model_name=\"Qwen/Qwen3-8B\"} 17.0\n");
    }
    String large = big.toString();
    WorkerId w = WorkerId.of("w");
    for (String[] c : new String[][] {{"sample", sample}, {"900KB", large}}) {
      String text = c[1];
      int iters = text.length() < 10_000 ? 200_000 : 200;
      long sink = 0;
      for (int warm = 0; warm < 3; warm++) {
        long t0 = System.nanoTime();
        for (int k = 0; k < iters; k++) {
          sink += LoadMetrics.read(w, text, null, k).metrics().running();
        }
        long t1 = System.nanoTime();
        System.out.printf("%s (%d bytes, %d lines): %.2f us per parse (sink %d)%n", c[0], text.length(),
            text.lines().count(), (t1 - t0) / 1e3 / iters, sink);
      }
    }
  }
}
