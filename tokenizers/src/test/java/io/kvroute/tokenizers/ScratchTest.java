package io.kvroute.tokenizers;
import java.util.*;
import org.junit.jupiter.api.Test;
class ScratchTest {
  @Test
  void scratch() throws Exception {
    HfTokenizer t = TestModels.builder(TestModels.QWEN3).prefixCacheBytes(0).build();
    StringBuilder sb = new StringBuilder();
    SplittableRandom r = new SplittableRandom(1);
    String[] w = {"the", "cache", "router", "prefix", "token", "worker", "你好", "model", "latency", "queue", "😀", "42"};
    while (t.tokenize(sb.toString(), false).length < 1900) sb.append(w[r.nextInt(w.length)]).append(' ');
    List<Map<String, Object>> msgs = new ArrayList<>();
    msgs.add(PrefixCacheTest.message("system", "You are helpful."));
    msgs.add(PrefixCacheTest.message("user", sb.toString()));
    byte[] body = PrefixCacheTest.chatBody(msgs, new LinkedHashMap<>());
    System.out.println("TOKENS " + t.tokenizeRequest(body).length);
    for (int round = 0; round < 3; round++) {
      int n = 300;
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) t.applyChatTemplate(body);
      long t1 = System.nanoTime();
      String text = t.applyChatTemplate(body);
      for (int i = 0; i < n; i++) t.tokenize(text, false);
      long t2 = System.nanoTime();
      for (int i = 0; i < n; i++) t.tokenizeRequest(body);
      long t3 = System.nanoTime();
      System.out.printf("RENDER %.1f us ENCODE %.1f us FULL %.1f us%n", (t1 - t0) / 1e3 / n, (t2 - t1) / 1e3 / n, (t3 - t2) / 1e3 / n);
    }
  }
}
