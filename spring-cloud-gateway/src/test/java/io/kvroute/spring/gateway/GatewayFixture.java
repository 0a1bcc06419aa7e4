package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.spring.gateway.example.ExampleGatewayApplication;
import io.kvroute.testkit.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Simulated vLLM workers on loopback (real HTTP, real ZeroMQ KV events) and the example Spring Cloud Gateway
 * application in front of them on a random port; not thread-safe (one per test class).
 */
final class GatewayFixture implements AutoCloseable {
  static final String MODEL = "kvroute-sim";

  final List<SimServer> sims = new ArrayList<>();
  final ConfigurableApplicationContext app;
  final URI base;
  final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** A meter registry, as an application with Micrometer has. */
  @Configuration(proxyBeanMethods = false)
  static class Meters {
    @Bean
    SimpleMeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  private GatewayFixture(int workers, SimEngineConfig engine, double speedup, List<Class<?>> sources,
      String... extraArgs) throws IOException {
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--spring.main.banner-mode=off",
        "--logging.level.root=WARN", "--kvroute.headers.enabled=true", "--kvroute.metrics.interval=200ms"));
    try {
      for (int i = 0; i < workers; i++) {
        SimServer sim = SimServer.newBuilder().engine(engine).speedup(speedup).build();
        sims.add(sim);
        args.add("--kvroute.workers[" + i + "].id=sim-" + i);
        args.add("--kvroute.workers[" + i + "].url=" + sim.baseUri());
        args.add("--kvroute.workers[" + i + "].events=" + sim.kvEventsEndpoint());
        args.add("--kvroute.workers[" + i + "].replay=" + sim.kvEventsReplayEndpoint());
        args.add("--kvroute.workers[" + i + "].topic=kv-events");
        args.add("--kvroute.workers[" + i + "].model=" + MODEL);
      }
      args.addAll(List.of(extraArgs));
      List<Class<?>> all = new ArrayList<>(List.of(ExampleGatewayApplication.class, Meters.class));
      all.addAll(sources);
      this.app = new SpringApplicationBuilder(all.toArray(new Class<?>[0])).run(args.toArray(new String[0]));
    } catch (RuntimeException | IOException e) {
      sims.forEach(SimServer::close);
      throw e;
    }
    this.base = URI.create("http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port"));
    for (SimServer sim : sims) {
      if (!sim.kvEventPublisher().awaitSubscribers(1, Duration.ofSeconds(10))) {
        close();
        fail("the gateway's event subscriber did not connect to " + sim.kvEventsEndpoint());
      }
    }
  }

  static GatewayFixture start(int workers, SimEngineConfig engine, double speedup, List<Class<?>> sources,
      String... extraArgs) throws IOException {
    return new GatewayFixture(workers, engine, speedup, sources, extraArgs);
  }

  Router router() {
    return app.getBean(Router.class);
  }

  SimpleMeterRegistry meters() {
    return app.getBean(SimpleMeterRegistry.class);
  }

  int totalActiveRequests() {
    int sum = 0;
    for (Worker w : router().workers().snapshot()) {
      sum += router().activeRequests(w.id());
    }
    return sum;
  }

  HttpRequest.Builder request(String path, String json) {
    return HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
  }

  HttpResponse<String> post(String path, String json) throws IOException, InterruptedException {
    return client.send(request(path, json).build(), HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<InputStream> stream(String path, String json) throws IOException, InterruptedException {
    return client.send(request(path, json).build(), HttpResponse.BodyHandlers.ofInputStream());
  }

  static String completion(String prompt, int maxTokens, boolean stream) {
    return "{\"model\":\"" + MODEL + "\",\"prompt\":" + JsonMapper.shared().writeValueAsString(prompt)
        + ",\"max_tokens\":" + maxTokens + ",\"stream\":" + stream
        + (stream ? ",\"stream_options\":{\"include_usage\":true}" : "") + "}";
  }

  static String chat(String content, int maxTokens, boolean stream) {
    return "{\"model\":\"" + MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":"
        + JsonMapper.shared().writeValueAsString(content) + "}],\"max_tokens\":" + maxTokens + ",\"stream\":"
        + stream + (stream ? ",\"stream_options\":{\"include_usage\":true}" : "") + "}";
  }

  static JsonNode json(String body) {
    return JsonMapper.shared().readTree(body);
  }

  static void await(BooleanSupplier condition, Duration timeout, String what) throws InterruptedException {
    Await.until(timeout, condition, () -> what);
  }

  @Override
  public void close() {
    if (app != null) {
      app.close();
    }
    sims.forEach(SimServer::close);
  }
}
