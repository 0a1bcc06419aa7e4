package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * One tokenizer shared by threads that render, encode and use the prefix cache at once gives each thread what a
 * lone thread gets (computed first, single-threaded, encoding each whole text without the cache).
 */
class ConcurrencyTest {
  @Test
  void threadsSharingOneTokenizerGetTheSingleThreadedAnswers() throws Exception {
    HfTokenizer shared = TestModels.shared(TestModels.QWEN3);
    {
      int threads = 4;
      int conversations = 6;
      // each conversation grows turn by turn; threads interleave turns of different conversations
      List<List<byte[]>> bodies = new ArrayList<>();
      List<List<int[]>> expected = new ArrayList<>();
      SplittableRandom r = new SplittableRandom(42);
      for (int c = 0; c < conversations; c++) {
        List<Map<String, Object>> messages = new ArrayList<>();
        messages.add(PrefixCacheTest.message("system", "conversation " + c + " <|im_start|> 你好"));
        List<byte[]> turns = new ArrayList<>();
        List<int[]> ids = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
          messages.add(PrefixCacheTest.message("user", "question " + t + " " + "word ".repeat(r.nextInt(40))));
          byte[] body = PrefixCacheTest.chatBody(messages, new LinkedHashMap<>());
          turns.add(body);
          ids.add(shared.tokenize(shared.applyChatTemplate(body), false)); // whole text, no cache
          messages.add(PrefixCacheTest.message("assistant", "answer " + t + " 😀"));
        }
        bodies.add(turns);
        expected.add(ids);
      }
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Integer>> results = new ArrayList<>();
      for (int th = 0; th < threads; th++) {
        int me = th;
        results.add(pool.submit(() -> {
          start.await();
          int checked = 0;
          for (int round = 0; round < 3; round++) {
            for (int c = 0; c < conversations; c++) {
              int conversation = (c + me) % conversations;
              for (int t = 0; t < 8; t++) {
                assertArrayEquals(expected.get(conversation).get(t),
                    shared.tokenizeRequest(bodies.get(conversation).get(t)), "thread " + me + " conversation "
                        + conversation + " turn " + t);
                checked++;
              }
            }
          }
          return checked;
        }));
      }
      start.countDown();
      int total = 0;
      for (Future<Integer> f : results) {
        total += f.get(120, TimeUnit.SECONDS);
      }
      pool.shutdown();
      assertEquals(threads * 3 * conversations * 8, total);
    }
  }

}
