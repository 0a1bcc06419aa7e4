package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.transport.okhttp.FallbackTokenizer;
import io.kvroute.transport.okhttp.ForwardRequest;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import io.kvroute.transport.okhttp.RoutingForwarder;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import okio.BufferedSource;
import org.junit.jupiter.api.Test;

/** Keeps the root README's gateway quickstart true: the block between the markers is pasted into README.md. */
class ReadmeGatewayTest {
  private final StringBuilder relayed = new StringBuilder();

  private void relay(int status, BufferedSource body) throws IOException {
    relayed.append(status).append(' ').append(body.readUtf8());
  }

  @Test
  void gatewayQuickstartRunsOnASimulatedWorker() throws Exception {
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("qwen3").build())
        .kvEvents(false).speedup(100).build()) {
      FallbackTokenizer tokenizer = gateway(sim.baseUri(), TestModels.dir(TestModels.QWEN3),
          ("{\"model\":\"qwen3\",\"stream\":true,\"max_tokens\":3,\"messages\":[{\"role\":\"user\","
              + "\"content\":\"Hello there\"}]}").getBytes(StandardCharsets.UTF_8));
      assertTrue(relayed.toString().startsWith("200 data: "), relayed.toString());
      assertTrue(relayed.toString().endsWith("data: [DONE]\n\n"), relayed.toString());
      assertEquals(0, tokenizer.fallbackCount(), "tokenized in the gateway, not on the worker");
    }
  }

  @Test
  void readmeShowsExactlyThisCode() throws IOException {
    String source = Files.readString(Path.of("src/test/java/io/kvroute/tokenizers/ReadmeGatewayTest.java"));
    String block = source.split("// README-GATEWAY-BEGIN\n")[1].split("    // README-GATEWAY-END")[0];
    String sample = block.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    String readme = Files.readString(Path.of("../README.md"));
    assertTrue(readme.contains("```java\n" + sample + "\n```"), "README.md's gateway quickstart differs from this "
        + "test's code:\n" + sample);
  }

  private FallbackTokenizer gateway(URI workerUri, Path modelDir, byte[] requestBody) throws IOException {
    // README-GATEWAY-BEGIN
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).build();
    router.addWorker(Worker.of(WorkerId.of("vllm-0"), workerUri));

    // Tokenize in the gateway, with the files vLLM serves the model from (kvroute-tokenizers):
    HfTokenizer local = HfTokenizer.load(modelDir);   // tokenizer.json + tokenizer_config.json (chat template)
    // Ask a worker's /tokenize only for what the gateway cannot count (image parts, a request's own template):
    FallbackTokenizer tokenizer = FallbackTokenizer.of(local,
        OkHttpTokenizer.newBuilder().workers(router.workers()).build());

    RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).tokenizer(tokenizer).build();
    try (ForwardedResponse upstream = forwarder.forward(
        ForwardRequest.newBuilder("/v1/chat/completions", requestBody).build())) {
      relay(upstream.code(), upstream.body().source()); // firstToken() and close() follow the stream
    }
    // README-GATEWAY-END
    return tokenizer;
  }
}
