package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.apidump.ApiSurface;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Tracks the module's public API in {@code spring-cloud-gateway/api/kvroute-spring-cloud-gateway.txt}, as the other
 * modules do: regenerate with
 * {@code mvn -pl spring-cloud-gateway -am test -Dtest=PublicApiTest -Dapi.update=true
 * -Dsurefire.failIfNoSpecifiedTests=false}. Also guards the module's imports.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-spring-cloud-gateway.txt");
  private static final Set<String> ALLOWED_IMPORT_PREFIXES = Set.of("java.", "javax.net.", "io.kvroute.",
      "org.springframework.", "reactor.", "org.reactivestreams.", "tools.jackson.", "io.micrometer.", "io.netty.handler.timeout.", "okhttp3.",
      "org.jspecify.annotations.");

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = ApiSurface.dump("io.kvroute.spring.gateway", Path.of("target/classes"),
        PublicApiTest.class.getClassLoader());
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(API_FILE.getParent());
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "the public API changed; if intended, regenerate the dump (see the class "
        + "comment) and review the diff");
  }

  @Test
  void importsOnlyKvrouteSpringReactorJacksonMicrometerAndOkHttp() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> ALLOWED_IMPORT_PREFIXES.stream().anyMatch(name::startsWith) && !name.startsWith("io.kvroute.sim.")
            && !name.startsWith("okhttp3.internal."));
    assertTrue(offenders.isEmpty(), "unexpected imports: " + offenders);
  }
}
