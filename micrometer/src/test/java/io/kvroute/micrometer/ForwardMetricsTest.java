package io.kvroute.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.NoWorkerAvailableException;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.transport.okhttp.ForwardRequest;
import io.kvroute.transport.okhttp.ForwardedResponse;
import io.kvroute.transport.okhttp.ResponseRelay;
import io.kvroute.transport.okhttp.RoutingForwarder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Real forwards to a simulated vLLM, relayed to a byte stream, measured. */
class ForwardMetricsTest {
  @Test
  void relayedResponsesAndFailuresAreCounted() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    ForwardMetrics metrics = new ForwardMetrics();
    metrics.bindTo(registry);
    Router router = Router.newBuilder().build();
    RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).speedup(50).build()) {
      router.addWorker(Worker.newBuilder(WorkerId.of("w")).endpoint(Worker.HTTP, sim.baseUri()).model("m").build());
      long bytes = 0;
      for (int i = 0; i < 3; i++) {
        byte[] body = ("{\"model\":\"m\",\"prompt\":[1,2,3," + i + "],\"max_tokens\":2,\"stream\":" + (i % 2 == 0)
            + "}").getBytes(StandardCharsets.UTF_8);
        ForwardedResponse upstream = forwarder.forward(ForwardRequest.newBuilder("/v1/completions", body)
            .tokens(new int[] {1, 2, 3, i}).build());
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        metrics.relayed(upstream, ResponseRelay.relay(upstream, out));
        bytes += out.size();
      }
      assertEquals(3, registry.get(ForwardMetrics.RESPONSES).tags("worker", "w", "status", "2xx", "outcome",
          "completed").counter().count(), 0.0);
      assertEquals(bytes, registry.get(ForwardMetrics.RESPONSE_BYTES).summary().totalAmount(), 0.0);
      NoWorkerAvailableException none = assertThrows(NoWorkerAvailableException.class, () -> forwarder.forward(
          ForwardRequest.newBuilder("/v1/completions", new byte[] {'{', '}'}).tokens(new int[] {1}).model("other")
              .build()));
      metrics.failed(none);
      assertEquals(1, registry.get(ForwardMetrics.FAILURES).tags("cause",
          none.reason().name().toLowerCase(java.util.Locale.ROOT)).counter().count(), 0.0);
    }
  }

  @Test
  void workersThatComeAndGoLeaveNoForwardMetersBehind() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Router router = Router.newBuilder().build();
    ForwardMetrics metrics = new ForwardMetrics().follow(router.workers());
    metrics.bindTo(registry);
    RoutingForwarder forwarder = RoutingForwarder.newBuilder(router).build();
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).speedup(50).build()) {
      for (int i = 0; i < 5; i++) {
        WorkerId pod = WorkerId.of("pod-" + i);
        router.addWorker(Worker.newBuilder(pod).endpoint(Worker.HTTP, sim.baseUri()).model("m").build());
        ForwardedResponse done = forwarder.forward(request(i));
        metrics.relayed(done, ResponseRelay.relay(done, new ByteArrayOutputStream()));
        assertEquals(1, registry.get(ForwardMetrics.RESPONSES).tags("worker", pod.name()).counter().count(), 0.0);
        ForwardedResponse late = forwarder.forward(request(100 + i));
        router.removeWorker(pod);
        metrics.relayed(late, ResponseRelay.relay(late, new ByteArrayOutputStream())); // relayed after it left
      }
      for (var meter : registry.getMeters()) {
        assertNull(meter.getId().getTag("worker"), () -> "a meter of a departed worker: " + meter.getId());
      }
      assertThrows(IllegalStateException.class, () -> metrics.follow(router.workers()));
    }
  }

  private static ForwardRequest request(int i) {
    byte[] body = ("{\"model\":\"m\",\"prompt\":[1,2,3," + i + "],\"max_tokens\":2}")
        .getBytes(StandardCharsets.UTF_8);
    return ForwardRequest.newBuilder("/v1/completions", body).tokens(new int[] {1, 2, 3, i}).build();
  }
}
