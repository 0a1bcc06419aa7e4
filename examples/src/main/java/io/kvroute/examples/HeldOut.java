package io.kvroute.examples;

import io.kvroute.sim.MooncakeTrace;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimRequest;
import io.kvroute.sim.SimTokenizer;
import io.kvroute.sim.Simulation;
import io.kvroute.sim.TimingModel;
import io.kvroute.sim.Workload;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/**
 * The held-out scenario family ({@code --suite-heldout}): dimensions the suite never varies (4, 5 and 8 workers;
 * 12 and 20 clients; 3, 16 and 48 prefix kinds; other prefix and tail lengths; mixed output lengths; Poisson
 * arrivals at a share of the cluster's capacity; a fleet with slower workers or mixed cache sizes; a worker that
 * slows down mid-run; multi-turn conversations whose prompts grow turn by turn; the Mooncake trace on other worker
 * counts and time scales), and the workloads and arrival processes they need; stateless, immutable values,
 * thread-safe.
 */
final class HeldOut {
  private HeldOut() {}

  /** Requests per synthetic held-out scenario (as in the suite). */
  static final int REQUESTS = 1000;

  /** The held-out scenarios; {@code trace} may be null to leave the trace scenarios out. */
  static List<Suite.Scenario> scenarios(@Nullable MooncakeTrace trace) {
    List<Suite.Scenario> s = new ArrayList<>();
    int n = REQUESTS;
    // Worker counts, concurrencies and kind counts the suite's grid never takes.
    int[][] grid = {{4, 12, 7}, {4, 20, 16}, {5, 12, 3}, {5, 20, 12}, {6, 12, 16}, {6, 20, 3}, {6, 20, 48},
        {8, 12, 48}, {8, 20, 16}};
    for (int[] g : grid) {
      int w = g[0];
      int c = g[1];
      int k = g[2];
      s.add(scenario(w + "w c" + c + " k" + k, seed -> Suite.articleBase(w, c, k, n, seed)));
    }
    // Other prompt shapes: a short prefix with a long tail, a long prefix, a short prefix with a short tail.
    s.add(scenario("6w c12 k12 prefix 512 tail 1500", seed -> shaped(6, 12, 12, 512, 1500, n, seed)));
    s.add(scenario("6w c8 k7 prefix 6000", seed -> shaped(6, 8, 7, 6000, SharedPrefixWorkload.ARTICLE_TAIL_TOKENS,
        n, seed)));
    s.add(scenario("6w c16 k24 prefix 1024 tail 128", seed -> shaped(6, 16, 24, 1024, 128, n, seed)));
    // Output lengths drawn log-uniformly from 16 to 1,024 tokens (mean 242) instead of a fixed 128.
    s.add(scenario("6w c16 k12 outputs 16-1024", seed -> Suite.articleBase(6, 16, 12, n, seed)
        .workload(mixedOutputs(SharedPrefixWorkload.newBuilder().prefixKinds(12).seed(seed).build(), 16, 1024,
            seed))));
    // Poisson (open-loop) arrivals at a share of the rate a cache-affine cluster sustains.
    for (int pct : new int[] {50, 80, 100}) {
      s.add(scenario("poisson " + pct + "% k12", seed -> {
        SharedPrefixWorkload w = SharedPrefixWorkload.newBuilder().prefixKinds(12).seed(seed).build();
        double rate = pct / 100.0 * capacityPerSecond(6, w, SimEngineConfig.DEFAULT);
        long[] at = poissonArrivals(n, rate, seed);
        return Simulation.newBuilder().workers(6).requests(n).workload(w).openLoop(i -> at[i]);
      }));
    }
    // Heterogeneous fleets: two workers at half speed; caches of half, one and two times the article's.
    SimEngineConfig halfSpeed = SimEngineConfig.newBuilder().timing(TimingModel.DEFAULT.slowerBy(2)).build();
    s.add(scenario("two half-speed workers c16 k12", seed -> Suite.articleBase(6, 16, 12, n, seed)
        .workerEngine(0, halfSpeed).workerEngine(1, halfSpeed)));
    SimEngineConfig small = SimEngineConfig.newBuilder().numBlocks(SimEngineConfig.DEFAULT_NUM_BLOCKS / 2).build();
    SimEngineConfig large = SimEngineConfig.newBuilder().numBlocks(SimEngineConfig.DEFAULT_NUM_BLOCKS * 2).build();
    s.add(scenario("mixed caches c16 k24", seed -> Suite.articleBase(6, 16, 24, n, seed)
        .workerEngine(0, small).workerEngine(1, small).workerEngine(4, large).workerEngine(5, large)));
    // A worker that becomes three times slower 4 s into the run, unannounced.
    s.add(scenario("slow x3 from 4 s c16 k12", seed -> Suite.articleBase(6, 16, 12, n, seed)
        .slowdown(0, Duration.ofSeconds(4), 3)));
    // Multi-turn conversations: each prompt is the previous turn's prompt, its answer and a new user message.
    s.add(scenario("multi-turn 24 conv c12", seed -> Simulation.newBuilder().workers(6).concurrency(12).requests(n)
        .workload(new Conversations(24, 10, 4, 512, 96, 160, seed))));
    s.add(scenario("multi-turn 48 conv c24", seed -> Simulation.newBuilder().workers(6).concurrency(24).requests(n)
        .workload(new Conversations(48, 10, 4, 512, 96, 160, seed))));
    if (trace != null) {
      s.add(Suite.traceScenario("trace 8w 1M x0.7", trace, 8, Suite.ROOMY_TRACE_BLOCKS, 0.7));
      s.add(Suite.traceScenario("trace 4w tight x1.5", trace, 4, Suite.TIGHT_TRACE_BLOCKS, 1.5));
    }
    return s;
  }

