package io.kvroute.openai;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code openai-wire/api/kvroute-openai-wire.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-openai-wire",
        List.of("java.", "io.kvroute.openai.", "org.jspecify.annotations."),
        List.of(),
        "kvroute-openai-wire has no dependencies");
  }
}
