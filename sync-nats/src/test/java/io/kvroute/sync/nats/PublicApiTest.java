package io.kvroute.sync.nats;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code sync-nats/api/kvroute-sync-nats.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-sync-nats",
        List.of("java.", "io.kvroute.", "io.nats.client.", "it.unimi.dsi.fastutil.", "org.jspecify.annotations."),
        List.of("io.kvroute.sim.", "io.kvroute.events.", "io.nats.client.impl."),
        "sync-nats depends only on kvroute-core, jnats and fastutil");
  }
}
