package io.kvroute.tokenizers;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.GZIPInputStream;

/** The committed tokenizer fixtures, unpacked once per JVM into target/, and one shared tokenizer per family. */
final class TestModels {
  static final String QWEN3 = "qwen3";
  static final String LLAMA = "llama3_2";
  private static final Map<String, HfTokenizer> SHARED = new ConcurrentHashMap<>();
  private static final Map<String, TokenizerFiles> FILES = new ConcurrentHashMap<>();

  private TestModels() {}

  /** The model directory of a family: tokenizer.json and tokenizer_config.json. */
  static synchronized Path dir(String family) {
    Path dir = Path.of("target", "test-models", family);
    Path json = dir.resolve("tokenizer.json");
    try {
      if (!Files.exists(json)) {
        Files.createDirectories(dir);
        String base = "fixtures/" + family + "/";
        try (InputStream in = new GZIPInputStream(resource(base + "tokenizer.json.gz"))) {
          Path tmp = Files.createTempFile(dir, "tokenizer", ".tmp");
          Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
          Files.move(tmp, json, StandardCopyOption.ATOMIC_MOVE);
        }
        try (InputStream in = resource(base + "tokenizer_config.json")) {
          Files.copy(in, dir.resolve("tokenizer_config.json"), StandardCopyOption.REPLACE_EXISTING);
        }
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static InputStream resource(String name) throws IOException {
    InputStream in = TestModels.class.getResourceAsStream(name);
    if (in == null) {
      throw new IOException("no test resource " + name);
    }
    return in;
  }

  /** A shared tokenizer of the family (Llama 3 also accepts its ipython role). */
  static HfTokenizer shared(String family) {
    return SHARED.computeIfAbsent(family, f -> {
      try {
        return builder(f).build();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  /** A tiny word-level tokenizer.json (ids: <s>=0, hello=1, world=2, [UNK]=3), split on whitespace. */
  static final String TINY_TOKENIZER_JSON = "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":0,\"content\":\"<s>\","
      + "\"special\":true,\"normalized\":false,\"lstrip\":false,\"rstrip\":false,\"single_word\":false}],"
      + "\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"<s>\":0,"
      + "\"hello\":1,\"world\":2,\"[UNK]\":3},\"unk_token\":\"[UNK]\"}}";

  /** The family's files as the tokenizer reads them. */
  static TokenizerFiles files(String family) {
    return FILES.computeIfAbsent(family, f -> {
      try {
        return TokenizerFiles.read(dir(f).resolve("tokenizer.json"), dir(f).resolve("tokenizer_config.json"), null);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  static HfTokenizer.Builder builder(String family) {
    HfTokenizer.Builder b = HfTokenizer.newBuilder(dir(family));
    if (family.equals(LLAMA)) {
      b.roles(Set.of("system", "developer", "user", "assistant", "tool", "ipython"));
    }
    return b;
  }
}
