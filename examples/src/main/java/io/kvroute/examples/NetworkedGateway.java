package io.kvroute.examples;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The whole networked path on one machine: simulated vLLM servers on loopback publishing KV events over ZeroMQ, a
 * {@link KvEventSubscriber} feeding a {@link Router}, and a tiny gateway that tokenizes each prompt, asks the router
 * for a worker, streams the completion from that worker over HTTP, and reports the cache hits the engines return in
 * {@code usage.prompt_tokens_details.cached_tokens}; not thread-safe (a command-line program).
 *
 * <pre>{@code
 * java -cp examples/target/kvroute-examples.jar io.kvroute.examples.NetworkedGateway [--policy kvAware]
 *     [--workers 3] [--kinds 6] [--requests 120] [--concurrency 4] [--speedup 20]
 * }</pre>
 */
public final class NetworkedGateway {
  private static final Pattern CACHED = Pattern.compile("\"cached_tokens\":(\\d+)");
  private static final Pattern PROMPT = Pattern.compile("\"prompt_tokens\":(\\d+)");

  private NetworkedGateway() {}

  /** The outcome of a run. */
  record Summary(int requests, int hits, long promptTokens, long cachedTokens, long predictedTokens) {
    double hitRate() {
      return requests == 0 ? 0 : (double) hits / requests;
    }

    double cachedRatio() {
      return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
    }
  }

  public static void main(String[] args) throws Exception {
    String policy = "kvAware";
    int workers = 3;
    int kinds = 6;
    int requests = 120;
    int concurrency = 4;
    double speedup = 20;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--policy" -> policy = args[i + 1];
        case "--workers" -> workers = Integer.parseInt(args[i + 1]);
        case "--kinds" -> kinds = Integer.parseInt(args[i + 1]);
        case "--requests" -> requests = Integer.parseInt(args[i + 1]);
        case "--concurrency" -> concurrency = Integer.parseInt(args[i + 1]);
        case "--speedup" -> speedup = Double.parseDouble(args[i + 1]);
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    if (!ArticleExperiment.POLICIES.containsKey(policy)) {
      throw new IllegalArgumentException("unknown policy " + policy + "; known: "
          + ArticleExperiment.POLICIES.keySet());
    }
    Summary s = run(ArticleExperiment.POLICIES.get(policy).get(), workers, kinds, requests, concurrency, speedup,
        System.out);
    System.out.printf(Locale.ROOT, "%s: %d requests, hit rate %.1f%%, cached-token ratio %.3f (router predicted %.3f)%n",
        policy, s.requests(), 100 * s.hitRate(), s.cachedRatio(), (double) s.predictedTokens() / s.promptTokens());
  }

  /**
   * Starts {@code workers} simulated servers (the article's 585-block caches, shorter prompts: a 512-token prefix
   * and a 96-token tail, 16-token outputs), routes {@code requests} streamed completions through {@code policy}
   * with {@code concurrency} client threads, and returns what the engines reported.
   */
  static Summary run(RouterPolicy policy, int workers, int kinds, int requests, int concurrency, double speedup,
      PrintStream log) throws Exception {
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(150).build();
    SharedPrefixWorkload workload = SharedPrefixWorkload.newBuilder()
        .prefixKinds(kinds).prefixTokens(512).tailTokens(96).outputTokens(16).seed(1).build();
    List<SimServer> servers = new ArrayList<>();
    Router router = Router.newBuilder().policy(policy).randomSeed(1).build();
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    ExecutorService clients = Executors.newFixedThreadPool(concurrency);
    try (KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).build()) {
      for (int w = 0; w < workers; w++) {
        SimServer server = SimServer.newBuilder().engine(engine).speedup(speedup).build();
        servers.add(server);
        WorkerId id = WorkerId.of("sim-" + w);
        router.addWorker(Worker.of(id, server.baseUri()));
        subscriber.addWorker(id, server.kvEventsEndpoint(), server.kvEventsReplayEndpoint(), "kv-events", 1);
        log.println("worker " + id + ": " + server.baseUri() + ", KV events " + server.kvEventsEndpoint());
      }
      subscriber.start();
      for (SimServer server : servers) {
        server.kvEventPublisher().awaitSubscribers(1, Duration.ofSeconds(10));
      }
      AtomicInteger next = new AtomicInteger();
      AtomicInteger hits = new AtomicInteger();
      AtomicLong prompt = new AtomicLong();
      AtomicLong cached = new AtomicLong();
      AtomicLong predicted = new AtomicLong();
      List<Future<?>> futures = new ArrayList<>();
      for (int c = 0; c < concurrency; c++) {
        futures.add(clients.submit(() -> {
          for (int i = next.getAndIncrement(); i < requests; i = next.getAndIncrement()) {
            String text = workload.promptText(i);
            int[] tokens = SimTokenizer.standard().encode(text);
            try (Routing routing = router.select(tokens)) {
              long cachedTokens = streamCompletion(client, routing, text, workload.outputTokens());
              prompt.addAndGet(tokens.length);
              cached.addAndGet(cachedTokens);
              predicted.addAndGet(routing.predictedCachedTokens());
              if (cachedTokens > 0) {
                hits.incrementAndGet();
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
      return new Summary(requests, hits.get(), prompt.get(), cached.get(), predicted.get());
    } finally {
      clients.shutdownNow();
      servers.forEach(SimServer::close);
    }
  }

  /** Streams one completion from the routed worker; marks the first token; returns the engine's cached tokens. */
  private static long streamCompletion(HttpClient client, Routing routing, String prompt, int maxTokens) {
    URI uri = routing.worker().endpoint(Worker.HTTP).resolve("/v1/completions");
    String body = "{\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens
        + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
    try {
      HttpResponse<InputStream> response = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
      try (BufferedReader reader = new BufferedReader(new InputStreamReader(response.body(),
          StandardCharsets.UTF_8))) {
        if (response.statusCode() != 200) {
          throw new IOException("HTTP " + response.statusCode() + " from " + uri + ": " + reader.readLine());
        }
        long cachedTokens = -1;
        boolean first = true;
        for (String line = reader.readLine(); line != null; line = reader.readLine()) {
          if (!line.startsWith("data: ")) {
            continue;
          }
          if (first) {
            routing.firstToken();
            first = false;
          }
          Matcher m = CACHED.matcher(line);
          if (m.find() && PROMPT.matcher(line).find()) {
            cachedTokens = Long.parseLong(m.group(1));
          }
        }
        if (cachedTokens < 0) {
          throw new IOException("no usage chunk from " + uri);
        }
        return cachedTokens;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
