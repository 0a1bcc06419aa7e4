package io.kvroute.spring.gateway;

import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.TimingModel;
import io.kvroute.spring.gateway.example.ExampleGatewayApplication;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Measures the latency the {@code KvRoute} filter adds per request: one gateway, two routes to the same simulated
 * worker (its engine takes no time, so the gateway's share is what is measured), one plain and one through
 * kvroute, requests alternating between them from one client; prints the median and p99 of each and their
 * difference. A measurement, not a test; run it on a quiet machine:
 *
 * <pre>{@code
 * mvn -B -q -pl spring-cloud-gateway -am -DskipTests package dependency:build-classpath \
 *     -Dmdep.outputFile=target/cp.txt
 * cd spring-cloud-gateway
 * java -cp "target/test-classes:target/classes:$(cat target/cp.txt)" io.kvroute.spring.gateway.GatewayOverhead \
 *     [requests per route, default 2000] [prompt words, default 1000]
 * }</pre>
 */
public final class GatewayOverhead {
  private GatewayOverhead() {}

  /**
   * Runs the measurement with local tokenization, then with the engine's {@code /tokenize}.
   *
   * @param args the measured requests per route (default 2000) and the prompt's length in words (default 1000)
   * @throws Exception if the gateway or the worker fails
   */
  public static void main(String[] args) throws Exception {
    int requests = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
    int words = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
    SimEngineConfig engine = SimEngineConfig.newBuilder().timing(TimingModel.ZERO).numBlocks(4096).build();
    try (SimServer sim = SimServer.newBuilder().engine(engine).build()) {
      measure(sim, requests, words, true);
      measure(sim, requests, words, false);
    }
  }

  private static void measure(SimServer sim, int requests, int words, boolean local) throws Exception {
    String r = "--spring.cloud.gateway.server.webflux.routes";
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off",
        "--logging.level.root=WARN", "--kvroute.metrics.interval=1s",
        r + "[0].id=plain", r + "[0].uri=" + sim.baseUri(), r + "[0].order=-1",
        r + "[0].predicates[0]=Header=X-Baseline, true",
        r + "[1].id=llm", r + "[1].uri=no://op", r + "[1].predicates[0]=Path=/v1/completions",
        r + "[1].filters[0]=KvRoute",
        "--kvroute.workers[0].id=sim-0", "--kvroute.workers[0].url=" + sim.baseUri(),
        "--kvroute.workers[0].events=" + sim.kvEventsEndpoint(), "--kvroute.workers[0].topic=kv-events"));
    List<Class<?>> sources = new ArrayList<>(List.of(ExampleGatewayApplication.class, GatewayFixture.Meters.class));
    if (local) {
      sources.add(SimLocalTokenizer.Config.class);
    }
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(sources.toArray(new Class<?>[0]))
        .run(args.toArray(new String[0]))) {
      URI uri = URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port")
          + "/v1/completions");
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      StringBuilder prefix = new StringBuilder();
      for (int i = 0; i < words; i++) {
        prefix.append(i == 0 ? "" : " ").append("shared").append(i);
      }
      int warmup = Math.max(200, requests / 4);
      long[] plain = new long[requests];
      long[] routed = new long[requests];
      for (int i = -warmup; i < requests; i++) {
        String body = GatewayFixture.completion(prefix + " tail" + i + " end", 1, false)
            .replace("\"model\":\"" + GatewayFixture.MODEL + "\",", "");
        boolean plainFirst = (i & 1) == 0; // alternate the order so neither route always runs on a warmer path
        long a = time(client, uri, body, plainFirst);
        long b = time(client, uri, body, !plainFirst);
        if (i >= 0) {
          plain[i] = plainFirst ? a : b;
          routed[i] = plainFirst ? b : a;
        }
      }
      Arrays.sort(plain);
      Arrays.sort(routed);
      System.out.printf(Locale.ROOT, "%s tokenization, %d-word prompts, %d requests per route:%n",
          local ? "local (in-process)" : "engine /tokenize", words, requests);
      System.out.printf(Locale.ROOT, "  plain route  median %7.3f ms  p99 %7.3f ms%n", ms(plain, 0.5),
          ms(plain, 0.99));
      System.out.printf(Locale.ROOT, "  KvRoute      median %7.3f ms  p99 %7.3f ms%n", ms(routed, 0.5),
          ms(routed, 0.99));
      System.out.printf(Locale.ROOT, "  added        median %7.3f ms  p99 %7.3f ms%n",
          ms(routed, 0.5) - ms(plain, 0.5), ms(routed, 0.99) - ms(plain, 0.99));
      var timer = app.getBean(io.micrometer.core.instrument.simple.SimpleMeterRegistry.class)
          .get(KvRouteMeters.ROUTING_DURATION).timer();
      System.out.printf(Locale.ROOT, "  filter's own share (body, tokenize, select): mean %7.3f ms, max %7.3f ms%n",
          timer.mean(java.util.concurrent.TimeUnit.MILLISECONDS), timer.max(java.util.concurrent.TimeUnit.MILLISECONDS));
    }
  }

  private static long time(HttpClient client, URI uri, String body, boolean plain) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    if (plain) {
      b.header("X-Baseline", "true");
    }
    long start = System.nanoTime();
    HttpResponse<String> response = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    long nanos = System.nanoTime() - start;
    if (response.statusCode() != 200) {
      throw new IllegalStateException("HTTP " + response.statusCode() + ": " + response.body());
    }
    return nanos;
  }

  private static double ms(long[] sorted, double quantile) {
    int index = (int) Math.ceil(quantile * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
  }
}
