package io.kvroute.examples;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.sim.MooncakeTrace;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.Simulation;
import io.kvroute.sim.SimulationResult;
import io.kvroute.sim.TimingModel;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.IntToLongFunction;
import java.util.function.LongFunction;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The routing scenario suite: the article's grid and the scenarios it did not measure (skew, bursts, a small or slow
 * worker, churn, a real trace, overload), each run for every policy with the same seed and the same arrivals;
 * immutable lists of scenarios, and {@link #run} is a pure function of them (the simulator runs in virtual time, so
 * results do not depend on the machine's load), thread-safe.
 */
public final class Suite {
  /** The policy every other is compared with. */
  public static final String BASELINE = "kvAware";

  private Suite() {}

  /**
   * One scenario: a simulation set up for a seed, to which each policy's router is added.
   *
   * @param name short name for the table
   * @param group the section of the table (grid, stress, trace)
   * @param setup the simulation for a seed, without a router
   * @param trace the trace replayed, for the pooled-LRU bound and the hit-rate rule, or null
   * @param pooledBlocks the cluster's total cache blocks (for the pooled bound)
   */
  public record Scenario(String name, String group, LongFunction<Simulation.Builder> setup,
      @Nullable MooncakeTrace trace, long pooledBlocks) {
    public Scenario {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(group, "group");
      Objects.requireNonNull(setup, "setup");
    }
  }

  /** What one policy measured in one scenario. */
  public record Outcome(double hitRate, double cachedRatio, double ttftP50, double ttftP99, double maxMeanLoad,
      long preemptions, double predictionError, double[] ttftQuantiles, int[] requestsPerWorker) {
    static Outcome of(SimulationResult r) {
      double[] q = new double[101];
      for (int i = 0; i <= 100; i++) {
        q[i] = r.ttftMillis(i / 100.0);
      }
      return new Outcome(r.requestHitRate(), r.cachedTokenRatio(), r.ttftMillis(0.5), r.ttftMillis(0.99),
          r.maxMeanLoad(), r.preemptions(), r.predictionErrorRatio(), q, r.requestsPerWorker());
    }
  }

  /** One scenario's outcomes by policy, and for traces the pooled-LRU cached-token ratio (else NaN). */
  public record Row(Scenario scenario, Map<String, Outcome> outcomes, double pooledBound) {
    /** Whether the request hit rate means anything here (not when every request shares its first block). */
    public boolean showsHitRate() {
      return scenario.trace() == null || !scenario.trace().everyRequestSharesTheFirstBlock();
    }
  }

  /** The article's grid, 6 workers: concurrency 4, 8, 16, 24, 32 by kinds 2, 7, 12, 24. */
  static void grid(List<Scenario> out, int workers, int[] concurrencies, int[] kinds, int requests) {
    for (int c : concurrencies) {
      for (int k : kinds) {
        out.add(new Scenario(workers + "w c" + c + " k" + k, "grid",
            seed -> articleBase(workers, c, k, requests, seed), null, 0));
      }
    }
  }

  static Simulation.Builder articleBase(int workers, int concurrency, int kinds, int requests, long seed) {
    return Simulation.newBuilder()
        .workers(workers)
        .concurrency(concurrency)
        .requests(requests)
        .workload(SharedPrefixWorkload.newBuilder().prefixKinds(kinds).seed(seed).build());
  }

  /** The full suite; {@code trace} may be null to leave the trace scenarios out. */
  public static List<Scenario> full(@Nullable MooncakeTrace trace) {
    List<Scenario> s = new ArrayList<>();
    int requests = 1000;
    grid(s, 6, new int[] {4, 8, 16, 24, 32}, new int[] {2, 7, 12, 24}, requests);
    grid(s, 3, new int[] {8, 16, 24, 32}, new int[] {2, 7, 12, 24}, requests);
    s.add(new Scenario("3w c32 k4", "grid", seed -> articleBase(3, 32, 4, requests, seed), null, 0));
    stress(s, requests);
    if (trace != null) {
      traces(s, trace, 6);
    }
    return s;
  }

  /**
   * The held-out family: workloads, fleets and arrivals the full suite never varies (see {@link HeldOut}), for
   * checking that what the suite measures generalises; {@code trace} may be null to leave its trace scenarios out.
   */
  public static List<Scenario> heldOut(@Nullable MooncakeTrace trace) {
    return HeldOut.scenarios(trace);
  }

  /**
   * A reduced suite for CI (seconds on two cores): the article's point and its tightest cache, over capacity, a
   * moderate load with 12 kinds, every prefix fitting everywhere on 3 workers over capacity, 7 kinds on 3 workers far
   * over capacity (memory-bound), a first burst of 24 clients on cold caches (7 kinds), skew, a small and a slow
   * worker, churn, 48 clients on 6 workers; 500 requests each. It leaves out the scenarios where
   * {@code predictedTtft} still misses a target (see docs/ROUTING.md), so that CI guards what is achieved against
   * regressions.
   */
  public static List<Scenario> reduced() {
    List<Scenario> s = new ArrayList<>();
    int requests = 500;
    s.add(new Scenario("6w c8 k7", "grid", seed -> articleBase(6, 8, 7, requests, seed), null, 0));
    s.add(new Scenario("6w c8 k24", "grid", seed -> articleBase(6, 8, 24, requests, seed), null, 0));
    s.add(new Scenario("6w c32 k24", "grid", seed -> articleBase(6, 32, 24, requests, seed), null, 0));
    s.add(new Scenario("6w c16 k12", "grid", seed -> articleBase(6, 16, 12, requests, seed), null, 0));
    s.add(new Scenario("3w c32 k2", "grid", seed -> articleBase(3, 32, 2, requests, seed), null, 0));
    s.add(new Scenario("3w c32 k7", "grid", seed -> articleBase(3, 32, 7, requests, seed), null, 0));
    s.add(new Scenario("6w c24 k7", "grid", seed -> articleBase(6, 24, 7, requests, seed), null, 0));
    List<Scenario> stress = new ArrayList<>();
    stress(stress, requests);
    for (Scenario x : stress) {
      if (x.name().startsWith("zipf") || x.name().startsWith("half") || x.name().startsWith("worker out")
          || x.name().startsWith("overloaded")) {
        s.add(x);
      }
    }
    return s;
  }

  /**
   * Per-worker blocks asked for the tight trace cache: 8,192 x 16 = 131k tokens. {@link #traceScenario} raises it to
   * the longest request (191,378 tokens in the Mooncake synthetic trace: 11,962 blocks), so that every request fits.
   */
  static final int TIGHT_TRACE_BLOCKS = 8_192;
  /** Per-worker blocks of the roomy trace cache: 65,536 x 16 = 1M tokens (Dynamo's mocker's default size). */
  static final int ROOMY_TRACE_BLOCKS = 65_536;

  private static void stress(List<Scenario> s, int requests) {
    double zipf = zipfExponentForTopShare(24, 0.5);
    s.add(new Scenario("zipf top 50% c16 k24", "stress", seed -> Simulation.newBuilder().workers(6).concurrency(16)
        .requests(requests)
        .workload(SharedPrefixWorkload.newBuilder().prefixKinds(24).zipfExponent(zipf).seed(seed).build()),
        null, 0));
    s.add(new Scenario("bursts 16/s k24", "stress", seed -> Simulation.newBuilder().workers(6).requests(requests)
        .openLoop(i -> (i / 16) * 1_000_000_000L)
        .workload(SharedPrefixWorkload.newBuilder().prefixKinds(24).seed(seed).build()), null, 0));
    SimEngineConfig halfCache = SimEngineConfig.newBuilder().numBlocks(SimEngineConfig.DEFAULT_NUM_BLOCKS / 2)
        .build();
    s.add(new Scenario("half-cache worker c16 k24", "stress", seed -> articleBase(6, 16, 24, requests, seed)
        .workerEngine(0, halfCache), null, 0));
    SimEngineConfig halfSpeed = SimEngineConfig.newBuilder().timing(TimingModel.DEFAULT.slowerBy(2)).build();
    s.add(new Scenario("half-speed worker c16 k12", "stress", seed -> articleBase(6, 16, 12, requests, seed)
        .workerEngine(0, halfSpeed), null, 0));
    s.add(new Scenario("worker out 4-10 s c8 k12", "stress", seed -> articleBase(6, 8, 12, requests, seed)
        .outage(0, Duration.ofSeconds(4), Duration.ofSeconds(10)), null, 0));
    s.add(new Scenario("overloaded c48 k24", "stress", seed -> articleBase(6, 48, 24, requests, seed), null, 0));
  }

  private static void traces(List<Scenario> s, MooncakeTrace trace, int workers) {
    s.add(traceScenario("trace 1M tok/worker", trace, workers, ROOMY_TRACE_BLOCKS));
    s.add(traceScenario("trace tight", trace, workers, TIGHT_TRACE_BLOCKS));
  }

  static Scenario traceScenario(String name, MooncakeTrace trace, int workers, int blocks) {
    return traceScenario(name, trace, workers, blocks, 1.0);
  }

  /** A trace scenario whose arrival times are multiplied by {@code timeScale} (below 1: more load). */
  static Scenario traceScenario(String name, MooncakeTrace trace, int workers, int blocks, double timeScale) {
    int needed = (trace.maxSequenceTokens() + 15) / 16;
    int perWorker = Math.max(blocks, needed);
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(perWorker).build();
    IntToLongFunction arrivals = timeScale == 1.0 ? trace::arrivalNanos
        : i -> Math.round(trace.arrivalNanos(i) * timeScale);
    return new Scenario(name, "trace", seed -> Simulation.newBuilder()
        .engine(engine)
        .workers(workers)
        .requests(trace.size())
        .workload(trace)
        .openLoop(arrivals), trace, (long) perWorker * workers);
  }

  /** The Zipf exponent over {@code kinds} kinds whose most popular kind has probability {@code top} (bisection). */
  static double zipfExponentForTopShare(int kinds, double top) {
    double lo = 0;
    double hi = 10;
    for (int i = 0; i < 100; i++) {
      double mid = (lo + hi) / 2;
      double total = 0;
      for (int k = 1; k <= kinds; k++) {
        total += Math.pow(k, -mid);
      }
      if (1 / total < top) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return (lo + hi) / 2;
  }

  /** Runs every scenario for every policy with seed {@code seed}, printing one progress line per scenario. */
  public static List<Row> run(List<Scenario> scenarios, Map<String, Supplier<RouterPolicy>> policies, long seed,
      @Nullable PrintStream progress) {
    List<Row> rows = new ArrayList<>();
    int done = 0;
    for (Scenario scenario : scenarios) {
      long t0 = System.nanoTime();
      Map<String, Outcome> outcomes = new LinkedHashMap<>();
      for (Map.Entry<String, Supplier<RouterPolicy>> p : policies.entrySet()) {
        Supplier<RouterPolicy> policy = p.getValue();
        SimulationResult r = scenario.setup().apply(seed)
            .router(ticker -> Router.newBuilder().policy(policy.get()).ticker(ticker).randomSeed(seed).build())
            .build()
            .run();
        outcomes.put(p.getKey(), Outcome.of(r));
      }
      double bound = scenario.trace() == null ? Double.NaN
          : PooledLru.cachedTokenRatio(scenario.trace(), scenario.pooledBlocks(), 16);
      rows.add(new Row(scenario, outcomes, bound));
      done++;
      if (progress != null) {
        progress.printf(Locale.ROOT, "[%2d/%d] %-28s (%d ms)%n", done, scenarios.size(), scenario.name(),
            (System.nanoTime() - t0) / 1_000_000);
      }
    }
    return rows;
  }

  /** The targets for {@code candidate} against {@link #BASELINE} in one row; empty when all are met. */
  public static List<String> misses(Row row, String candidate, double p99Slack) {
    List<String> misses = new ArrayList<>();
    Outcome c = row.outcomes().get(candidate);
    Outcome b = row.outcomes().get(BASELINE);
    if (c == null || b == null) {
      return misses;
    }
    String n = row.scenario().name();
    if (row.showsHitRate() && c.hitRate() < b.hitRate() - 1e-9) {
      misses.add(String.format(Locale.ROOT, "%s: hit rate %.1f%% < %s %.1f%%", n, 100 * c.hitRate(), BASELINE,
          100 * b.hitRate()));
    }
    if (c.ttftP50() > b.ttftP50() + 1e-9) {
      misses.add(String.format(Locale.ROOT, "%s: TTFT p50 %.0f > %.0f ms", n, c.ttftP50(), b.ttftP50()));
    }
    if (c.ttftP99() > p99Slack * b.ttftP99() + 1e-9) {
      misses.add(String.format(Locale.ROOT, "%s: TTFT p99 %.0f > %.1fx %.0f ms", n, c.ttftP99(), p99Slack,
          b.ttftP99()));
    }
    if (c.maxMeanLoad() > 1.3 + 1e-9) {
      misses.add(String.format(Locale.ROOT, "%s: max/mean load %.2f > 1.3", n, c.maxMeanLoad()));
    }
    if (!Double.isNaN(row.pooledBound())) {
      Outcome rr = row.outcomes().get("roundRobin");
      if (rr != null) {
        double share = (c.cachedRatio() - rr.cachedRatio()) / (row.pooledBound() - rr.cachedRatio());
        if (share < 0.9) {
          misses.add(String.format(Locale.ROOT, "%s: %.0f%% of the way from round-robin to the pooled bound",
              n, 100 * share));
        }
      }
    }
    return misses;
  }

  /** Prints the table as Markdown: one row per scenario and policy, and the candidate's ratios to the baseline. */
  public static void printMarkdown(List<Row> rows, String candidate, PrintStream out) {
    out.println("| scenario | policy | hit rate | cached ratio | TTFT p50 / p99 ms | max/mean load | preempt |"
        + " pred. error | vs kvAware: hit, p50, p99 |");
    out.println("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for (Row row : rows) {
      Outcome base = row.outcomes().get(BASELINE);
      boolean first = true;
      for (Map.Entry<String, Outcome> e : row.outcomes().entrySet()) {
        Outcome o = e.getValue();
        String vs = "";
        if (e.getKey().equals(candidate) && base != null) {
          vs = String.format(Locale.ROOT, "%+.1f pt, %.2fx, %.2fx", 100 * (o.hitRate() - base.hitRate()),
              ratio(o.ttftP50(), base.ttftP50()), ratio(o.ttftP99(), base.ttftP99()));
          if (!misses(row, candidate, 1.1).isEmpty()) {
            vs += " **miss**";
          }
        }
        String name = first ? row.scenario().name() + (Double.isNaN(row.pooledBound()) ? ""
            : String.format(Locale.ROOT, " (pooled LRU %.3f)", row.pooledBound())) : "";
        String policy = e.getKey().equals(candidate) ? "**" + e.getKey() + "**" : e.getKey();
        out.printf(Locale.ROOT, "| %s | %s | %s | %.3f | %.0f / %.0f | %.2f | %d | %.3f | %s |%n", name, policy,
            row.showsHitRate() ? String.format(Locale.ROOT, "%.1f%%", 100 * o.hitRate()) : "-", o.cachedRatio(),
            o.ttftP50(), o.ttftP99(), o.maxMeanLoad(), o.preemptions(), o.predictionError(), vs);
        first = false;
      }
    }
  }

  /**
   * Writes the suite's charts into {@code dir}: hit rate and cached-token ratio across prefix kinds at the article's
   * configuration (6 workers, concurrency 8) with the article's bars beside, TTFT distributions and per-worker load
   * for a few scenarios.
   *
   * @return the files written
   */
  public static List<java.nio.file.Path> writeCharts(List<Row> rows, java.nio.file.Path dir)
      throws java.io.IOException {
    java.nio.file.Files.createDirectories(dir);
    List<java.nio.file.Path> written = new ArrayList<>();
    List<Row> article = new ArrayList<>();
    for (int k : new int[] {2, 7, 12, 24}) {
      for (Row r : rows) {
        if (r.scenario().name().equals("6w c8 k" + k)) {
          article.add(r);
        }
      }
    }
    if (!article.isEmpty()) {
      List<String> policies = new ArrayList<>(article.get(0).outcomes().keySet());
      List<String> groups = new ArrayList<>();
      List<String> series = new ArrayList<>(List.of("article round-robin", "article Dynamo KV"));
      series.addAll(policies);
      double[][] hit = new double[series.size()][article.size()];
      double[][] cached = new double[series.size()][article.size()];
      for (int g = 0; g < article.size(); g++) {
        int kinds = Integer.parseInt(article.get(g).scenario().name().substring("6w c8 k".length()));
        groups.add(kinds + " kinds");
        double[] ah = ArticleExperiment.ARTICLE_HIT_RATE.get(kinds);
        double[] ac = ArticleExperiment.ARTICLE_CACHED_RATIO.get(kinds);
        hit[0][g] = ah[1];
        hit[1][g] = ah[2];
        cached[0][g] = ac[0];
        cached[1][g] = ac[1];
        for (int p = 0; p < policies.size(); p++) {
          Outcome o = article.get(g).outcomes().get(policies.get(p));
          hit[2 + p][g] = o.hitRate();
          cached[2 + p][g] = o.cachedRatio();
        }
      }
      written.add(write(dir.resolve("hit-rate-6w-c8.svg"), SvgCharts.groupedBars(
          "Request hit rate, 6 workers, concurrency 8", "requests with a cached block", groups, series, hit, 1,
          true)));
      written.add(write(dir.resolve("cached-ratio-6w-c8.svg"), SvgCharts.groupedBars(
          "Cached-token ratio, 6 workers, concurrency 8 (max 0.857)", "cached prompt tokens / prompt tokens",
          groups, series, cached, 1, false)));
    }
    for (Row r : rows) {
      String name = r.scenario().name();
      boolean ttft = CHART_TTFT.stream().anyMatch(name::startsWith);
      boolean load = CHART_LOAD.stream().anyMatch(name::startsWith);
      if (!ttft && !load) {
        continue;
      }
      List<String> policies = new ArrayList<>(r.outcomes().keySet());
      String file = name.replaceAll("[^A-Za-z0-9]+", "-").replaceAll("-+$", "");
      if (ttft) {
        double[][] q = new double[policies.size()][];
        for (int p = 0; p < policies.size(); p++) {
          q[p] = r.outcomes().get(policies.get(p)).ttftQuantiles();
        }
        written.add(write(dir.resolve("ttft-" + file + ".svg"), SvgCharts.cdf("TTFT distribution: " + name,
            "time to first token, ms (log scale)", policies, q)));
      }
      if (load) {
        int workers = r.outcomes().get(policies.get(0)).requestsPerWorker().length;
        List<String> groups = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
          groups.add("sim-" + w);
        }
        double[][] v = new double[policies.size()][workers];
        double max = 0;
        for (int p = 0; p < policies.size(); p++) {
          int[] per = r.outcomes().get(policies.get(p)).requestsPerWorker();
          for (int w = 0; w < workers; w++) {
            v[p][w] = per[w];
            max = Math.max(max, per[w]);
          }
        }
        written.add(write(dir.resolve("load-" + file + ".svg"), SvgCharts.groupedBars("Requests per worker: " + name,
            "requests served", groups, policies, v, Math.ceil(max / 50) * 50, false)));
      }
    }
    return written;
  }

  private static final List<String> CHART_TTFT = List.of("6w c8 k24", "6w c32 k24", "zipf", "half-speed",
      "bursts", "trace tight", "3w c24 k7");
  private static final List<String> CHART_LOAD = List.of("6w c8 k7", "zipf", "half-speed", "half-cache",
      "worker out");

  private static java.nio.file.Path write(java.nio.file.Path file, String svg) throws java.io.IOException {
    java.nio.file.Files.writeString(file, svg, java.nio.charset.StandardCharsets.UTF_8);
    return file;
  }

  private static double ratio(double a, double b) {
    return b == 0 ? (a == 0 ? 1 : Double.POSITIVE_INFINITY) : a / b;
  }
}
