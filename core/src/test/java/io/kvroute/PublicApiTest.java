package io.kvroute;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code core/api/kvroute-core.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-core",
        List.of("java.", "io.kvroute.", "it.unimi.dsi.fastutil.", "net.openhft.hashing.", "org.jspecify.annotations."),
        List.of("io.kvroute.events.", "io.kvroute.transport.", "io.kvroute.sim."),
        "core depends only on fastutil-core and zero-allocation-hashing");
  }
}
