package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import okio.BufferedSource;
import org.junit.jupiter.api.Test;

/** Runs the code of {@code transport-okhttp/README.md} against a simulated worker, so that it stays true. */
class ReadmeExampleTest {
  private final StringBuilder relayed = new StringBuilder();

  private void relay(int status, BufferedSource body) throws IOException {
    relayed.append(status).append(' ').append(body.readUtf8());
  }

  @Test
  void readmeExampleRuns() throws Exception {
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("qwen3").build())
        .kvEvents(false).speedup(50).build()) {
      URI workerUri = sim.baseUri();
      byte[] requestBody = ("{\"model\":\"qwen3\",\"stream\":true,\"max_tokens\":3,"
          + "\"messages\":[{\"role\":\"user\",\"content\":\"Hello there\"}]}").getBytes(StandardCharsets.UTF_8);

      // --- README ---
      Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).build();
      router.addWorker(Worker.of(WorkerId.of("vllm-0"), workerUri));
      // (kvroute-events-zmq feeds router.eventSink() with the engines' KV events)

      try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).build()) {
        scraper.start();                                   // GET /metrics -> router.updateLoad, every second

        RoutingForwarder forwarder = RoutingForwarder.newBuilder(router)
            .tokenizer(OkHttpTokenizer.newBuilder().router(router).build())  // POST /tokenize, healthy workers
            .build();
        try (ForwardedResponse upstream = forwarder.forward(
            ForwardRequest.newBuilder("/v1/chat/completions", requestBody).build())) {
          relay(upstream.code(), upstream.body().source()); // firstToken() and close() follow the stream
        }
      }
      // --- end ---

      assertTrue(relayed.toString().startsWith("200 data: "), relayed.toString());
      assertTrue(relayed.toString().endsWith("data: [DONE]\n\n"), relayed.toString());
      assertEquals(0, router.activeRequests(WorkerId.of("vllm-0")));
    }
  }
}
