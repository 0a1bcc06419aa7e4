package io.kvroute.examples;

import io.kvroute.KvAwareConfig;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.sim.MooncakeTrace;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.Simulation;
import io.kvroute.sim.SimulationResult;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Replays the measured article's experiment (6 vLLM workers, 585-block caches, a 2,032-token shared prefix plus a
 * unique 339-token tail, closed loop at concurrency 8, prefix kinds 2/7/12/24 drawn uniformly) through the
 * in-process simulator for every built-in routing policy, and prints request hit rate and cached-token ratio per
 * policy beside the article's measured values; not thread-safe (a command-line program).
 *
 * <p>Run from a fresh clone:
 * <pre>{@code
 * mvn -q -pl examples -am package -DskipTests && java -jar examples/target/kvroute-examples.jar
 * }</pre>
 *
 * <p>Options: {@code --kinds 2,7,12,24 --workers 6 --concurrency 8 --requests 240 --runs 3 --output-tokens 128
 * --blocks 585 --event-delay-ms 2 --seed 1 --policies roundRobin,kvAware,...}. Each point is the median of
 * {@code --runs} runs with seeds {@code seed, seed+1, …}; every policy sees the same requests in the same order,
 * as in the article. 240 requests per run reproduce the article's cold-start misses (12 of 240 at 2 kinds).
 */
public final class ArticleExperiment {
  /** The article's request hit rates at 6 workers, concurrency 8: kinds -> {Service, round-robin, KV routing}. */
  static final Map<Integer, double[]> ARTICLE_HIT_RATE = Map.of(
      2, new double[] {0.950, 0.950, 0.975},
      7, new double[] {0.555, 0.535, 0.830},
      12, new double[] {0.321, 0.292, 0.679},
      24, new double[] {0.175, 0.175, 0.433});

  /** The article's cached-token ratios at 6 workers, concurrency 8: kinds -> {round-robin, KV, approximate}. */
  static final Map<Integer, double[]> ARTICLE_CACHED_RATIO = Map.of(
      2, new double[] {0.814, 0.835, 0.848},
      7, new double[] {0.439, 0.702, 0.638},
      12, new double[] {0.247, 0.573, 0.480},
      24, new double[] {0.149, 0.361, 0.245});

  /** Every built-in policy of the core, by name, with Dynamo's defaults. */
  static final Map<String, Supplier<RouterPolicy>> POLICIES = builtInPolicies(KvAwareConfig.DEFAULT);

  private ArticleExperiment() {}

  /** Every built-in policy, the KV-aware ones with the given cost settings. */
  static Map<String, Supplier<RouterPolicy>> builtInPolicies(KvAwareConfig cost) {
    Map<String, Supplier<RouterPolicy>> policies = new LinkedHashMap<>();
    policies.put("roundRobin", RouterPolicy::roundRobin);
    policies.put("random", RouterPolicy::random);
    policies.put("leastLoaded", RouterPolicy::leastLoaded);
    policies.put("kvAware", () -> RouterPolicy.kvAware(cost));
    policies.put("approximate", () -> RouterPolicy.approximate(cost, Duration.ofSeconds(120), 1 << 20));
    policies.put("cacheAffinity", RouterPolicy::cacheAffinity);
    policies.put("predictedTtft", RouterPolicy::predictedTtft);
    return policies;
  }

  /** Runs the experiment with command-line options and prints the tables. */
  public static void main(String[] args) {
    Options options = Cli.parseOrExit(args, Options::parse, o -> o.help, Options.USAGE);
    if (options == null) {
      return;
    }
    long start = System.nanoTime();
    if (options.suite) {
      runSuite(options, System.out, System.err);
      System.out.printf(Locale.ROOT, "%nDone in %.1f s.%n", (System.nanoTime() - start) / 1e9);
      return;
    }
    if (options.trace != null) {
      try {
        runTrace(options, System.out, System.err);
      } catch (IOException | IllegalArgumentException e) {
        System.err.println("error: cannot replay " + options.trace + ": " + e.getMessage());
        System.exit(1);
      }
      System.out.printf(Locale.ROOT, "%nDone in %.1f s.%n", (System.nanoTime() - start) / 1e9);
      return;
    }
    Results results = run(options, System.err);
    print(results, options, System.out);
    if (options.chartsDir != null) {
      try {
        for (Path file : writeCharts(results, options)) {
          System.err.println("wrote " + file);
        }
      } catch (IOException e) {
        System.err.println("warning: cannot write charts to " + options.chartsDir + ": " + e.getMessage());
      }
    }
    System.out.printf(Locale.ROOT, "%nDone in %.1f s.%n", (System.nanoTime() - start) / 1e9);
  }

