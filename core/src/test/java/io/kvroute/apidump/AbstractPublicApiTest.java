package io.kvroute.apidump;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The API and dependency checks every published module runs (each module's {@code PublicApiTest} extends this with
 * its artifact id and import rules). Not thread-safe; JUnit creates one instance per test.
 *
 * <p>The module's exported API, as dumped by {@link ApiSurface#dump}, must equal the checked-in
 * {@code api/<artifactId>.txt} (as OkHttp tracks its API dump), so every public signature change is deliberate and
 * visible in review. Regenerate after an intended change with {@code -Dapi.update=true}, e.g.
 * {@code mvn -B -q -pl core -am test -Dtest=PublicApiTest -Dsurefire.failIfNoSpecifiedTests=false -Dapi.update=true},
 * and review the diff. The module's main sources may import only what its dependency rule allows.
 */
public abstract class AbstractPublicApiTest {
  private final String artifactId;
  private final List<String> allowedPrefixes;
  private final List<String> forbiddenPrefixes;
  private final String dependencyRule;

  /**
   * Configures the checks for one module.
   *
   * @param artifactId the module's Maven artifact id, which names its dump file {@code api/<artifactId>.txt}
   * @param allowedPrefixes the name prefixes of allowed imports, such as {@code "java."} or {@code "okhttp3."}
   * @param forbiddenPrefixes prefixes rejected even when an allowed prefix matches, such as {@code "okhttp3.internal."}
   * @param dependencyRule what the module may depend on, in words, for the failure message
   */
  protected AbstractPublicApiTest(String artifactId, List<String> allowedPrefixes, List<String> forbiddenPrefixes,
      String dependencyRule) {
    this.artifactId = artifactId;
    this.allowedPrefixes = List.copyOf(allowedPrefixes);
    this.forbiddenPrefixes = List.copyOf(forbiddenPrefixes);
    this.dependencyRule = dependencyRule;
  }

  @Test
  public void publicApiMatchesTheCheckedInDump() throws IOException {
    Path apiFile = Path.of("api", artifactId + ".txt");
    String current = ApiSurface.dump(Path.of("target/classes"), getClass().getClassLoader());
    assertTrue(!current.isEmpty(), artifactId + " exports no public type; is target/classes compiled?");
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(apiFile.getParent());
      Files.writeString(apiFile, current, StandardCharsets.UTF_8);
    }
    String expected = Files.exists(apiFile) ? Files.readString(apiFile, StandardCharsets.UTF_8) : "";
    if (!expected.equals(current)) {
      fail(artifactId + "'s public API differs from " + apiFile + "; if intended, regenerate it with "
          + "-Dapi.update=true (see AbstractPublicApiTest) and review the diff:\n" + ApiSurface.diff(expected, current));
    }
  }

  @Test
  public void mainSourcesImportOnlyTheModulesDependencies() throws IOException {
    List<String> offenders = ApiSurface.disallowedImports(Path.of("src/main/java"),
        name -> allowedPrefixes.stream().anyMatch(name::startsWith)
            && forbiddenPrefixes.stream().noneMatch(name::startsWith));
    assertTrue(offenders.isEmpty(), artifactId + ": " + dependencyRule + "; unexpected imports: " + offenders);
  }
}
