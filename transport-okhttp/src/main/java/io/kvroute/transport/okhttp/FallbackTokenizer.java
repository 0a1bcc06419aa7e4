package io.kvroute.transport.okhttp;

import static java.lang.System.Logger.Level.DEBUG;

import io.kvroute.openai.ChatMessage;
import java.io.IOException;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Tokenizer} that tokenizes with a primary tokenizer, usually an in-process one of the served model, and
 * asks a fallback, usually an {@link OkHttpTokenizer} on the engines' {@code /tokenize}, only when the primary
 * throws one of the configured failures; thread-safe when both tokenizers are.
 *
 * <pre>{@code
 * Tokenizer tokenizer = FallbackTokenizer.of(
 *     HfTokenizer.load(Path.of("/models/Qwen3-8B")),                    // kvroute-tokenizers
 *     OkHttpTokenizer.newBuilder().workers(router.workers()).build());  // only for what it cannot do
 * }</pre>
 *
 * <p>By default the fallback is asked when the primary throws {@link UnsupportedOperationException} (a request
 * the local tokenizer cannot count, such as image parts whose placeholder tokens only the engine knows) or
 * {@link IOException}. A malformed request ({@link IllegalArgumentException}) is not retried: the engine would
 * refuse it too.
 */
public final class FallbackTokenizer implements Tokenizer {
  private static final System.Logger logger = System.getLogger(FallbackTokenizer.class.getName());
  private static final List<Class<? extends Exception>> DEFAULT_FAILURES =
      List.of(UnsupportedOperationException.class, IOException.class);

  private final Tokenizer primary;
  private final Tokenizer fallback;
  private final List<Class<? extends Exception>> failures;
  private final AtomicLong fallbacks = new AtomicLong();

  private FallbackTokenizer(Tokenizer primary, Tokenizer fallback, List<Class<? extends Exception>> failures) {
    this.primary = primary;
    this.fallback = fallback;
    this.failures = failures;
  }

  /**
   * Tokenizes with {@code primary}, and with {@code fallback} when it throws {@link UnsupportedOperationException}
   * or {@link IOException}.
   *
   * @param primary the tokenizer asked first
   * @param fallback the tokenizer asked when the primary cannot tokenize a request
   * @return the tokenizer
   */
  public static FallbackTokenizer of(Tokenizer primary, Tokenizer fallback) {
    return new FallbackTokenizer(Objects.requireNonNull(primary, "primary"),
        Objects.requireNonNull(fallback, "fallback"), DEFAULT_FAILURES);
  }

  /**
   * Tokenizes with {@code primary}, and with {@code fallback} when it throws one of {@code failures} (or a
   * subclass).
   *
   * @param primary the tokenizer asked first
   * @param fallback the tokenizer asked when the primary throws one of {@code failures}
   * @param failures the exception types that send a request to the fallback
   * @return the tokenizer
   * @throws IllegalArgumentException if {@code failures} is empty
   */
  public static FallbackTokenizer of(Tokenizer primary, Tokenizer fallback,
      List<Class<? extends Exception>> failures) {
    if (failures.isEmpty()) {
      throw new IllegalArgumentException("failures must not be empty");
    }
    return new FallbackTokenizer(Objects.requireNonNull(primary, "primary"),
        Objects.requireNonNull(fallback, "fallback"), List.copyOf(failures));
  }

  /**
   * Returns how many calls the fallback answered.
   *
   * @return the count since construction
   */
  public long fallbackCount() {
    return fallbacks.get();
  }

  @Override
  public int[] tokenize(@Nullable String model, String prompt) throws IOException {
    try {
      return primary.tokenize(model, prompt);
    } catch (Exception e) {
      rethrowUnlessFallback(e);
      return fallback.tokenize(model, prompt);
    }
  }

  @Override
  public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) throws IOException {
    try {
      return primary.tokenizeChat(model, messages);
    } catch (Exception e) {
      rethrowUnlessFallback(e);
      return fallback.tokenizeChat(model, messages);
    }
  }

  @Override
  public int[] tokenizeRequest(byte[] requestBody) throws IOException {
    try {
      return primary.tokenizeRequest(requestBody);
    } catch (Exception e) {
      rethrowUnlessFallback(e);
      return fallback.tokenizeRequest(requestBody);
    }
  }

  private void rethrowUnlessFallback(Exception e) throws IOException {
    for (Class<? extends Exception> failure : failures) {
      if (failure.isInstance(e)) {
        fallbacks.incrementAndGet();
        logger.log(DEBUG, () -> "the primary tokenizer failed; asking " + fallback + ": " + e);
        return;
      }
    }
    if (e instanceof IOException io) {
      throw io;
    }
    throw (RuntimeException) e;
  }

  @Override
  public String toString() {
    return "FallbackTokenizer{" + primary + " then " + fallback + "}";
  }
}