  /** Runs every (kinds, policy) point of {@code options}, reporting progress lines to {@code progress}. */
  static Results run(Options options, PrintStream progress) {
    Results results = new Results(options);
    int points = options.kinds.length * options.policies.size();
    int done = 0;
    progress.printf(Locale.ROOT, "Simulating %d workers x %d blocks, concurrency %d, %d requests x %d runs per point"
            + ", %d-token outputs, KV overlap weight %.2f...%n", options.workers, options.blocks, options.concurrency,
        options.requests, options.runs, options.outputTokens, options.overlapWeight);
    for (int kinds : options.kinds) {
      for (String policy : options.policies) {
        long t0 = System.nanoTime();
        Point point = runPoint(options, kinds, options.factories().get(policy));
        results.put(kinds, policy, point);
        done++;
        progress.printf(Locale.ROOT, "[%2d/%d] kinds=%-2d %-13s hit %5.1f%%  cached %.3f  TTFT p50/p99 %4.0f/%4.0f ms"
                + "  (%d ms)%n", done, points, kinds, policy, 100 * point.hitRate, point.cachedRatio, point.ttftP50,
            point.ttftP99, (System.nanoTime() - t0) / 1_000_000);
      }
    }
    return results;
  }

  /**
   * Replays a Mooncake trace (open loop, arrival times scaled by {@code --time-scale}) through every policy and
   * prints one row per policy.
   */
  static void runTrace(Options options, PrintStream out, PrintStream progress) throws IOException {
    MooncakeTrace trace = MooncakeTrace.load(options.trace, MooncakeTrace.DEFAULT_BLOCK_TOKENS,
        options.traceRequests);
    int blocks = options.given("--blocks") ? options.blocks
        : Math.max(65_536, (trace.maxSequenceTokens() + 15) / 16);
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(blocks).build();
    progress.printf(Locale.ROOT, "Replaying %d requests of %s on %d workers x %d blocks, arrivals x%.2f...%n",
        trace.size(), options.trace.getFileName(), options.workers, blocks, options.timeScale);
    boolean hitRate = !trace.everyRequestSharesTheFirstBlock();
    if (!hitRate) {
      out.println("Every request shares its first block: the request hit rate is 100% by construction and left out.");
    }
    out.printf(Locale.ROOT, "%n%-14s| %8s | %7s | %9s | %-19s | %7s | %-8s | %s%n", "policy", "hit rate", "cached",
        "predicted", "TTFT p50 / p99 (ms)", "req/s", "max/mean", "requests per worker");
    out.println("-".repeat(110));
    for (String policy : options.policies) {
      long t0 = System.nanoTime();
      SimulationResult r = Simulation.newBuilder()
          .engine(engine)
          .workers(options.workers)
          .requests(trace.size())
          .workload(trace)
          .openLoop(i -> Math.round(trace.arrivalNanos(i) * options.timeScale))
          .eventDelay(Duration.ofNanos(options.eventDelayNanos))
          .loadReportInterval(Duration.ofNanos(options.loadReportNanos))
          .router(ticker -> Router.newBuilder().policy(options.factories().get(policy).get()).ticker(ticker)
              .randomSeed(options.seed).build())
          .build()
          .run();
      progress.printf(Locale.ROOT, "  %s done (%d ms)%n", policy, (System.nanoTime() - t0) / 1_000_000);
      out.printf(Locale.ROOT, "%-14s| %8s | %7.3f | %9.3f | %8.0f / %8.0f | %7.2f | %8.2f | %s%n", policy,
          hitRate ? String.format(Locale.ROOT, "%.1f%%", 100 * r.requestHitRate()) : "-", r.cachedTokenRatio(),
          r.predictedCachedTokenRatio(), r.ttftMillis(0.5), r.ttftMillis(0.99), r.throughputPerSecond(),
          r.maxMeanLoad(), Arrays.toString(r.requestsPerWorker()));
    }
  }

