package io.kvroute.spring.gateway;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code spring-cloud-gateway/api/kvroute-spring-cloud-gateway.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-spring-cloud-gateway",
        List.of("java.", "javax.net.", "io.kvroute.", "org.springframework.", "reactor.", "org.reactivestreams.",
            "tools.jackson.", "io.micrometer.", "io.netty.handler.timeout.", "okhttp3.",
            "org.jspecify.annotations."),
        List.of("io.kvroute.sim.", "okhttp3.internal."),
        "spring-cloud-gateway uses kvroute, Spring, Reactor, Jackson, Micrometer and OkHttp only");
  }
}