  private static Suite.Scenario scenario(String name, java.util.function.LongFunction<Simulation.Builder> setup) {
    return new Suite.Scenario(name, "heldout", setup, null, 0);
  }

  private static Simulation.Builder shaped(int workers, int concurrency, int kinds, int prefix, int tail,
      int requests, long seed) {
    return Simulation.newBuilder().workers(workers).concurrency(concurrency).requests(requests)
        .workload(SharedPrefixWorkload.newBuilder().prefixKinds(kinds).prefixTokens(prefix).tailTokens(tail)
            .seed(seed).build());
  }

  /**
   * The request rate, per second, that {@code workers} engines sustain on {@code workload} when every request finds
   * its shared prefix cached (the best a router can do), from the engine's {@link TimingModel}: a cache-affine
   * router gives each worker {@code m = ceil(kinds / workers)} prefixes to keep, and each running request holds its
   * own blocks beside them ({@code ceil((prefix + tail + output) / blockSize) - floor(prefix / blockSize)}), so a
   * worker runs {@code D = (numBlocks - m x prefixBlocks) / ownBlocks} requests at once (at least 1, at most
   * {@code maxNumSeqs}). Each request computes its tail ({@code prefillPerToken x tail + prefillPerToken² x tail²})
   * and takes part in {@code output} decode steps of {@code overhead + perSequence x D + perKvToken x D x (prompt +
   * output / 2)}, shared by the {@code D} sequences: a worker's time per request is {@code tailPrefill + output x
   * step(D) / D}, its rate the inverse. Above this rate queues grow with any router; a router that misses the cache
   * saturates below it.
   *
   * @return requests per second of the whole cluster
   */
  static double capacityPerSecond(int workers, SharedPrefixWorkload workload, SimEngineConfig engine) {
    int bs = engine.blockSize();
    int prefixBlocks = workload.prefixTokens() / bs;
    int prompt = workload.prefixTokens() + workload.tailTokens();
    int own = (prompt + workload.outputTokens() + bs - 1) / bs - prefixBlocks;
    int kept = (workload.prefixKinds() + workers - 1) / workers;
    int running = Math.max(1, Math.min(engine.maxNumSeqs(), (engine.numBlocks() - kept * prefixBlocks) / own));
    TimingModel t = engine.timing();
    double tail = workload.tailTokens();
    double prefillMs = t.prefillMillisPerToken() * tail + t.prefillMillisPerTokenSquared() * tail * tail;
    double stepMs = t.stepOverheadMillis() + t.decodeMillisPerSequence() * running
        + t.decodeMillisPerKvToken() * running * (prompt + workload.outputTokens() / 2.0);
    double perRequestMs = prefillMs + workload.outputTokens() * stepMs / running;
    return workers * 1000.0 / perRequestMs;
  }

  /**
   * Arrival times of a Poisson process of {@code ratePerSecond}: exponential gaps drawn from a generator seeded with
   * {@code seed}, the first request at the first gap.
   *
   * @return {@code n} non-decreasing times in nanoseconds
   */
  static long[] poissonArrivals(int n, double ratePerSecond, long seed) {
    SplittableRandom random = new SplittableRandom(seed * 0x9e3779b97f4a7c15L + 0x5851f42d4c957f2dL);
    long[] at = new long[n];
    double t = 0;
    for (int i = 0; i < n; i++) {
      t += -Math.log(1 - random.nextDouble()) / ratePerSecond;
      at[i] = Math.round(t * 1e9);
    }
    return at;
  }

