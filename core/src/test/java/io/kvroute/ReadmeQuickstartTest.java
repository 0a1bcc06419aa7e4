package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import org.junit.jupiter.api.Test;

/** Keeps the README's quickstart true: the block between the markers is pasted verbatim into README.md. */
class ReadmeQuickstartTest {
  @Test
  void quickstartCompilesAndRoutesToTheCachedWorker() {
    int[] promptTokens = Fixtures.prompt(1, 600);
    KvEvent.BlockStored engineEvent = Fixtures.storedFor(promptTokens, 16, 7);
    String chosen;
    // README-QUICKSTART-BEGIN
    Router router = Router.newBuilder()
        .blockSize(16)                        // the engines' KV block size
        .policy(RouterPolicy.kvAware())       // Dynamo's cost function and defaults
        .build();
    router.addWorker(Worker.of(WorkerId.of("vllm-0"), URI.create("http://10.0.0.10:8000")));
    router.addWorker(Worker.of(WorkerId.of("vllm-1"), URI.create("http://10.0.0.11:8000")));

    // Event sources (kvroute-events-zmq, or your own) feed what each engine caches:
    router.eventSink().apply(WorkerId.of("vllm-1"), engineEvent);

    try (Routing routing = router.select(promptTokens)) {
      URI target = routing.worker().endpoint(Worker.HTTP);   // forward the request here
      // ... on the first streamed token:  routing.firstToken();
      // closing the handle (try-with-resources) releases the booked load
      chosen = routing.workerId().name() + " " + target + " " + routing.predictedCachedTokens();
    }
    // README-QUICKSTART-END
    assertEquals("vllm-1 http://10.0.0.11:8000 592", chosen);
  }
}
