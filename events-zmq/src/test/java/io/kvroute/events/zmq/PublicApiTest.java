package io.kvroute.events.zmq;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code events-zmq/api/kvroute-events-zmq.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-events-zmq",
        List.of("java.", "io.kvroute.", "org.zeromq.", "net.openhft.hashing.", "org.jspecify.annotations."),
        List.of("io.kvroute.sim.", "io.kvroute.transport.", "io.kvroute.openai."),
        "events-zmq depends only on kvroute-core, JeroMQ and zero-allocation-hashing");
  }
}
