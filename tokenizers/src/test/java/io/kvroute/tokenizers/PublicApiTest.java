package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.ApiSurface;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Tracks the module's public API in {@code tokenizers/api/kvroute-tokenizers.txt}: regenerate with
 * {@code mvn -pl tokenizers test -Dtest=PublicApiTest -Dapi.update=true}. Also guards the module's imports.
 */
class PublicApiTest {
  private static final Path API_FILE = Path.of("api/kvroute-tokenizers.txt");
  private static final Set<String> ALLOWED = Set.of("java.", "io.kvroute.transport.okhttp.", "ai.djl.huggingface.",
      "com.hubspot.jinjava.", "jinjava.javax.el.", "com.fasterxml.jackson.", "org.jspecify.annotations.",
      "it.unimi.dsi.fastutil."); // fastutil: the pure-Java encoder's tables (core's own dependency)

  @Test
  void publicApiMatchesTheCheckedInDump() throws IOException {
    String current = ApiSurface.dump("io.kvroute.tokenizers", Path.of("target/classes"),
        PublicApiTest.class.getClassLoader());
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(API_FILE.getParent());
      Files.writeString(API_FILE, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(API_FILE) ? Files.readString(API_FILE, StandardCharsets.UTF_8) : "";
    assertEquals(expected, current, "the public API changed; if intended, regenerate the dump with "
        + "'mvn -pl tokenizers test -Dtest=PublicApiTest -Dapi.update=true' and review the diff");
  }

  @Test
  void importsOnlyItsDependencies() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> ALLOWED.stream().anyMatch(name::startsWith));
    assertTrue(offenders.isEmpty(), "tokenizers uses transport-okhttp's port, DJL, Jinjava, Jackson and fastutil: " + offenders);
  }
}