  /** The trace the suite replays when {@code --trace} is not given, relative to the working directory. */
  static final Path DEFAULT_SUITE_TRACE = Path.of("..", "shared", "traces", "mooncake_synthetic_trace.jsonl");

  /** The policies the suite compares. */
  static final List<String> SUITE_POLICIES = List.of("roundRobin", "kvAware", "cacheAffinity", "predictedTtft");

  /** Runs the scenario suite ({@code --suite}) and prints its Markdown table and the candidate's misses. */
  static void runSuite(Options options, PrintStream out, PrintStream progress) {
    MooncakeTrace trace = null;
    Path tracePath = options.trace != null ? options.trace : DEFAULT_SUITE_TRACE;
    if (java.nio.file.Files.isReadable(tracePath)) {
      try {
        trace = MooncakeTrace.load(tracePath, MooncakeTrace.DEFAULT_BLOCK_TOKENS, options.traceRequests);
      } catch (IOException | IllegalArgumentException e) {
        progress.println("warning: cannot read " + tracePath + " (" + e.getMessage() + "); traces left out");
      }
    } else {
      progress.println("note: no trace at " + tracePath + " (give --trace FILE); traces left out");
    }
    List<Suite.Scenario> scenarios = new ArrayList<>(options.reducedSuite ? Suite.reduced()
        : options.heldOutSuite ? Suite.heldOut(trace) : Suite.full(trace));
    if (options.scenarioFilter != null) {
      scenarios.removeIf(s -> java.util.Arrays.stream(options.scenarioFilter.split(","))
          .noneMatch(f -> s.name().contains(f.trim())));
    }
    Map<String, Supplier<RouterPolicy>> policies = new LinkedHashMap<>();
    Map<String, Supplier<RouterPolicy>> all = options.factories();
    List<String> names = options.given("--policies") ? options.policies : SUITE_POLICIES;
    for (String name : names) {
      policies.put(name, all.get(name));
    }
    progress.printf(Locale.ROOT, "Suite: %d scenarios x %d policies, seed %d (virtual time: results do not depend on"
        + " this machine's load)%n", scenarios.size(), policies.size(), options.seed);
    List<Suite.Row> rows = Suite.run(scenarios, policies, options.seed, progress);
    String candidate = names.get(names.size() - 1);
    out.println();
    Suite.printMarkdown(rows, candidate, out);
    out.println();
    List<String> misses = new ArrayList<>();
    for (Suite.Row row : rows) {
      misses.addAll(Suite.misses(row, candidate, 1.1));
    }
    if (options.chartsDir != null) {
      try {
        for (Path file : Suite.writeCharts(rows, options.chartsDir)) {
          progress.println("wrote " + file);
        }
      } catch (IOException e) {
        progress.println("warning: cannot write charts to " + options.chartsDir + ": " + e.getMessage());
      }
    }
    out.printf(Locale.ROOT, "%s against the targets (hit >= kvAware, p50 <= kvAware, p99 <= 1.1x kvAware, max/mean"
        + " load <= 1.3, traces >= 90%% of the way to the pooled bound): %d misses%n", candidate, misses.size());
    for (String m : misses) {
      out.println("  - " + m);
    }
  }

  /** One (kinds, policy) point: the medians over the runs. */
  static Point runPoint(Options options, int kinds, Supplier<RouterPolicy> policy) {
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(options.blocks).build();
    double[] hit = new double[options.runs];
    double[] ratio = new double[options.runs];
    double[] p50 = new double[options.runs];
    double[] p99 = new double[options.runs];
    double[] spread = new double[options.runs];
    for (int run = 0; run < options.runs; run++) {
      long seed = options.seed + run;
      SharedPrefixWorkload workload = SharedPrefixWorkload.newBuilder()
          .prefixKinds(kinds)
          .outputTokens(options.outputTokens)
          .seed(seed)
          .build();
      SimulationResult result = Simulation.newBuilder()
          .engine(engine)
          .workers(options.workers)
          .concurrency(options.concurrency)
          .requests(options.requests)
          .workload(workload)
          .eventDelay(Duration.ofNanos(options.eventDelayNanos))
          .loadReportInterval(Duration.ofNanos(options.loadReportNanos))
          .router(ticker -> Router.newBuilder().policy(policy.get()).ticker(ticker).randomSeed(seed).build())
          .build()
          .run();
      hit[run] = result.requestHitRate();
      ratio[run] = result.cachedTokenRatio();
      p50[run] = result.ttftMillis(0.50);
      p99[run] = result.ttftMillis(0.99);
      spread[run] = result.workersPerPrefixGroup();
    }
    return new Point(median(hit), median(ratio), median(p50), median(p99), median(spread));
  }

