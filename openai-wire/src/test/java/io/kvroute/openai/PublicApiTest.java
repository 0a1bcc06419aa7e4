package io.kvroute.openai;

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
 * Tracks the module's public API in {@code openai-wire/api/kvroute-openai-wire.txt}, as core does; regenerate with
 * {@code mvn -pl openai-wire -am test -Dtest=PublicApiTest -Dsurefire.failIfNoSpecifiedTests=false -Dapi.update=true}.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-openai-wire.txt");
  private static final Set<String> ALLOWED_IMPORT_PREFIXES = Set.of("java.", "org.jspecify.annotations.", "io.kvroute.openai.");

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = ApiSurface.dump("io.kvroute.openai", Path.of("target/classes"),
        PublicApiTest.class.getClassLoader());
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(API_FILE.getParent());
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "the public API changed; if intended, regenerate the dump and review the diff");
  }

  @Test
  void importsNothingButTheJdk() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> ALLOWED_IMPORT_PREFIXES.stream().anyMatch(name::startsWith));
    assertTrue(offenders.isEmpty(), "kvroute-openai-wire has no dependencies: " + offenders);
  }
}
