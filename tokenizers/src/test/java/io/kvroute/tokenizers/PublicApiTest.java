package io.kvroute.tokenizers;

import io.kvroute.apidump.AbstractPublicApiTest;
import java.util.List;

/**
 * Tracks this module's public API in {@code tokenizers/api/kvroute-tokenizers.txt} and guards
 * its imports (see {@link AbstractPublicApiTest} for how to regenerate the dump).
 */
class PublicApiTest extends AbstractPublicApiTest {
  PublicApiTest() {
    super("kvroute-tokenizers",
        List.of("java.", "io.kvroute.transport.okhttp.", "io.kvroute.openai.ChatMessage", "io.kvroute.internal.Checks",
            "ai.djl.huggingface.", "com.hubspot.jinjava.", "jinjava.javax.el.", "com.fasterxml.jackson.",
            "it.unimi.dsi.fastutil.", "org.jspecify.annotations."),
        List.of(),
        "tokenizers uses transport-okhttp's port (and its ChatMessage), DJL, Jinjava, Jackson and fastutil only");
  }
}
