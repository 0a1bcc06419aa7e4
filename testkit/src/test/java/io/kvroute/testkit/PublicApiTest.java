package io.kvroute.testkit;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code testkit/api/kvroute-testkit.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-testkit",
        List.of("java.", "io.kvroute.", "org.junit.jupiter.", "org.jspecify.annotations."),
        List.of("io.kvroute.events.", "io.kvroute.transport.", "io.kvroute.sim."),
        "testkit depends only on kvroute-core and the JUnit 5 API");
  }
}
