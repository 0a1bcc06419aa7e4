package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimRequest;
import io.kvroute.sim.Simulation;
import io.kvroute.sim.SimulationResult;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HeldOutTest {

  /**
   * The capacity formula by hand for the article's workload with one kind on one worker: the prefix is 127 blocks,
   * a request's own blocks are ceil(2,499 / 16) - 127 = 30, so (585 - 127) / 30 = 15 requests run at once; a decode
   * step of 15 sequences takes 4.5 + 0.3 x 15 + 0.0003 x 15 x (2,371 + 64) = 19.96 ms, and a request's time is its
   * tail's prefill (0.025 x 339 + 1e-6 x 339^2 = 8.59 ms) plus 128 x 19.96 / 15 ms: 178.9 ms, 5.59 requests/s.
   */
  @Test
  void capacityFollowsTheTimingModelAndTheMemoryBound() {
    SharedPrefixWorkload one = SharedPrefixWorkload.newBuilder().prefixKinds(1).build();
    double step = 4.5 + 0.3 * 15 + 0.0003 * 15 * (2371 + 64);
    double perRequest = 0.025 * 339 + 1e-6 * 339 * 339 + 128 * step / 15;
    assertEquals(1000 / perRequest, HeldOut.capacityPerSecond(1, one, SimEngineConfig.DEFAULT), 1e-9);
    assertEquals(6000 / perRequest, HeldOut.capacityPerSecond(6, SharedPrefixWorkload.newBuilder().prefixKinds(6)
        .build(), SimEngineConfig.DEFAULT), 1e-9, "one kind kept per worker, six times the rate");
    // Twelve kinds on six workers: two prefixes kept per worker leave room for (585 - 254) / 30 = 11 requests.
    double step11 = 4.5 + 0.3 * 11 + 0.0003 * 11 * (2371 + 64);
    double perRequest11 = 0.025 * 339 + 1e-6 * 339 * 339 + 128 * step11 / 11;
    assertEquals(6000 / perRequest11, HeldOut.capacityPerSecond(6, SharedPrefixWorkload.newBuilder()
        .prefixKinds(12).build(), SimEngineConfig.DEFAULT), 1e-9);
  }

  /**
   * The simulator agrees with the formula: one worker, one kind, enough closed-loop clients to keep the memory
   * bound's 15 requests running (and more waiting) completes requests at the formula's rate, within the ramp-up of
   * a 600-request run and the step granularity (10 %).
   */
  @Test
  void aSaturatedWorkerCompletesRequestsAtTheFormulasRate() {
    SharedPrefixWorkload one = SharedPrefixWorkload.newBuilder().prefixKinds(1).seed(3).build();
    SimulationResult r = Simulation.newBuilder().workers(1).concurrency(24).requests(600).workload(one)
        .router(t -> Router.newBuilder().policy(RouterPolicy.roundRobin()).ticker(t).build())
        .build().run();
    double formula = HeldOut.capacityPerSecond(1, one, SimEngineConfig.DEFAULT);
    assertEquals(formula, r.throughputPerSecond(), 0.10 * formula);
  }

  /** Poisson arrivals: non-decreasing, mean gap 1 / rate and gaps' coefficient of variation 1 (exponential). */
  @Test
  void poissonArrivalsHaveExponentialGapsAtTheRate() {
    int n = 20_000;
    double rate = 25;
    long[] at = HeldOut.poissonArrivals(n, rate, 7);
    double sum = 0;
    double sumSq = 0;
    long previous = 0;
    for (long t : at) {
      assertTrue(t >= previous);
      double gap = (t - previous) / 1e9;
      sum += gap;
      sumSq += gap * gap;
      previous = t;
    }
    double mean = sum / n;
    double sd = Math.sqrt(sumSq / n - mean * mean);
    // The mean of 20,000 exponential gaps has a standard error of 0.7 % of the mean: 3 % is over four of them.
    assertEquals(1 / rate, mean, 0.03 / rate);
    assertEquals(1.0, sd / mean, 0.03);
    assertArrayEquals(at, HeldOut.poissonArrivals(n, rate, 7), "the same seed gives the same arrivals");
    assertFalse(Arrays.equals(at, HeldOut.poissonArrivals(n, rate, 8)));
  }

  /** Mixed outputs keep the prompts and draw lengths within the bounds, log-uniformly (median sqrt(16 x 1024)). */
  @Test
  void mixedOutputsAreLogUniformWithinTheBoundsAndKeepThePrompts() {
    SharedPrefixWorkload base = SharedPrefixWorkload.newBuilder().prefixKinds(12).seed(2).build();
    var mixed = HeldOut.mixedOutputs(base, 16, 1024, 2);
    int n = 4000;
    int[] out = new int[n];
    int below = 0;
    for (int i = 0; i < n; i++) {
      SimRequest r = mixed.request(i);
      assertArrayEquals(base.request(i).promptTokens(), r.promptTokens());
      out[i] = r.maxTokens();
      assertTrue(out[i] >= 16 && out[i] <= 1024, "output " + out[i]);
      below += out[i] < 64 ? 1 : 0;
    }
    Arrays.sort(out);
    assertEquals(128, out[n / 2], 8, "the median of a log-uniform law is the geometric mean of its bounds");
    // log(64 / 16) / log(1024 / 16) = 1/3 of the draws fall below 64; the binomial standard error is 0.75 points.
    assertEquals(1 / 3.0, below / (double) n, 0.03);
  }

  /**
   * Conversations: with 4 slots of 3-turn conversations, request i + 4 is the next turn of request i's conversation
   * (its prompt extends i's by an answer and a message), until the third turn; then the slot starts a new
   * conversation, whose prompt is not an extension. Lengths are system + (t + 1) x user + t x answer.
   */
  @Test
  void aConversationsNextTurnExtendsItsPreviousPrompt() {
    HeldOut.Conversations c = new HeldOut.Conversations(4, 3, 2, 32, 10, 20, 5);
    for (int i = 0; i < 4; i++) {
      assertEquals(0, c.turn(i));
      assertEquals(1, c.turn(i + 4));
      assertEquals(2, c.turn(i + 8));
      assertEquals(0, c.turn(i + 12));
      assertEquals(c.conversation(i), c.conversation(i + 8));
      assertNotEquals(c.conversation(i), c.conversation(i + 12));
      int[] t0 = c.request(i).promptTokens();
      int[] t1 = c.request(i + 4).promptTokens();
      int[] t2 = c.request(i + 8).promptTokens();
      assertEquals(32 + 10, t0.length);
      assertEquals(32 + 2 * 10 + 20, t1.length);
      assertEquals(32 + 3 * 10 + 2 * 20, t2.length);
      assertArrayEquals(t0, Arrays.copyOf(t1, t0.length), "turn 1 starts with turn 0's prompt");
      assertArrayEquals(t1, Arrays.copyOf(t2, t1.length), "turn 2 starts with turn 1's prompt");
      int[] next = c.request(i + 12).promptTokens();
      assertFalse(Arrays.equals(Arrays.copyOfRange(t0, 32, 42), Arrays.copyOfRange(next, 32, 42)),
          "a new conversation has its own first message");
      assertEquals(20, c.request(i).maxTokens());
    }
    // Conversations of the same system kind share its 32 tokens, and their messages differ.
    Set<Integer> kinds = new HashSet<>();
    for (int i = 0; i < 8; i++) {
      kinds.add(c.request(i * 12).prefixGroup());
    }
    assertEquals(Set.of(0, 1), kinds);
    for (int i = 0; i < 4; i++) {
      for (int j = i + 1; j < 4; j++) {
        SimRequest a = c.request(i);
        SimRequest b = c.request(j);
        assertEquals(a.prefixGroup() == b.prefixGroup(),
            Arrays.equals(Arrays.copyOf(a.promptTokens(), 32), Arrays.copyOf(b.promptTokens(), 32)));
        assertFalse(Arrays.equals(Arrays.copyOfRange(a.promptTokens(), 32, 42),
            Arrays.copyOfRange(b.promptTokens(), 32, 42)));
      }
    }
    assertThrows(IllegalArgumentException.class, () -> new HeldOut.Conversations(0, 3, 2, 32, 10, 20, 5));
  }

  /**
   * The family is held out: none of its names is one of the suite's (so a suite filter never selects it), names are
   * unique, and the trace scenarios appear only with a trace.
   */
  @Test
  void theHeldOutFamilyIsDisjointFromTheSuite() {
    List<Suite.Scenario> held = Suite.heldOut(null);
    Set<String> names = new HashSet<>();
    for (Suite.Scenario s : held) {
      assertTrue(names.add(s.name()), "duplicate " + s.name());
      assertFalse(s.name().startsWith("trace"), s.name());
    }
    for (Suite.Scenario s : Suite.full(null)) {
      assertFalse(names.contains(s.name()), s.name());
    }
    assertTrue(held.size() >= 20, "size " + held.size());
    ArticleExperiment.Options o = ArticleExperiment.Options.parse(new String[] {"--suite-heldout"});
    assertTrue(o.suite && o.heldOutSuite && !o.reducedSuite);
  }

  /**
   * A mid-run slowdown is felt: the same closed loop on one worker, made 3x slower at 4 s, completes fewer requests
   * per second than without it (each step after 4 s takes three times as long).
   */
  @Test
  void theSlowWorkerScenarioSlowsItsWorker() {
    Simulation.Builder b = Suite.articleBase(1, 4, 2, 200, 1)
        .router(t -> Router.newBuilder().policy(RouterPolicy.roundRobin()).ticker(t).build());
    double steady = b.build().run().throughputPerSecond();
    double slowed = b.slowdown(0, java.time.Duration.ofSeconds(4), 3).build().run().throughputPerSecond();
    assertTrue(slowed < 0.8 * steady, slowed + " against " + steady);
  }
}
