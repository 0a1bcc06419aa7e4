package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static io.kvroute.transport.okhttp.TestSupport.words;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimServer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import okio.BufferedSource;
import org.junit.jupiter.api.Test;

/**
 * The whole gateway path over real HTTP: text chat requests are tokenized on the workers' {@code /tokenize},
 * routed, forwarded and streamed, while the scraper feeds the workers' {@code /metrics} to the router; the engines'
 * own {@code usage.prompt_tokens_details.cached_tokens} measure the outcome per policy. Prints its measurements
 * (in {@code target/surefire-reports/*EndToEndGatewayTest-output.txt}); asserts only what routing must achieve.
 */
class EndToEndGatewayTest {
  private static final Pattern PROMPT = Pattern.compile("\"prompt_tokens\":(\\d+)");
  private static final Pattern CACHED = Pattern.compile("\"cached_tokens\":(\\d+)");
  private static final int WORKERS = 6;
  private static final int KINDS = 8;
  private static final int REQUESTS = 96;
  private static final int CONCURRENCY = 4;
  private static final long SEED = 20261130;

  record Outcome(String policy, int requests, int hits, long promptTokens, long cachedTokens, long scrapes,
      double meanHeadersMillis, int[] perWorker) {
    double cachedRatio() {
      return (double) cachedTokens / promptTokens;
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%-13s requests=%d hits=%d (%.1f%%) cached tokens=%d/%d (%.1f%%)"
          + " mean time to headers=%.2f ms scrapes=%d per worker=%s", policy, requests, hits, 100.0 * hits / requests,
          cachedTokens, promptTokens, 100 * cachedRatio(), meanHeadersMillis, scrapes,
          java.util.Arrays.toString(perWorker));
    }
  }

  private static Outcome run(String name, RouterPolicy policy) throws Exception {
    Router router = Router.newBuilder().policy(policy).build();
    List<SimServer> sims = new ArrayList<>();
    WorkerId[] ids = new WorkerId[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
      ids[i] = WorkerId.of("w" + i);
      sims.add(TestSupport.startSim(router, ids[i], 50));
    }
    // The requests, drawn before running so every policy sees the same sequence.
    SplittableRandom random = new SplittableRandom(SEED);
    List<byte[]> bodies = new ArrayList<>();
    for (int r = 0; r < REQUESTS; r++) {
      int kind = random.nextInt(KINDS);
      bodies.add(("{\"model\":\"" + MODEL + "\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
          + "\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\"" + words("kind" + kind + "-", 120)
          + "\"},{\"role\":\"user\",\"content\":\"" + words("req" + r + "-", 12) + "\"}]}")
          .getBytes(StandardCharsets.UTF_8));
    }
    AtomicInteger next = new AtomicInteger();
    AtomicInteger hits = new AtomicInteger();
    AtomicLong prompt = new AtomicLong();
    AtomicLong cached = new AtomicLong();
    AtomicLong headersNanos = new AtomicLong();
    int[] perWorker = new int[WORKERS];
    ExecutorService pool = Executors.newFixedThreadPool(CONCURRENCY);
    try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).interval(Duration.ofMillis(50))
        .build()) {
      scraper.start();
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
          .tokenizer(OkHttpTokenizer.newBuilder().workers(router.workers()).build())
          .build();
      List<Future<?>> clients = new ArrayList<>();
      for (int c = 0; c < CONCURRENCY; c++) {
        clients.add(pool.submit(() -> {
          for (int r; (r = next.getAndIncrement()) < REQUESTS; ) {
            long start = System.nanoTime();
            try (ForwardedResponse response = forwarder.forward(
                ForwardRequest.newBuilder("/v1/chat/completions", bodies.get(r)).build())) {
              headersNanos.addAndGet(System.nanoTime() - start);
              assertEquals(200, response.code());
              synchronized (perWorker) {
                perWorker[Integer.parseInt(response.workerId().name().substring(1))]++;
              }
              BufferedSource source = response.body().source();
              String usage = null;
              for (String line; (line = source.readUtf8Line()) != null; ) {
                if (line.contains("\"usage\"")) {
                  usage = line;
                }
              }
              Matcher p = PROMPT.matcher(usage);
              Matcher k = CACHED.matcher(usage);
              assertTrue(p.find() && k.find(), usage);
              assertEquals(response.routing().promptTokens(), Long.parseLong(p.group(1)),
                  "the tokenizer's count is the engine's");
              prompt.addAndGet(Long.parseLong(p.group(1)));
              long c2 = Long.parseLong(k.group(1));
              cached.addAndGet(c2);
              if (c2 > 0) {
                hits.incrementAndGet();
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : clients) {
        f.get();
      }
      for (WorkerId id : ids) {
        assertEquals(0, router.activeRequests(id), "every booking was released");
      }
      return new Outcome(name, REQUESTS, hits.get(), prompt.get(), cached.get(), scraper.scrapeCount(),
          headersNanos.get() / 1e6 / REQUESTS, perWorker);
    } finally {
      pool.shutdownNow();
      sims.forEach(SimServer::close);
    }
  }

  @Test
  void kvAwareRoutingBeatsRoundRobinOnTheEnginesOwnCacheCounters() throws Exception {
    Outcome roundRobin = run("roundRobin", RouterPolicy.roundRobin());
    Outcome kvAware = run("kvAware", RouterPolicy.kvAware());
    Outcome affinity = run("cacheAffinity", RouterPolicy.cacheAffinity());
    System.out.println(WORKERS + " simulated workers, " + KINDS + " shared 120-word system prompts, " + REQUESTS
        + " streamed chat requests, concurrency " + CONCURRENCY + ", seed " + SEED);
    System.out.println(roundRobin);
    System.out.println(kvAware);
    System.out.println(affinity);
    // Round robin warms each kind on every worker in turn; prefix-aware policies find the warm one.
    assertTrue(kvAware.cachedRatio() > roundRobin.cachedRatio(), kvAware + " vs " + roundRobin);
    assertTrue(affinity.cachedRatio() > roundRobin.cachedRatio(), affinity + " vs " + roundRobin);
    // Each kind's first request must miss; with cache affinity, few others do.
    assertTrue(affinity.hits() >= REQUESTS - 2 * KINDS, affinity.toString());
  }
}