  static double median(double[] values) {
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  /** Whether the options are the configuration the article measured its hit rates at (6 workers, concurrency 8). */
  static boolean articleConfiguration(Options o) {
    return o.workers == 6 && o.concurrency == 8 && o.blocks == SimEngineConfig.DEFAULT_NUM_BLOCKS;
  }

  /**
   * The article's cached-token ratios for this configuration, kinds -> {round-robin, KV routing}, or null when the
   * article did not measure it (it measured 6 workers at concurrency 4, 8 and 16, and 3 workers at 8).
   */
  static @Nullable Map<Integer, double[]> articleCachedRatio(Options o) {
    if (o.blocks != SimEngineConfig.DEFAULT_NUM_BLOCKS) {
      return null;
    }
    if (o.workers == 6 && o.concurrency == 8) {
      return ARTICLE_CACHED_RATIO;
    }
    if (o.workers == 6 && o.concurrency == 4) {
      return Map.of(2, new double[] {0.814, 0.857}, 7, new double[] {0.385, 0.788}, 12, new double[] {0.262, 0.664},
          24, new double[] {0.126, 0.429});
    }
    if (o.workers == 6 && o.concurrency == 16) {
      return Map.of(2, new double[] {0.814, 0.835}, 7, new double[] {0.442, 0.779}, 12, new double[] {0.237, 0.695},
          24, new double[] {0.148, 0.431});
    }
    if (o.workers == 3 && o.concurrency == 8) {
      return Map.of(2, new double[] {0.840, 0.848}, 7, new double[] {0.475, 0.690}, 12, new double[] {0.291, 0.474},
          24, new double[] {0.141, 0.252});
    }
    return null;
  }

  static void print(Results results, Options options, PrintStream out) {
    List<String> policies = options.policies;
    boolean article = articleConfiguration(options);
    Map<Integer, double[]> articleCached = articleCachedRatio(options);
    out.println();
    out.printf(Locale.ROOT, "Request hit rate (share of requests with >= 1 cached prompt block), %d workers,"
        + " concurrency %d%n", options.workers, options.concurrency);
    StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%-6s| %-24s|", "kinds",
        article ? "article Svc / RR / KV" : "article (not measured)"));
    for (String p : policies) {
      header.append(String.format(Locale.ROOT, " %13s", p));
    }
    out.println(header);
    out.println("-".repeat(header.length()));
    for (int kinds : options.kinds) {
      double[] a = article ? ARTICLE_HIT_RATE.get(kinds) : null;
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6d| %-24s|", kinds,
          a == null ? "-" : String.format(Locale.ROOT, "%.1f / %.1f / %.1f%%", 100 * a[0], 100 * a[1], 100 * a[2])));
      for (String p : policies) {
        row.append(String.format(Locale.ROOT, " %12.1f%%", 100 * results.get(kinds, p).hitRate));
      }
      out.println(row);
    }

    out.println();
    out.printf(Locale.ROOT, "Cached-token ratio (cached prompt tokens / prompt tokens, max %.3f)%n",
        (double) SharedPrefixWorkload.ARTICLE_PREFIX_TOKENS
            / (SharedPrefixWorkload.ARTICLE_PREFIX_TOKENS + SharedPrefixWorkload.ARTICLE_TAIL_TOKENS));
    header = new StringBuilder(String.format(Locale.ROOT, "%-6s| %-24s|", "kinds", articleCached == null
        ? "article (not measured)" : article ? "article RR / KV / approx" : "article RR / KV"));
    for (String p : policies) {
      header.append(String.format(Locale.ROOT, " %13s", p));
    }
    out.println(header);
    out.println("-".repeat(header.length()));
    for (int kinds : options.kinds) {
      double[] a = articleCached == null ? null : articleCached.get(kinds);
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6d| %-24s|", kinds,
          a == null ? "-" : a.length == 3 ? String.format(Locale.ROOT, "%.3f / %.3f / %.3f", a[0], a[1], a[2])
              : String.format(Locale.ROOT, "%.3f / %.3f", a[0], a[1])));
      for (String p : policies) {
        row.append(String.format(Locale.ROOT, " %13.3f", results.get(kinds, p).cachedRatio));
      }
      out.println(row);
    }

    out.println();
    out.println("Simulated TTFT p50 / p99 in ms (engine-side virtual time, no HTTP or network cost)");
    header = new StringBuilder(String.format(Locale.ROOT, "%-6s|", "kinds"));
    for (String p : policies) {
      header.append(String.format(Locale.ROOT, " %13s", p));
    }
    out.println(header);
    out.println("-".repeat(header.length()));
    for (int kinds : options.kinds) {
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6d|", kinds));
      for (String p : policies) {
        Point point = results.get(kinds, p);
        row.append(String.format(Locale.ROOT, " %13s", String.format(Locale.ROOT, "%.0f / %.0f", point.ttftP50,
            point.ttftP99)));
      }
      out.println(row);
    }

    out.println();
    out.println(options.workers == 6 && options.concurrency == 4
        ? "Workers one prefix was sent to (article: RR 6.00/6.00/6.00/5.92, KV 1.00/2.86/4.00/5.17)"
        : "Workers one prefix was sent to");
    out.println(header);
    out.println("-".repeat(header.length()));
    for (int kinds : options.kinds) {
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6d|", kinds));
      for (String p : policies) {
        row.append(String.format(Locale.ROOT, " %13.2f", results.get(kinds, p).workersPerPrefix));
      }
      out.println(row);
    }
  }

  /**
   * Writes the hit-rate and cached-ratio charts of a run (per policy across kinds; the article's bars beside them
   * only at the configuration the article measured).
   */
  static List<Path> writeCharts(Results results, Options options) throws IOException {
    java.nio.file.Files.createDirectories(options.chartsDir);
    boolean article = articleConfiguration(options);
    Map<Integer, double[]> articleCached = articleCachedRatio(options);
    List<String> groups = new ArrayList<>();
    for (int k : options.kinds) {
      groups.add(k + " kinds");
    }
    List<Path> written = new ArrayList<>();
    for (boolean hit : new boolean[] {true, false}) {
      List<String> series = new ArrayList<>();
      boolean withArticle = hit ? article : articleCached != null;
      if (withArticle) {
        series.add("article round-robin");
        series.add("article Dynamo KV");
      }
      series.addAll(options.policies);
      double[][] v = new double[series.size()][options.kinds.length];
      for (int g = 0; g < options.kinds.length; g++) {
        int k = options.kinds[g];
        int s = 0;
        if (withArticle) {
          double[] a = hit ? ARTICLE_HIT_RATE.get(k) : articleCached.get(k);
          v[0][g] = a == null ? Double.NaN : hit ? a[1] : a[0];
          v[1][g] = a == null ? Double.NaN : hit ? a[2] : a[1];
          s = 2;
        }
        for (String p : options.policies) {
          Point point = results.get(k, p);
          v[s++][g] = hit ? point.hitRate : point.cachedRatio;
        }
      }
      String config = options.workers + " workers, concurrency " + options.concurrency;
      Path file = options.chartsDir.resolve(hit ? "experiment-hit-rate.svg" : "experiment-cached-ratio.svg");
      java.nio.file.Files.writeString(file, hit
          ? SvgCharts.groupedBars("Request hit rate, " + config, "requests with a cached block", groups, series, v, 1,
              true)
          : SvgCharts.groupedBars("Cached-token ratio, " + config, "cached prompt tokens / prompt tokens", groups,
              series, v, 1, false));
      written.add(file);
    }
    return written;
  }

  /** The medians of one (kinds, policy) point. */
  record Point(double hitRate, double cachedRatio, double ttftP50, double ttftP99, double workersPerPrefix) {}

  /** All points of a run, by kinds and policy. */
  static final class Results {
    private final Map<String, Point> points = new LinkedHashMap<>();

    Results(Options options) {}

    void put(int kinds, String policy, Point point) {
      points.put(kinds + "/" + policy, point);
    }

    Point get(int kinds, String policy) {
      Point p = points.get(kinds + "/" + policy);
      if (p == null) {
        throw new IllegalArgumentException("no result for kinds " + kinds + " and policy " + policy);
      }
      return p;
    }
  }

  /** Command-line options. */
  static final class Options extends Cli.Options {
    static final String USAGE = String.join("\n",
        "usage: java -jar kvroute-examples.jar [options]",
        "  --kinds 2,7,12,24        prefix kinds (rows)",
        "  --policies a,b,...       policies (columns), from: " + String.join(",", POLICIES.keySet()),
        "  --workers 6              simulated vLLM workers",
        "  --concurrency 8          closed-loop clients",
        "  --requests 240           requests per run",
        "  --runs 3                 runs per point (median reported)",
        "  --blocks 585             KV cache blocks per worker (16 tokens each)",
        "  --output-tokens 128      output tokens per request",
        "  --event-delay-ms 2       KV event delivery delay (virtual time)",
        "  --load-report-ms 1000    report engine load (running, waiting, KV use) to the router this often, as a",
        "                           metrics scraper would (virtual time; 0 = never; 1000 = the scraper's default)",
        "  --seed 1                 seed of the first run",
        "  --overlap-weight 1.0     the KV-aware cost's overlap weight (Dynamo's default 1.0)",
        "  --trace FILE             replay a Mooncake JSONL trace instead (open loop; --blocks defaults to 65536:",
        "                           1M tokens per worker, like Dynamo's mocker's 16384 blocks x 64)",
        "  --trace-requests N       replay only the first N requests of the trace",
        "  --time-scale 1.0         multiply the trace's arrival times (below 1 = more load)",
        "  --suite                  run the scenario suite (grid, skew, bursts, small/slow worker, churn, traces,",
        "                           overload) for " + String.join(",", SUITE_POLICIES) + " (or --policies; the last",
        "                           is checked against kvAware); the trace is --trace or " + DEFAULT_SUITE_TRACE,
        "  --suite-reduced          the reduced suite CI runs",
        "  --suite-heldout          the held-out family: 4/5/8 workers, c12/c20, 3/16/48 kinds, other prompt shapes,",
        "                           mixed outputs, Poisson arrivals, slow or small workers, a mid-run slowdown,",
        "                           multi-turn conversations, the trace on 8 and 4 workers at other time scales",
        "  --scenarios a,b          only the suite's scenarios whose names contain one of these",
        "  --charts DIR             where SVG charts go (default target/kvroute-charts; none: no charts)");

    long eventDelayNanos = Simulation.DEFAULT_EVENT_DELAY.toNanos();
    long loadReportNanos = Simulation.DEFAULT_LOAD_REPORT_INTERVAL.toNanos();
    double overlapWeight = KvAwareConfig.DEFAULT.overlapWeight();
    @Nullable Path trace;
    int traceRequests = Integer.MAX_VALUE;
    double timeScale = 1.0;
    boolean suite;
    boolean reducedSuite;
    boolean heldOutSuite;
    @Nullable String scenarioFilter;
    @Nullable Path chartsDir = Path.of("target", "kvroute-charts");

    /** The policies, with {@code --overlap-weight} applied to the KV-aware ones. */
    Map<String, Supplier<RouterPolicy>> factories() {
      return builtInPolicies(KvAwareConfig.DEFAULT.withOverlapWeight(overlapWeight));
    }

    Options() {
      super(new ArrayList<>(POLICIES.keySet()));
    }

    static Options parse(String[] args) {
      Options o = new Options();
      o.read(args);
      return o;
    }

    @Override
    boolean flag(String arg) {
      if (arg.equals("--suite") || arg.equals("--suite-reduced") || arg.equals("--suite-heldout")) {
        suite = true;
        reducedSuite = arg.equals("--suite-reduced");
        heldOutSuite = arg.equals("--suite-heldout");
        return true;
      }
      return false;
    }

    @Override
    boolean option(String arg, String value) {
      switch (arg) {
        case "--trace" -> trace = Path.of(value);
        case "--scenarios" -> scenarioFilter = value;
        case "--charts" -> chartsDir = value.equals("none") ? null : Path.of(value);
        case "--trace-requests" -> traceRequests = Cli.positive(value, arg);
        case "--time-scale" -> timeScale = Cli.number(value, arg, false);
        case "--load-report-ms" -> loadReportNanos = Cli.millisAsNanos(value, arg, true);
        case "--event-delay-ms" -> eventDelayNanos = Cli.millisAsNanos(value, arg, true);
        case "--overlap-weight" -> overlapWeight = Cli.number(value, arg, true);
        default -> {
          return false;
        }
      }
      return true;
    }
  }
}
