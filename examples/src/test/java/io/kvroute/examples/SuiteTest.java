package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.RouterPolicy;
import io.kvroute.sim.MooncakeTrace;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SuiteTest {

  /**
   * The CI guard of issue 15: in every scenario of the reduced suite, {@code predictedTtft} keeps at least
   * {@code kvAware}'s request hit rate and at most 1.1x its TTFT p99, same seed, same arrivals, and no worker serves
   * more than 1.3x the mean number of requests.
   */
  @Test
  void predictedTtftKeepsKvAwaresHitRateAndTailInTheReducedSuite() {
    Map<String, Supplier<RouterPolicy>> policies = new LinkedHashMap<>();
    policies.put("kvAware", RouterPolicy::kvAware);
    policies.put("predictedTtft", RouterPolicy::predictedTtft);
    List<Suite.Row> rows = Suite.run(Suite.reduced(), policies, 1, null);
    assertEquals(Suite.reduced().size(), rows.size());
    List<String> failures = new ArrayList<>();
    for (Suite.Row row : rows) {
      Suite.Outcome kv = row.outcomes().get("kvAware");
      Suite.Outcome p = row.outcomes().get("predictedTtft");
      if (p.hitRate() < kv.hitRate()) {
        failures.add(row.scenario().name() + ": hit rate " + p.hitRate() + " < " + kv.hitRate());
      }
      if (p.ttftP99() > 1.1 * kv.ttftP99()) {
        failures.add(row.scenario().name() + ": p99 " + p.ttftP99() + " > 1.1 x " + kv.ttftP99());
      }
      if (p.maxMeanLoad() > 1.3) {
        failures.add(row.scenario().name() + ": max/mean load " + p.maxMeanLoad() + " > 1.3");
      }
    }
    assertTrue(failures.isEmpty(), String.join("\n", failures));
  }

  @Test
  void theSimulatorRunsInVirtualTimeSoResultsRepeatExactly() {
    Map<String, Supplier<RouterPolicy>> policies = Map.of("predictedTtft", RouterPolicy::predictedTtft);
    List<Suite.Scenario> one = Suite.reduced().subList(0, 1);
    Suite.Outcome a = Suite.run(one, policies, 7, null).get(0).outcomes().get("predictedTtft");
    Suite.Outcome b = Suite.run(one, policies, 7, null).get(0).outcomes().get("predictedTtft");
    assertEquals(a.hitRate(), b.hitRate());
    assertEquals(a.ttftP99(), b.ttftP99());
    assertTrue(java.util.Arrays.equals(a.requestsPerWorker(), b.requestsPerWorker()));
    assertTrue(java.util.Arrays.equals(a.ttftQuantiles(), b.ttftQuantiles()));
  }

  @Test
  void zipfExponentGivesTheRequestedTopShare() {
    double s = Suite.zipfExponentForTopShare(24, 0.5);
    double total = 0;
    for (int k = 1; k <= 24; k++) {
      total += Math.pow(k, -s);
    }
    assertEquals(0.5, 1 / total, 1e-9);
  }

  /**
   * The pooled-LRU bound on a hand-made trace, computed by hand: blocks of 512 tokens are 32 engine blocks of 16.
   * Request 0 (ids 1,2; 1024 tokens) misses; request 1 (ids 1,3; 1024 tokens) hits id 1 (32 blocks); request 2
   * (ids 1,2; 1024 tokens) hits ids 1 and 2 but not its last block, which holds the last token: 63 blocks. With room
   * for 64 blocks only, request 1's blocks evict id 2's, so request 2 hits 32 blocks.
   */
  @Test
  void pooledLruBoundMatchesAHandComputedTrace(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("t.jsonl");
    Files.writeString(file, String.join("\n",
        "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 2]}",
        "{\"timestamp\": 10, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 3]}",
        "{\"timestamp\": 20, \"input_length\": 1024, \"output_length\": 4, \"hash_ids\": [1, 2]}"),
        StandardCharsets.UTF_8);
    MooncakeTrace trace = MooncakeTrace.load(file);
    assertEquals((32 + 63) * 16 / 3072.0, PooledLru.cachedTokenRatio(trace, 1_000, 16), 1e-12);
    assertEquals((32 + 32) * 16 / 3072.0, PooledLru.cachedTokenRatio(trace, 64, 16), 1e-12);
  }
}
