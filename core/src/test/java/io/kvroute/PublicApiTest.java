package io.kvroute;

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
 * Tracks core's public API in {@code core/api/kvroute-core.txt} (as OkHttp tracks its API dump): any change to a
 * public signature fails here until the file is regenerated with {@code mvn -pl core test -Dapi.update=true}, so API
 * changes are always deliberate and visible in review. Also guards core's dependency list.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-core.txt");
  private static final Set<String> ALLOWED_IMPORT_PREFIXES = Set.of("java.", "io.kvroute.", "it.unimi.dsi.fastutil.",
      "net.openhft.hashing.", "org.jspecify.annotations.");

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = ApiSurface.dump("io.kvroute", Path.of("target/classes"), PublicApiTest.class.getClassLoader());
    if (Boolean.getBoolean("api.update")) {
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "core's public API changed; if intended, regenerate the dump with "
        + "'mvn -pl core test -Dtest=PublicApiTest -Dapi.update=true' and review the diff");
  }

  @Test
  void coreImportsOnlyItsTwoSmallDependencies() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> ALLOWED_IMPORT_PREFIXES.stream().anyMatch(name::startsWith));
    assertTrue(offenders.isEmpty(), "core must depend only on fastutil-core and zero-allocation-hashing: "
        + offenders);
  }
}
