package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.doccheck.ReadmeSnippets;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Keeps the README's quickstart true: the block between the markers is pasted verbatim into README.md. */
class ReadmeQuickstartTest {
  @Test
  void quickstartCompilesAndRoutesToTheCachedWorker() {
    int[] promptTokens = Fixtures.prompt(1, 600);
    assertEquals(URI.create("http://10.0.0.11:8000"), quickstart(promptTokens, Fixtures.storedFor(promptTokens, 16,
        7)));
  }

  @Test
  void readmeShowsExactlyThisCode() throws IOException {
    String sample = ReadmeSnippets.marked(Path.of("src/test/java/io/kvroute/ReadmeQuickstartTest.java"),
        "README-QUICKSTART");
    assertTrue(ReadmeSnippets.shows(Path.of("../README.md"), sample),
        "README.md's quickstart differs from this test's code");
  }

  private static URI quickstart(int[] promptTokens, KvEvent engineEvent) {
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
      // Forward the request to this worker; call routing.firstToken() on the first streamed token.
      // Closing the handle (here by try-with-resources) releases the load booked for the request.
      return routing.worker().endpoint(Worker.HTTP);
    }
    // README-QUICKSTART-END
  }
}
