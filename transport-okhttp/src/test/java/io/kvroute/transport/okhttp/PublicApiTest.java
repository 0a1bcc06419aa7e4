package io.kvroute.transport.okhttp;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code transport-okhttp/api/kvroute-transport-okhttp.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-transport-okhttp",
        List.of("java.", "io.kvroute.", "okhttp3.", "okio.", "org.jspecify.annotations.", "com.sun.net.httpserver.",
            "javax.net."),
        List.of("io.kvroute.sim.", "io.kvroute.events.", "okhttp3.internal.", "mockwebserver"),
        "transport-okhttp depends only on kvroute-core, kvroute-openai-wire, okhttp-jvm and the JDK "
            + "(jdk.httpserver, socket factories)");
  }
}
