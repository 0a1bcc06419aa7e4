package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.testkit.NatsServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class ReplicaExperimentTest {
  private static final PrintStream QUIET = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);

  @Test
  void runsOneRowPerPointAndPrintsGapsAgainstTheSingleRouter() {
    ReplicaExperiment.Options options = ReplicaExperiment.Options.parse(new String[] {"--kinds", "7", "--policies",
        "kvAware", "--replicas", "1,2", "--sync", "none", "--runs", "1", "--requests", "48"});
    List<ReplicaExperiment.Row> rows = ReplicaExperiment.run(options, null, QUIET);
    assertEquals(2, rows.size());
    assertEquals(1, rows.get(0).replicas());
    assertEquals(2, rows.get(1).replicas());
    ByteArrayOutputStream table = new ByteArrayOutputStream();
    ReplicaExperiment.print(rows, options, new PrintStream(table, true, StandardCharsets.UTF_8));
    String text = table.toString(StandardCharsets.UTF_8);
    assertTrue(text.contains("kvAware       |  2 | none"), text);
    assertTrue(text.contains(" pp "), "the N=2 row shows its hit-rate gap: " + text);
  }

  @Test
  void theRouterSeedOptionVariesOnlyTheRoutersOwnSeed() {
    ReplicaExperiment.Options plain = ReplicaExperiment.Options.parse(new String[] {"--kinds", "7"});
    ReplicaExperiment.Options varied = ReplicaExperiment.Options.parse(new String[] {"--kinds", "7", "--router-seed",
        "3"});
    assertEquals(0, plain.routerSeed);
    assertEquals(3, varied.routerSeed);
    assertEquals(plain.seed, varied.seed, "the workload's seed stays");
    assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--router-seed", "three"}));
  }

  @Test
  void syncOverARealNatsServerSendsAtLeastEachBookingsLoadKeys() throws Exception {
    Assumptions.assumeTrue(NatsServer.findBinary().isPresent(), NatsServer.INSTALL_HINT);
    try (NatsServer server = NatsServer.start()) {
      ReplicaExperiment.Options options = ReplicaExperiment.Options.parse(new String[] {"--kinds", "7",
          "--policies", "kvAware", "--replicas", "2", "--sync", "nats", "--runs", "1", "--requests", "48"});
      ReplicaExperiment.Row row = ReplicaExperiment.run(options, server.url(), QUIET).get(0);
      // A 2,371-token prompt has 148 full blocks, hence ceil(148 / 8) = 19 load keys of 8 bytes in its booking;
      // at most all 148 hashes (a predicted booking) plus first-token, close and frame overhead.
      assertTrue(row.syncBytesPerRequest() >= 19 * 8, row.toString());
      assertTrue(row.syncBytesPerRequest() <= 148 * 8 + 400, row.toString());
      assertTrue(row.hitRate() > 0.5, "7 prefix kinds over 6 workers mostly hit: " + row);
    }
  }

  @Test
  void loadBalanceIsTheBusiestWorkerOverTheMean() {
    assertEquals(1.0, ReplicaExperiment.maxOverMean(new int[] {2, 2, 2}), 1e-12);
    assertEquals(2.0, ReplicaExperiment.maxOverMean(new int[] {4, 2, 0}), 1e-12);
  }

  /**
   * One policy instance for all replicas with every delta delivered before the simulation goes on is one router:
   * four replicas must then reproduce the single router's run exactly (the same simulation, the same seeds, every
   * replica deciding on the whole view and the whole policy state). It fails if the shared instance also learned
   * from the peers' notes (each selection learned once per replica), or if a delta were still in flight when the
   * next request is routed.
   */
  @Test
  void oneSharedPolicyWithDeliveryAtOnceRoutesAsOneRouter() throws Exception {
    Assumptions.assumeTrue(NatsServer.findBinary().isPresent(), NatsServer.INSTALL_HINT);
    try (NatsServer server = NatsServer.start()) {
      ReplicaExperiment.Options options = ReplicaExperiment.Options.parse(new String[] {"--kinds", "12",
          "--policies", "predictedTtft", "--replicas", "1,4", "--sync", "none,nats", "--runs", "1", "--requests",
          "96", "--concurrency", "8", "--sync-interval-ms", "0", "--shared-policy", "true"});
      List<ReplicaExperiment.Row> rows = ReplicaExperiment.run(options, server.url(), QUIET);
      ReplicaExperiment.Row one = rows.get(0);
      ReplicaExperiment.Row synced = rows.get(2);
      assertEquals(1, one.replicas());
      assertEquals("nats", synced.sync());
      assertEquals(4, synced.replicas());
      assertEquals(one.hitRate(), synced.hitRate(), 0.0, synced.toString());
      assertEquals(one.ttftP50(), synced.ttftP50(), 0.0, synced.toString());
      assertEquals(one.ttftP99(), synced.ttftP99(), 0.0, synced.toString());
      assertEquals(one.warmP99(), synced.warmP99(), 0.0, synced.toString());
      assertEquals(one.imbalance(), synced.imbalance(), 0.0, synced.toString());
    }
  }

  @Test
  void optionsRejectBadValuesWithTheOptionName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--replicas", "0"}));
    assertTrue(e.getMessage().contains("--replicas"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--sync", "redis"}));
    IllegalArgumentException once = assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--deliver-at-once", "always"}));
    assertTrue(once.getMessage().contains("--deliver-at-once") && once.getMessage().contains("always"),
        once.getMessage());
    assertTrue(e.getMessage().contains("redis"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--sync-interval-ms", "-1"}));
    assertEquals(0, ReplicaExperiment.Options.parse(new String[] {"--sync-interval-ms", "0"}).syncIntervalNanos,
        "0: every delta delivered at once (the counterfactual)");
    assertThrows(IllegalArgumentException.class,
        () -> ReplicaExperiment.Options.parse(new String[] {"--policies", "magic"}));
  }

  /**
   * The warm quantile leaves out the first {@code skip} routings and takes the nearest rank of the rest: with
   * skip 3 and first tokens of 10..100 ms for routings 1..10 (in order), p50 of the last seven (40..100) is 70.
   */
  @Test
  void warmTtftLeavesOutTheColdStartWave() {
    ReplicaExperiment.WarmTtft warm = new ReplicaExperiment.WarmTtft(3, 10);
    io.kvroute.Router router = io.kvroute.Router.newBuilder().build();
    router.addWorker(io.kvroute.Worker.of(io.kvroute.WorkerId.of("w")));
    java.util.List<io.kvroute.Routing> routings = new java.util.ArrayList<>();
    for (int i = 0; i < 10; i++) {
      io.kvroute.Routing r = router.select(new int[] {i + 1});
      routings.add(r);
      warm.onRouted(r);
    }
    for (int i = 9; i >= 0; i--) { // first tokens in any order
      warm.onFirstToken(routings.get(i), (i + 1) * 10_000_000L);
    }
    assertEquals(70.0, warm.millis(0.5), 1e-9);
    assertEquals(100.0, warm.millis(0.99), 1e-9);
    assertEquals(40.0, warm.millis(0), 1e-9);
  }
}
