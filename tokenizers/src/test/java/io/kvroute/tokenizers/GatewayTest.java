package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.transport.okhttp.FallbackTokenizer;
import io.kvroute.transport.okhttp.ForwardRequest;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import io.kvroute.transport.okhttp.RoutingForwarder;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * A gateway on real HTTP: the forwarder tokenizes locally by default, and the engine's {@code /tokenize} (a
 * simulated vLLM worker on loopback) is asked only for what the local tokenizer cannot do.
 */
class GatewayTest {
  private static final String MODEL = "qwen3";

  @Test
  void forwardsWithLocalTokensAndFallsBackOnlyWhenAsked() throws Exception {
    Router router = Router.newBuilder().build();
    WorkerId id = WorkerId.of("w0");
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .kvEvents(false).speedup(1000).build()) {
      router.addWorker(Worker.newBuilder(id).endpoint(Worker.HTTP, sim.baseUri()).model(MODEL).build());
      HfTokenizer local = TestModels.shared(TestModels.QWEN3);
      OkHttpTokenizer remote = OkHttpTokenizer.newBuilder().workers(router.workers()).build();
      FallbackTokenizer tokenizer = FallbackTokenizer.of(local, remote);
      RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).tokenizer(tokenizer).build();

      byte[] chat = ("{\"model\":\"qwen3\",\"max_tokens\":2,\"messages\":[{\"role\":\"system\",\"content\":"
          + "\"You are terse.\"},{\"role\":\"user\",\"content\":\"Say hi\"}]}").getBytes(StandardCharsets.UTF_8);
      try (ForwardedResponse response = forwarder.forward(ForwardRequest.newBuilder("/v1/chat/completions", chat)
          .build())) {
        assertEquals(200, response.code());
        assertEquals(id, response.workerId());
        assertTrue(response.body().string().contains("chat.completion"));
      }
      assertEquals(0, tokenizer.fallbackCount(), "the local tokenizer answered");

      // a request-level chat_template is the engine's to render: only then is /tokenize asked
      byte[] own = ("{\"model\":\"qwen3\",\"chat_template\":\"{{ messages[0].content }}\",\"messages\":"
          + "[{\"role\":\"user\",\"content\":\"w1 w2 w3\"}]}").getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(remote.tokenizeRequest(own), tokenizer.tokenizeRequest(own));
      assertEquals(1, tokenizer.fallbackCount());
    }
  }
}
