package io.kvroute.tokenizers;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The Rust {@code tokenizers} library through DJL's JNI bindings, for one {@code tokenizer.json}; thread-safe (the
 * Rust tokenizer is immutable once built and encodes from any number of threads).
 *
 * <p>DJL ships the native library for linux-x86_64/aarch64, macOS and Windows inside its jar and extracts it once
 * into its cache directory ({@code ENGINE_CACHE_DIR}, else {@code DJL_CACHE_DIR}, else {@code ~/.djl.ai}, as system
 * properties or environment variables) under {@code tokenizers/<version>-cpu-<platform>/}. It would download a
 * CUDA build from the network when it detects a GPU, and it would call the EC2 metadata address for telemetry;
 * {@link #load} therefore sets DJL's offline switch ({@code ai.djl.offline=true}, which also picks the jar's CPU
 * build) and {@code OPT_OUT_TRACKING=true} before DJL's first use, unless the application set them itself.
 */
final class NativeTokenizer implements TextEncoder {
  /** DJL's switch that forbids every download (and picks the CPU build that the jar holds). */
  static final String OFFLINE_PROPERTY = "ai.djl.offline";
  /** DJL's switch that stops its EC2 telemetry call. */
  static final String TRACKING_PROPERTY = "OPT_OUT_TRACKING";
  private static final Map<String, String> OPTIONS = Map.of(
      "truncation", "false", // DJL would otherwise truncate to 512 tokens
      "padding", "false",
      "addSpecialTokens", "true",
      "doLowerCase", "false");

  private final HuggingFaceTokenizer tokenizer;
  private final long handle;
  /** Encoding holds the read lock, so that {@link #close} never frees the native tokenizer under an encoding. */
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private boolean closed;

  private NativeTokenizer(HuggingFaceTokenizer tokenizer) {
    this.tokenizer = tokenizer;
    this.handle = tokenizer.getHandle();
  }

  /** Sets DJL's offline and no-telemetry switches unless already set; idempotent. */
  static void forbidNetwork() {
    if (System.getProperty(OFFLINE_PROPERTY) == null && System.getenv("DJL_OFFLINE") == null) {
      System.setProperty(OFFLINE_PROPERTY, "true");
    }
    if (System.getProperty(TRACKING_PROPERTY) == null && System.getenv(TRACKING_PROPERTY) == null) {
      System.setProperty(TRACKING_PROPERTY, "true");
    }
  }

  /**
   * Builds the tokenizer from the text of a {@code tokenizer.json}.
   *
   * @throws IOException naming {@code source} if the native library cannot be loaded or the JSON is not a
   *     tokenizer the library accepts
   */
  static NativeTokenizer load(String json, Path source) throws IOException {
    forbidNetwork();
    try {
      return new NativeTokenizer(HuggingFaceTokenizer.newInstance(
          new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), OPTIONS));
    } catch (IOException e) {
      throw new IOException(source + ": " + e.getMessage(), e);
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      // the Rust side reports a parse error as a RuntimeException; a missing platform as an EngineException
      String message = e.getMessage();
      Throwable cause = e.getCause();
      if (cause != null && cause.getMessage() != null && !cause.getMessage().equals(message)) {
        message = message + ": " + cause.getMessage();
      }
      throw new IOException(source + " is not a tokenizer.json the Hugging Face tokenizers library accepts: "
          + message, e);
    }
  }

  /** Encodes {@code text}, with the post-processor's special tokens (BOS, ...) when {@code addSpecialTokens}. */
  @Override
  public int[] encode(String text, boolean addSpecialTokens) {
    if (text.isEmpty() && !addSpecialTokens) {
      return new int[0];
    }
    TokenizersLibrary lib = TokenizersLibrary.LIB;
    lock.readLock().lock();
    try {
      if (closed) {
        throw new IllegalStateException("the tokenizer is closed");
      }
      long encoding = lib.encode(handle, text, addSpecialTokens);
      try {
        long[] ids = lib.getTokenIds(encoding);
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
          out[i] = (int) ids[i];
        }
        return out;
      } finally {
        lib.deleteEncoding(encoding);
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  @Override
  public String kind() {
    return "native";
  }

  @Override
  public void close() {
    lock.writeLock().lock();
    try {
      if (!closed) {
        closed = true;
        tokenizer.close();
      }
    } finally {
      lock.writeLock().unlock();
    }
  }
}
