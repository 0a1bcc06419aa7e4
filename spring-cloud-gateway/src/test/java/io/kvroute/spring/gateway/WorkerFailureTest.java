package io.kvroute.spring.gateway;

import static io.kvroute.spring.gateway.GatewayFixture.await;
import static io.kvroute.spring.gateway.GatewayFixture.completion;
import static io.kvroute.spring.gateway.GatewayFixture.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.HealthState;
import io.kvroute.PrefixMatch;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import io.micrometer.core.instrument.Counter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A worker stopped mid-run behind the example gateway (two simulated workers): its in-flight stream ends and its
 * booking is released, the next requests fail over to the other worker, the router ejects it after
 * {@code kvroute.health.eject-after-failures} failures so that later requests no longer try it, and with every
 * worker gone the client gets a typed error. Tokenization is local (the engines' own tokenizer in-process), so that
 * a dead engine's {@code /tokenize} does not stand between the requests and the router.
 */
class WorkerFailureTest {
  private GatewayFixture gw;

  @AfterEach
  void stop() {
    if (gw != null) {
      gw.close();
    }
  }

  private static String words(String stem, int count) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < count; i++) {
      sb.append(i == 0 ? "" : " ").append(stem).append(i);
    }
    return sb.toString();
  }

  private static boolean refusesConnections(SimServer sim) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", sim.port()), 1000);
      return false;
    } catch (IOException e) {
      return true;
    }
  }

  private double failovers(String worker) {
    Counter c = gw.meters().find("kvroute.gateway.failovers").tag("worker", worker).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void aWorkerStoppedMidRunIsFailedOverThenEjectedAndTheLastOneGoneIsATypedError() throws Exception {
    // A long ejection backoff: no half-open probe of the dead worker within the test.
    gw = GatewayFixture.start(2, SimEngineConfig.DEFAULT, 1.0, List.of(SimLocalTokenizer.Config.class),
        "--kvroute.health.eject-after-failures=3", "--kvroute.health.initial-backoff=60s",
        "--kvroute.health.max-backoff=60s");
    String prefix = words("sharedw", 256);
    HttpResponse<String> first = gw.post("/v1/completions", completion(prefix + " " + words("firstw", 8), 2, false));
    assertEquals(200, first.statusCode(), first.body());
    String home = first.headers().firstValue("X-KvRoute-Worker").orElseThrow();
    String other = home.equals("sim-0") ? "sim-1" : "sim-0";
    SimServer homeSim = gw.sims.get(home.equals("sim-0") ? 0 : 1);
    long[] hashes = BlockHasher.of(16).sequenceHashes(SimTokenizer.standard().encode(prefix));
    await(() -> {
      PrefixMatch m = gw.router().indexer().findMatches(hashes).get(WorkerId.of(home));
      return m != null && m.blocks() == hashes.length;
    }, Duration.ofSeconds(10), "the prefix indexed on " + home);

    // A long stream on the prefix's home, cut by the worker's death.
    HttpResponse<InputStream> stream = gw.stream("/v1/completions",
        completion(prefix + " " + words("streamw", 8), 3000, true));
    assertEquals(200, stream.statusCode());
    assertEquals(home, stream.headers().firstValue("X-KvRoute-Worker").orElseThrow(), "the prefix's home streams");
    boolean finished = false;
    int events = 0;
    try (BufferedReader in = new BufferedReader(new InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
      String line;
      do {
        line = in.readLine();
        assertNotNull(line);
      } while (!line.startsWith("data: "));
      assertEquals(1, gw.router().activeRequests(WorkerId.of(home)));
      homeSim.close();
      try {
        for (line = in.readLine(); line != null; line = in.readLine()) {
          events += line.startsWith("data: {") ? 1 : 0;
          finished |= line.contains("\"finish_reason\":\"length\"") || line.contains("\"usage\":{");
        }
      } catch (IOException expected) {
        // the gateway reset the client's connection: the upstream was cut mid-stream
      }
    }
    // The sim aborts its requests on shutdown (ending the stream early, or the connection is cut): either way the
    // client never sees the completion's end or its usage.
    assertFalse(finished, "a stream cut by the worker's death must not look complete");
    assertTrue(events < 3000, "the stream stopped early, after " + events + " events");
    await(() -> gw.router().activeRequests(WorkerId.of(home)) == 0, Duration.ofSeconds(10),
        "the cut stream's booking released");
    await(() -> refusesConnections(homeSim), Duration.ofSeconds(5), "the stopped worker refusing connections");

    // The index still says the dead worker holds the prefix: a request that chooses it fails over to the other
    // one. The router then avoids it: ejected after eject-after-failures failures, or passed over by the policy once
    // the live worker holds the prefix too. Either way the fail-overs stop.
    int requests = 0;
    int quiet = 0;
    while (quiet < 10) {
      assertTrue(requests < 40, "fail-overs stop within 40 requests; " + failovers(home) + " so far");
      double before = failovers(home);
      HttpResponse<String> r = gw.post("/v1/completions", completion(prefix + " " + words("after" + requests + "w",
          8), 2, false));
      requests++;
      assertEquals(200, r.statusCode(), r.body());
      assertEquals(other, r.headers().firstValue("X-KvRoute-Worker").orElseThrow(), "served by the live worker");
      quiet = failovers(home) == before ? quiet + 1 : 0;
    }
    double failed = failovers(home);
    assertTrue(failed >= 1 && failed <= 3, "the dead worker was tried, at most eject-after-failures times: "
        + failed);
    assertNotEquals(HealthState.HEALTHY, gw.router().health(WorkerId.of(home)));

    // The last worker gone: a typed error, nothing left booked. If the dead worker is ejected, no worker may be
    // tried (503 all_unhealthy); if it is only suspect, both refuse the connection (502 upstream_unavailable).
    gw.sims.get(other.equals("sim-0") ? 0 : 1).close();
    boolean ejected = gw.router().health(WorkerId.of(home)) == HealthState.EJECTED;
    HttpResponse<String> r = gw.post("/v1/completions", completion(prefix, 2, false));
    assertEquals(ejected ? 503 : 502, r.statusCode(), r.body());
    JsonNode error = json(r.body()).get("error");
    assertEquals(ejected ? "all_unhealthy" : "upstream_unavailable", error.get("code").asString(), r.body());
    assertEquals("server_error", error.get("type").asString());
    assertTrue(r.headers().firstValue("X-KvRoute-Worker").isEmpty(), "no worker served the error");
    assertEquals(0, gw.totalActiveRequests());
  }
}
