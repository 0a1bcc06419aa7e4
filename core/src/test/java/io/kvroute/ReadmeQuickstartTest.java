package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
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
    String source = Files.readString(Path.of("src/test/java/io/kvroute/ReadmeQuickstartTest.java"));
    String block = source.split("// README-QUICKSTART-BEGIN\n")[1].split("    // README-QUICKSTART-END")[0];
    String sample = block.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    String readme = Files.readString(Path.of("../README.md"));
    assertTrue(readme.contains("```java\n" + sample + "\n```"), "README.md's quickstart differs from this test's code");
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
