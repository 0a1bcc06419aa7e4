package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ArticleExperimentTest {

  @Test
  void printsProgressAndOneRowPerKindWithEveryPolicy() {
    ArticleExperiment.Options options = ArticleExperiment.Options.parse(
        new String[] {"--kinds", "2,12", "--policies", "roundRobin,kvAware", "--runs", "1"});
    ByteArrayOutputStream progressBytes = new ByteArrayOutputStream();
    ArticleExperiment.Results results = ArticleExperiment.run(options,
        new PrintStream(progressBytes, true, StandardCharsets.UTF_8));
    String progress = progressBytes.toString(StandardCharsets.UTF_8);
    assertTrue(progress.contains("[ 1/4] kinds=2  roundRobin"), progress);
    assertTrue(progress.contains("[ 4/4] kinds=12 kvAware"), progress);

    ByteArrayOutputStream tableBytes = new ByteArrayOutputStream();
    ArticleExperiment.print(results, options, new PrintStream(tableBytes, true, StandardCharsets.UTF_8));
    String table = tableBytes.toString(StandardCharsets.UTF_8);
    assertTrue(table.contains("12    | 32.1 / 29.2 / 67.9%"), table);
    assertTrue(table.contains("12    | 0.247 / 0.573 / 0.480"), table);

    ArticleExperiment.Point rr = results.get(12, "roundRobin");
    ArticleExperiment.Point kv = results.get(12, "kvAware");
    assertTrue(kv.hitRate() > rr.hitRate() + 0.15, "KV-aware routing beats round-robin at 12 kinds");
    assertEquals(0.95, results.get(2, "roundRobin").hitRate(), 1e-9, "12 cold misses of 240");
    assertTrue(rr.cachedRatio() < rr.hitRate());
  }

  @Test
  void everyBuiltInPolicyIsOffered() {
    assertEquals(List.of("roundRobin", "random", "leastLoaded", "kvAware", "approximate", "cacheAffinity",
        "predictedTtft"),
        List.copyOf(ArticleExperiment.POLICIES.keySet()));
  }

  @Test
  void optionsRejectBadValuesWithTheOptionName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ArticleExperiment.Options.parse(new String[] {"--workers", "0"}));
    assertTrue(e.getMessage().contains("--workers"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> ArticleExperiment.Options.parse(new String[] {"--policies", "magic"}));
    assertTrue(e.getMessage().contains("magic"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ArticleExperiment.Options.parse(new String[] {"--kinds"}));
    assertThrows(IllegalArgumentException.class, () -> ArticleExperiment.Options.parse(new String[] {"--bogus", "1"}));
  }

  @Test
  void overlapWeightAppliesToTheKvAwarePolicies() {
    ArticleExperiment.Options options = ArticleExperiment.Options.parse(
        new String[] {"--kinds", "12", "--policies", "kvAware", "--runs", "1", "--overlap-weight", "4"});
    ArticleExperiment.Results weighted = ArticleExperiment.run(options,
        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    ArticleExperiment.Results defaults = ArticleExperiment.run(ArticleExperiment.Options.parse(
        new String[] {"--kinds", "12", "--policies", "kvAware", "--runs", "1"}),
        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
    assertTrue(weighted.get(12, "kvAware").hitRate() > defaults.get(12, "kvAware").hitRate(),
        "weighing overlap more keeps prefixes on fewer workers");
    assertThrows(IllegalArgumentException.class,
        () -> ArticleExperiment.Options.parse(new String[] {"--overlap-weight", "-1"}));
  }

  @Test
  void medianOfOddAndEvenCounts() {
    assertEquals(2.0, ArticleExperiment.median(new double[] {3, 1, 2}));
    assertEquals(2.5, ArticleExperiment.median(new double[] {4, 1, 2, 3}));
  }
}
