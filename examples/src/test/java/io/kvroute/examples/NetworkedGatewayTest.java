package io.kvroute.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.RouterPolicy;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Real HTTP and real ZeroMQ on loopback: three simulated servers behind the KV-aware router. */
class NetworkedGatewayTest {
  @Test
  void kvAwareRoutingOverTheNetworkFindsTheEnginesCaches() throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    NetworkedGateway.Summary s = NetworkedGateway.run(RouterPolicy.kvAware(), 3, 3, 30, 3, 50,
        new PrintStream(log, true, StandardCharsets.UTF_8));
    assertEquals(30, s.requests());
    assertTrue(log.toString(StandardCharsets.UTF_8).contains("KV events tcp://127.0.0.1:"));
    assertTrue(s.hitRate() >= 0.6, "hit rate " + s.hitRate());
    assertTrue(s.predictedTokens() > 0, "the router learned the caches from the engines' ZeroMQ events");
    assertTrue(s.cachedRatio() > 0.4, "cached ratio " + s.cachedRatio());
  }
}
