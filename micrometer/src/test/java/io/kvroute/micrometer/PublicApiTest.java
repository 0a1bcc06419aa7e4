package io.kvroute.micrometer;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code micrometer/api/kvroute-micrometer.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-micrometer",
        List.of("java.", "io.kvroute.", "io.micrometer.core.", "org.jspecify.annotations."),
        List.of("io.kvroute.sim."),
        "kvroute-micrometer depends on kvroute modules and micrometer-core only");
  }
}
