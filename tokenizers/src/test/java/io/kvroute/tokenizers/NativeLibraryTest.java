package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The native library comes out of DJL's jar into the configured cache directory, and loading a tokenizer makes no
 * network connection at all: checked in a fresh JVM (DJL loads its library once per JVM) whose every connection
 * attempt is recorded and sent nowhere.
 */
class NativeLibraryTest {
  @Test
  void loadsFromTheJarWithoutTheNetwork() throws Exception {
    Path cache = Files.createTempDirectory(Path.of("target"), "djl-cache-");
    Path out = cache.resolve("out.txt");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        "-DENGINE_CACHE_DIR=" + cache.toAbsolutePath(), OfflineLoadCheck.class.getName(),
        TestModels.dir(TestModels.QWEN3).toAbsolutePath().toString())
        .redirectErrorStream(true).redirectOutput(out.toFile()).start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child JVM finished");
    List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), String.join("\n", lines));
    // "Hello, world!" in Qwen3's vocabulary: Hello , Ġworld !
    assertTrue(lines.contains("IDS=[9707, 11, 1879, 0]"), String.join("\n", lines));
    assertTrue(lines.contains("OFFLINE=true"), "DJL's offline switch was set");
    assertTrue(lines.contains("TRACKING=true"), "DJL's telemetry was opted out of");
    assertTrue(lines.contains("ATTEMPTS=[]"), "no connection was attempted: " + lines);

    String library = System.mapLibraryName("tokenizers");
    Path extracted;
    try (Stream<Path> files = Files.walk(cache.resolve("tokenizers"))) {
      extracted = files.filter(f -> f.getFileName().toString().equals(library)).findFirst().orElseThrow();
    }
    assertTrue(extracted.getParent().getFileName().toString().contains("-cpu-"), extracted.toString());
    String platform = extracted.getParent().getFileName().toString().replaceFirst(".*-cpu-", "");
    try (InputStream in = ai.djl.huggingface.tokenizers.HuggingFaceTokenizer.class.getClassLoader()
        .getResourceAsStream("native/lib/" + platform + "/cpu/" + library)) {
      assertArrayEquals(in.readAllBytes(), Files.readAllBytes(extracted), "the jar's library, byte for byte");
    }
  }
}
