package io.kvroute.sim;

import io.kvroute.internal.Checks;

/**
 * How long one engine step takes, in model milliseconds; an immutable value, thread-safe.
 *
 * <p>One step runs one forward pass over a batch that mixes prefill chunks and decoding sequences (vLLM v1's
 * unified continuous batching). Its duration is
 *
 * <pre>{@code
 * step_ms = stepOverheadMillis
 *         + prefillMillisPerToken   * P + prefillMillisPerTokenSquared * P²
 *         + decodeMillisPerSequence * D + decodeMillisPerKvToken       * K
 * }</pre>
 *
 * where {@code P} is the number of uncached prompt tokens computed in the step, {@code D} the number of sequences
 * decoding one token, and {@code K} the KV tokens those sequences attend to. Prefill time therefore grows with
 * uncached tokens (a prefix-cache hit skips its tokens), and decode time with batch size and KV use. The shape
 * follows Dynamo's mocker (a quadratic prefill polynomial, decode growing with KV use); the {@link #DEFAULT}
 * coefficients are chosen so that a 2,371-token prompt on a 0.6B-parameter model on a consumer GPU behaves roughly
 * as in the measured article: about 70 ms for a cold prefill, 13 ms with the 2,032-token prefix cached, and 5 to 8
 * ms per decode step at the article's batch sizes.
 *
 * @param stepOverheadMillis fixed cost of any step (scheduling, sampling, kernel launches)
 * @param prefillMillisPerToken linear prefill cost per uncached prompt token
 * @param prefillMillisPerTokenSquared quadratic prefill cost (attention over the chunk)
 * @param decodeMillisPerSequence cost per decoding sequence in the batch
 * @param decodeMillisPerKvToken cost per KV token read by the decoding sequences
 */
public record TimingModel(
    double stepOverheadMillis,
    double prefillMillisPerToken,
    double prefillMillisPerTokenSquared,
    double decodeMillisPerSequence,
    double decodeMillisPerKvToken) {

  /** Coefficients for a 0.6B-parameter model on a consumer GPU (see the class documentation). */
  public static final TimingModel DEFAULT = new TimingModel(4.5, 0.025, 1.0e-6, 0.3, 0.0003);

  /** A model in which every step takes no time (useful for pure cache-behaviour tests). */
  public static final TimingModel ZERO = new TimingModel(0, 0, 0, 0, 0);

  /**
   * @param stepOverheadMillis fixed cost of any step (scheduling, sampling, kernel launches)
   * @param prefillMillisPerToken linear prefill cost per uncached prompt token
   * @param prefillMillisPerTokenSquared quadratic prefill cost (attention over the chunk)
   * @param decodeMillisPerSequence cost per decoding sequence in the batch
   * @param decodeMillisPerKvToken cost per KV token read by the decoding sequences
   * @throws IllegalArgumentException if a coefficient is negative or not finite
   */
  public TimingModel {
    Checks.finiteNotNegative("stepOverheadMillis", stepOverheadMillis);
    Checks.finiteNotNegative("prefillMillisPerToken", prefillMillisPerToken);
    Checks.finiteNotNegative("prefillMillisPerTokenSquared", prefillMillisPerTokenSquared);
    Checks.finiteNotNegative("decodeMillisPerSequence", decodeMillisPerSequence);
    Checks.finiteNotNegative("decodeMillisPerKvToken", decodeMillisPerKvToken);
  }

  /**
   * This model on hardware {@code factor} times slower (every coefficient multiplied by {@code factor}).
   *
   * @param factor the slowdown, finite and positive (below 1 makes the model faster)
   * @return a new model with every coefficient multiplied by {@code factor}
   */
  public TimingModel slowerBy(double factor) {
    Checks.finitePositive("factor", factor);
    return new TimingModel(stepOverheadMillis * factor, prefillMillisPerToken * factor,
        prefillMillisPerTokenSquared * factor, decodeMillisPerSequence * factor, decodeMillisPerKvToken * factor);
  }

  /**
   * The duration of a step in nanoseconds of model time.
   *
   * @param prefillTokens uncached prompt tokens computed in the step
   * @param decodeSequences sequences decoding one token in the step
   * @param decodeKvTokens KV tokens held by those sequences
   * @return the step's duration in nanoseconds, zero when the step does nothing
   */
  public long stepNanos(int prefillTokens, int decodeSequences, long decodeKvTokens) {
    if (prefillTokens == 0 && decodeSequences == 0) {
      return 0;
    }
    double p = prefillTokens;
    double ms = stepOverheadMillis
        + prefillMillisPerToken * p + prefillMillisPerTokenSquared * p * p
        + decodeMillisPerSequence * decodeSequences + decodeMillisPerKvToken * decodeKvTokens;
    return Math.round(ms * 1_000_000.0);
  }
}
