package io.kvroute.sim;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code sim/api/kvroute-sim.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-sim",
        List.of("java.", "io.kvroute.", "com.sun.net.httpserver.", "net.openhft.hashing.", "org.jspecify.annotations."),
        List.of("io.kvroute.transport."),
        "sim depends only on kvroute-core, kvroute-openai-wire, kvroute-events-zmq and the JDK's HttpServer");
  }
}