  /**
   * {@code base}'s prompts with output lengths drawn log-uniformly from {@code min} to {@code max} tokens (each
   * request's from a generator seeded with {@code seed} and its index).
   */
  static Workload mixedOutputs(Workload base, int min, int max, long seed) {
    double ratio = Math.log((double) max / min);
    return index -> {
      SimRequest r = base.request(index);
      double u = new SplittableRandom(seed * 0x2545f4914f6cdd1dL + index).nextDouble();
      int out = (int) Math.min(max, Math.round(min * Math.exp(u * ratio)));
      return new SimRequest(r.promptTokens(), out, r.prefixGroup());
    };
  }

  /**
   * Multi-turn conversations: {@code slots} conversations run side by side, request {@code i} continues slot
   * {@code i mod slots}, and each slot runs conversations of {@code turns} turns one after another. Turn {@code t}'s
   * prompt is a system prompt (one of {@code systemKinds}, {@code systemTokens} long), then {@code t + 1} user
   * messages of {@code userTokens} with the {@code t} answers of {@code answerTokens} between them, so it extends
   * the previous turn's prompt by that turn's answer and a new message, and asks for an answer of
   * {@code answerTokens}. The answers in the prompt are the workload's tokens, not the engine's sampled ones, so a
   * turn reuses its previous prompt's cached blocks, not its output's (as when a client re-renders the chat
   * template). Immutable and thread-safe.
   */
  static final class Conversations implements Workload {
    private final int slots;
    private final int turns;
    private final int systemKinds;
    private final int systemTokens;
    private final int userTokens;
    private final int answerTokens;
    private final long seed;

    Conversations(int slots, int turns, int systemKinds, int systemTokens, int userTokens, int answerTokens,
        long seed) {
      if (slots <= 0 || turns <= 0 || systemKinds <= 0 || systemTokens < 0 || userTokens <= 0 || answerTokens <= 0) {
        throw new IllegalArgumentException("conversation sizes must be positive (the system prompt may be empty)");
      }
      this.slots = slots;
      this.turns = turns;
      this.systemKinds = systemKinds;
      this.systemTokens = systemTokens;
      this.userTokens = userTokens;
      this.answerTokens = answerTokens;
      this.seed = seed;
    }

    /** The conversation request {@code index} belongs to. */
    long conversation(int index) {
      int round = index / slots;
      return (long) (round / turns) * slots + index % slots;
    }

    /** The turn, from 0, request {@code index} is in its conversation. */
    int turn(int index) {
      return (index / slots) % turns;
    }

    /** The prompt length of turn {@code t}. */
    int promptTokens(int t) {
      return systemTokens + (t + 1) * userTokens + t * answerTokens;
    }

    @Override
    public SimRequest request(int index) {
      if (index < 0) {
        throw new IllegalArgumentException("index must be >= 0 but was " + index);
      }
      long conv = conversation(index);
      int t = turn(index);
      int kind = (int) Math.floorMod(mix(seed ^ conv * 0x632be59bd9b4e019L), (long) systemKinds);
      int[] prompt = new int[promptTokens(t)];
      int p = 0;
      for (int i = 0; i < systemTokens; i++) {
        prompt[p++] = token(1, kind, 0, i);
      }
      for (int turn = 0; turn <= t; turn++) {
        for (int i = 0; i < userTokens; i++) {
          prompt[p++] = token(2, conv, turn, i);
        }
        if (turn < t) {
          for (int i = 0; i < answerTokens; i++) {
            prompt[p++] = token(3, conv, turn, i);
          }
        }
      }
      return new SimRequest(prompt, answerTokens, kind);
    }

    private int token(int role, long owner, int turn, int position) {
      long h = mix(seed * 0x9e3779b97f4a7c15L + role * 0xbf58476d1ce4e5b9L + owner * 0x94d049bb133111ebL
          + turn * 0x2545f4914f6cdd1dL + position);
      int range = SimTokenizer.DEFAULT_VOCABULARY_SIZE - SimTokenizer.FIRST_WORD_ID;
      return SimTokenizer.FIRST_WORD_ID + (int) Math.floorMod(h, (long) range);
    }

    private static long mix(long z) {
      z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
      z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
      return z ^ (z >>> 31);
    }

    @Override
    public String toString() {
      return "Conversations{slots=" + slots + ", turns=" + turns + ", systemKinds=" + systemKinds + ", system="
          + systemTokens + ", user=" + userTokens + ", answer=" + answerTokens + ", seed=" + seed + "}";
    }
  }
}
