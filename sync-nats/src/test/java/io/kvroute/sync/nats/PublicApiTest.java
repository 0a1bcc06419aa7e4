package io.kvroute.sync.nats;

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
 * Tracks the module's public API in {@code sync-nats/api/kvroute-sync-nats.txt}: a change to a public signature
 * fails here until the dump is regenerated with {@code mvn -pl sync-nats test -Dtest=PublicApiTest
 * -Dapi.update=true}. Also guards the module's imports: core, the NATS client, fastutil and the JDK only.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-sync-nats.txt");
  private static final Set<String> ALLOWED_IMPORT_PREFIXES = Set.of("java.", "io.kvroute.", "io.nats.client.",
      "it.unimi.dsi.fastutil.", "org.jspecify.annotations.");

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = ApiSurface.dump("io.kvroute.sync.nats", Path.of("target/classes"),
        PublicApiTest.class.getClassLoader());
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(API_FILE.getParent());
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "the public API changed; if intended, regenerate the dump with "
        + "'mvn -pl sync-nats test -Dtest=PublicApiTest -Dapi.update=true' and review the diff");
  }

  @Test
  void importsOnlyCoreNatsAndFastutil() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> ALLOWED_IMPORT_PREFIXES.stream().anyMatch(name::startsWith)
            && !name.startsWith("io.kvroute.sim.") && !name.startsWith("io.kvroute.events.")
            && !name.startsWith("io.nats.client.impl."));
    assertTrue(offenders.isEmpty(), "sync-nats depends only on kvroute-core and jnats: " + offenders);
  }
}
