package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SimulationTest {

  private static SimulationResult run(int kinds, long seed, Supplier<RouterPolicy> policy) {
    return Simulation.newBuilder()
        .workload(SharedPrefixWorkload.article(kinds, seed))
        .router(ticker -> Router.newBuilder().policy(policy.get()).ticker(ticker).randomSeed(seed).build())
        .build()
        .run();
  }

  /** The median over three seeds, as the article reports the median of three runs. */
  private static double[] median3(int kinds, Supplier<RouterPolicy> policy) {
    double[] hit = new double[3];
    double[] ratio = new double[3];
    for (int s = 0; s < 3; s++) {
      SimulationResult r = run(kinds, 1 + s, policy);
      assertEquals(240, r.requests());
      hit[s] = r.requestHitRate();
      ratio[s] = r.cachedTokenRatio();
    }
    Arrays.sort(hit);
    Arrays.sort(ratio);
    return new double[] {hit[1], ratio[1]};
  }

  /**
   * Calibration: with the article's workload and round-robin routing, the simulator's request hit rate and
   * cached-token ratio stay within 6 points of the article's measured round-robin numbers.
   */
  @ParameterizedTest(name = "{0} prefix kinds: article hit {1}, cached ratio {2}")
  @CsvSource({"7, 0.535, 0.439", "12, 0.292, 0.247", "24, 0.175, 0.149"})
  void roundRobinMatchesTheArticle(int kinds, double articleHitRate, double articleCachedRatio) {
    double[] measured = median3(kinds, RouterPolicy::roundRobin);
    assertEquals(articleHitRate, measured[0], 0.06, "request hit rate");
    assertEquals(articleCachedRatio, measured[1], 0.06, "cached-token ratio");
  }

  @Test
  void replicasTakeRequestsRoundRobinAndEachSeesEveryEvent() {
    java.util.List<Router> routers = new java.util.ArrayList<>();
    java.util.List<java.util.concurrent.atomic.AtomicInteger> routed = new java.util.ArrayList<>();
    int[] ticks = new int[1];
    SimulationResult result = Simulation.newBuilder()
        .workload(SharedPrefixWorkload.article(7, 3))
        .requests(90)
        .replicas(3)
        .periodic(Duration.ofMillis(10), () -> ticks[0]++)
        .router(ticker -> {
          java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();
          routed.add(count);
          Router r = Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(ticker).randomSeed(routers.size())
              .listener(new io.kvroute.RouterListener() {
                @Override
                public void onRouted(io.kvroute.Routing routing) {
                  count.incrementAndGet();
                }
              }).build();
          routers.add(r);
          return r;
        })
        .build()
        .run();
    assertEquals(90, result.requests());
    assertEquals(3, routers.size());
    for (java.util.concurrent.atomic.AtomicInteger c : routed) {
      assertEquals(30, c.get(), "request i goes to router i mod 3");
    }
    long entries = routers.get(0).indexer().stats().entries();
    assertTrue(entries > 0);
    for (Router r : routers) {
      assertEquals(entries, r.indexer().stats().entries(), "every router applied every KV event");
      assertEquals(6, r.workers().size());
    }
    // The task runs every 10 ms of virtual time while requests remain: about duration / 10 ms times.
    long expected = result.duration().toMillis() / 10;
    assertTrue(ticks[0] >= expected - 1 && ticks[0] <= expected + 1, ticks[0] + " ticks for " + result.duration());
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().replicas(0));
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().periodic(Duration.ZERO, () -> { }));
  }

  /**
   * A timer set from inside an occurrence (each routing asks for a run 0.5 ms later) runs at exactly that virtual
   * time, once per request, in time order, before any later occurrence: the ticker reads the due time inside the
   * task, and a request sent after the due time is routed only after the task ran.
   */
  @Test
  void aTimerRunsAtTheTimeItIsDueBetweenOccurrences() {
    long delay = 500_000;
    java.util.ArrayDeque<Long> due = new java.util.ArrayDeque<>();
    java.util.List<Long> ran = new java.util.ArrayList<>();
    java.util.List<Long> routedAt = new java.util.ArrayList<>();
    io.kvroute.Ticker[] clock = new io.kvroute.Ticker[1];
    long[] lastEvent = new long[1];
    SimulationResult result = Simulation.newBuilder()
        .workload(SharedPrefixWorkload.article(7, 3))
        .requests(60)
        .clientJitter(Duration.ofMillis(1), 5)
        .timer(() -> due.isEmpty() ? Long.MAX_VALUE : due.peekFirst(), () -> {
          long t = clock[0].read();
          assertTrue(t >= lastEvent[0], "the clock never goes back");
          assertEquals(due.pollFirst(), t, "the task runs at its due time");
          ran.add(t);
          lastEvent[0] = t;
        })
        .router(ticker -> {
          clock[0] = ticker;
          return Router.newBuilder().policy(RouterPolicy.kvAware()).ticker(ticker).randomSeed(1)
              .listener(new io.kvroute.RouterListener() {
                @Override
                public void onRouted(io.kvroute.Routing routing) {
                  long t = ticker.read();
                  assertTrue(t >= lastEvent[0], "an occurrence after a task that ran later than it was due");
                  lastEvent[0] = t;
                  routedAt.add(t);
                  due.addLast(t + delay);
                }
              }).build();
        })
        .build()
        .run();
    assertEquals(60, result.requests());
    assertEquals(60, routedAt.size());
    // Every request takes far longer than 0.5 ms, so each routing's task comes before the last occurrence.
    assertEquals(60, ran.size(), "one run per routing");
    for (int i = 0; i < 60; i++) {
      assertEquals(routedAt.get(i) + delay, ran.get(i), "run " + i);
    }
    assertThrows(NullPointerException.class, () -> Simulation.newBuilder().timer(null, () -> { }));
  }

  @Test
  void runsAreDeterministic() {
    SimulationResult a = run(7, 5, RouterPolicy::kvAware);
    SimulationResult b = run(7, 5, RouterPolicy::kvAware);
    assertEquals(a.toString(), b.toString());
    assertEquals(a.cachedTokens(), b.cachedTokens());
    assertEquals(a.duration(), b.duration());
    assertTrue(a.ttftMillis(0.5) > 0);
    assertTrue(a.throughputPerSecond() > 0);
  }

  @Test
  void kvEventsReachTheRouterSoKvAwareRoutingBeatsRoundRobin() {
    SimulationResult rr = run(12, 3, RouterPolicy::roundRobin);
    SimulationResult kv = run(12, 3, RouterPolicy::kvAware);
    assertTrue(kv.requestHitRate() > rr.requestHitRate() + 0.15, rr + " vs " + kv);
    assertTrue(kv.predictedCachedTokenRatio() > 0.3, "the router's matches come from the engines' events: " + kv);
    assertEquals(rr.cachedTokenRatio(), rr.predictedCachedTokenRatio(), 0.03,
        "the router's index, fed by the engines' events, predicts what the engines then hit");
    assertTrue(rr.workersPerPrefixGroup() > kv.workersPerPrefixGroup());
  }

  @Test
  void everyWorkerServesRequestsUnderRoundRobin() {
    SimulationResult r = run(2, 1, RouterPolicy::roundRobin);
    int[] perWorker = r.requestsPerWorker();
    assertEquals(6, perWorker.length);
    for (int n : perWorker) {
      assertEquals(40, n);
    }
    assertEquals(0.95, r.requestHitRate(), 1e-9, "only the 12 cold misses (2 kinds x 6 workers) miss");
  }

  @Test
  void loadReportsReachThePolicyOnlyWhenEnabled() {
    for (boolean enabled : new boolean[] {false, true}) {
      java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
      RouterPolicy probe = c -> {
        for (int i = 0; i < c.size(); i++) {
          io.kvroute.EngineLoad load = c.engineLoad(i);
          if (load != null) {
            assertTrue(load.kvCacheUsage() >= 0 && load.kvCacheUsage() <= 1);
            seen.incrementAndGet();
          }
        }
        return 0;
      };
      Simulation.newBuilder()
          .workload(SharedPrefixWorkload.article(2, 1))
          .requests(40)
          .loadReportInterval(enabled ? Duration.ofMillis(50) : Duration.ZERO)
          .router(ticker -> Router.newBuilder().policy(probe).ticker(ticker).build())
          .build()
          .run();
      assertEquals(enabled, seen.get() > 0, "engine loads seen with reports " + (enabled ? "on" : "off"));
    }
  }

  @Test
  void builderValidatesArguments() {
    assertThrows(IllegalStateException.class, () -> Simulation.newBuilder().build());
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().workers(0));
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().concurrency(-1));
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().eventDelay(Duration.ofMillis(-1)));
    Simulation tooLong = Simulation.newBuilder()
        .engine(SimEngineConfig.newBuilder().numBlocks(100).build())
        .workload(SharedPrefixWorkload.article(2, 1))
        .router(ticker -> Router.newBuilder().policy(RouterPolicy.roundRobin()).ticker(ticker).build())
        .build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, tooLong::run);
    assertTrue(e.getMessage().contains("maximum context length"), e.getMessage());
  }

  /**
   * A slowdown retimes the steps scheduled after it: two cold 339-token prompts (no shared prefix) sent to one idle
   * worker 10 s apart, with the worker made 2x slower at 5 s, are each prefilled in one step of {@code 4.5 + 0.025 x
   * 339 + 1e-6 x 339^2} ms (13.09 ms) before the slowdown and twice that after it, since every coefficient doubles.
   */
  @Test
  void aSlowdownDoublesTheStepsScheduledAfterIt() {
    Simulation.Builder b = Simulation.newBuilder()
        .workers(1)
        .requests(2)
        .openLoop(i -> i * 10_000_000_000L)
        .workload(SharedPrefixWorkload.newBuilder().prefixTokens(0).outputTokens(4).seed(1).build())
        .router(t -> Router.newBuilder().policy(RouterPolicy.roundRobin()).ticker(t).build());
    double step = 4.5 + 0.025 * 339 + 1e-6 * 339 * 339;
    SimulationResult steady = b.build().run();
    assertEquals(step, steady.ttftMillis(0), 1e-6);
    assertEquals(step, steady.ttftMillis(1), 1e-6);
    SimulationResult slowed = b.slowdown(0, Duration.ofSeconds(5), 2).build().run();
    assertEquals(step, slowed.ttftMillis(0), 1e-6, "the first request, before the slowdown");
    assertEquals(2 * step, slowed.ttftMillis(1), 1e-6, "the second, after it");
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().slowdown(0, Duration.ZERO, 0));
    assertThrows(IllegalArgumentException.class,
        () -> Simulation.newBuilder().slowdown(0, Duration.ofSeconds(-1), 2));
    assertThrows(IllegalStateException.class, () -> Simulation.newBuilder().workers(2).slowdown(2, Duration.ZERO, 2)
        .workload(SharedPrefixWorkload.article(2, 1))
        .router(t -> Router.newBuilder().policy(RouterPolicy.roundRobin()).ticker(t).build()).build());
  }

  /**
   * The router's predicted cached tokens against what the engine reports (usage.prompt_tokens_details.cached_tokens):
   * a prompt of 23 full blocks sent again is fully indexed, but vLLM recomputes the block of its last token, so both
   * say 352 of 368 tokens and the error is zero (it was 16 tokens per request when the prediction counted all 23).
   */
  @Test
  void predictedCachedTokensMatchTheEnginesForAFullyCachedPrompt() {
    int[] prompt = new int[368];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = SimTokenizer.FIRST_WORD_ID + i;
    }
    SimulationResult r = Simulation.newBuilder()
        .workers(1)
        .concurrency(1)
        .requests(20)
        .eventDelay(java.time.Duration.ZERO)
        .workload(i -> new SimRequest(prompt, 4, 0))
        .router(t -> io.kvroute.Router.newBuilder().policy(io.kvroute.RouterPolicy.kvAware()).ticker(t).build())
        .build()
        .run();
    assertEquals(19 * 352, r.cachedTokens(), "every request after the first hits 22 of its 23 blocks");
    assertEquals(0, r.overPredictedTokens());
    assertEquals(0.0, r.predictionErrorRatio());
  }

  /**
   * With client jitter {@code J}, each closed-loop client waits uniformly in {@code [0, J)} before each request: the
   * first wave is spread over {@code [0, J)} instead of all at time zero, every later send follows a completion by
   * less than {@code J}, and the same seed gives the same run.
   */
  @Test
  void clientJitterSpreadsTheClientsSendsWithinTheJitter() {
    long jitter = 5_000_000L;
    java.util.List<Long> sends = new java.util.ArrayList<>();
    java.util.function.Function<io.kvroute.Ticker, Router> router = ticker -> Router.newBuilder()
        .policy(RouterPolicy.roundRobin()).ticker(ticker).listener(new io.kvroute.RouterListener() {
          @Override
          public void onRouted(io.kvroute.Routing routing) {
            sends.add(ticker.read());
          }
        }).build();
    SimulationResult jittered = Simulation.newBuilder().workload(SharedPrefixWorkload.article(7, 3)).concurrency(8)
        .requests(40).clientJitter(Duration.ofNanos(jitter), 11).router(router).build().run();
    java.util.List<Long> first = java.util.List.copyOf(sends.subList(0, 8));
    assertTrue(first.stream().allMatch(t -> t >= 0 && t < jitter), "the first wave within the jitter: " + first);
    assertTrue(first.stream().distinct().count() > 1, "not all at one instant: " + first);
    sends.clear();
    SimulationResult again = Simulation.newBuilder().workload(SharedPrefixWorkload.article(7, 3)).concurrency(8)
        .requests(40).clientJitter(Duration.ofNanos(jitter), 11).router(router).build().run();
    assertEquals(first, sends.subList(0, 8), "the same seed, the same sends");
    assertEquals(jittered.ttftMillis(0.99), again.ttftMillis(0.99));
    sends.clear();
    Simulation.newBuilder().workload(SharedPrefixWorkload.article(7, 3)).concurrency(8).requests(40)
        .clientJitter(Duration.ZERO, 11).router(router).build().run();
    assertTrue(sends.subList(0, 8).stream().allMatch(t -> t == 0), "no jitter: every client starts at zero");
    assertThrows(IllegalArgumentException.class,
        () -> Simulation.newBuilder().clientJitter(Duration.ofNanos(-1), 0));
  }

  /**
   * With a client start spread {@code S} the first wave is spread over {@code [0, S)} (wider than the 1 ms jitter,
   * so some first send falls beyond it), while every later send still follows a completion by less than the jitter:
   * the start spread changes only the first wait.
   */
  @Test
  void clientStartSpreadsOnlyTheFirstWave() {
    long jitter = 1_000_000L;
    long spread = 200_000_000L;
    java.util.List<Long> sends = new java.util.ArrayList<>();
    java.util.List<Long> completions = new java.util.ArrayList<>();
    java.util.function.Function<io.kvroute.Ticker, Router> router = ticker -> Router.newBuilder()
        .policy(RouterPolicy.roundRobin()).ticker(ticker).listener(new io.kvroute.RouterListener() {
          @Override
          public void onRouted(io.kvroute.Routing routing) {
            sends.add(ticker.read());
          }

          @Override
          public void onClosed(io.kvroute.Routing routing, long elapsedNanos) {
            completions.add(ticker.read());
          }
        }).build();
    Simulation.newBuilder().workload(SharedPrefixWorkload.article(7, 3)).concurrency(8).requests(40)
        .clientJitter(Duration.ofNanos(jitter), 11).clientStart(Duration.ofNanos(spread)).router(router).build()
        .run();
    java.util.List<Long> first = java.util.List.copyOf(sends.subList(0, 8));
    assertTrue(first.stream().allMatch(t -> t >= 0 && t < spread), "the first wave within the spread: " + first);
    assertTrue(first.stream().anyMatch(t -> t >= jitter), "and not all within the jitter: " + first);
    // Each later send follows some completion by less than the jitter (closed loop: a client sends after its own).
    for (long t : sends.subList(8, sends.size())) {
      assertTrue(completions.stream().anyMatch(c -> c <= t && t - c < jitter), "send at " + t);
    }
    assertThrows(IllegalArgumentException.class, () -> Simulation.newBuilder().clientStart(Duration.ofNanos(-1)));
  }
}
