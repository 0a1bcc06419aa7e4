package io.kvroute.sim;

import io.kvroute.internal.Checks;
import java.util.SplittableRandom;

/**
 * The measured article's workload: each prompt is one of {@code prefixKinds} shared prefixes, drawn uniformly,
 * followed by a tail unique to the request; immutable and thread-safe.
 *
 * <p>Prompts are text of synthetic words ({@code k<kind>w<i>} for the prefix, {@code r<request>w<i>} for the
 * tail), one {@link SimTokenizer} token per word, so the same workload can be sent as text over HTTP
 * ({@link #promptText}) or as token ids in process ({@link #request}), with identical token ids. Defaults are the
 * article's: 2,032 prefix tokens (127 blocks of 16), 339 tail tokens, 7 kinds.
 */
public final class SharedPrefixWorkload implements Workload {
  /** The article's shared prefix length. */
  public static final int ARTICLE_PREFIX_TOKENS = 2032;
  /** The article's per-request tail length. */
  public static final int ARTICLE_TAIL_TOKENS = 339;
  /**
   * Output tokens per request. The article does not state its output length; 128 tokens gives the article's
   * throughput at concurrency 16 with the default {@link TimingModel}.
   */
  public static final int DEFAULT_OUTPUT_TOKENS = 128;

  private final int prefixKinds;
  private final int prefixTokens;
  private final int tailTokens;
  private final int outputTokens;
  private final long seed;
  private final SimTokenizer tokenizer;
  private final int[][] prefixes;
  private final double zipfExponent;
  private final double[] cumulative;

  private SharedPrefixWorkload(Builder b) {
    this.prefixKinds = b.prefixKinds;
    this.prefixTokens = b.prefixTokens;
    this.tailTokens = b.tailTokens;
    this.outputTokens = b.outputTokens;
    this.seed = b.seed;
    this.tokenizer = b.tokenizer;
    this.zipfExponent = b.zipfExponent;
    this.cumulative = new double[prefixKinds];
    double total = 0;
    for (int k = 0; k < prefixKinds; k++) {
      total += Math.pow(k + 1, -zipfExponent);
      cumulative[k] = total;
    }
    for (int k = 0; k < prefixKinds; k++) {
      cumulative[k] /= total;
    }
    this.prefixes = new int[prefixKinds][];
    for (int k = 0; k < prefixKinds; k++) {
      prefixes[k] = tokenizer.encode(prefixText(k));
    }
  }

  /**
   * The article's workload with {@code prefixKinds} kinds and the given seed.
   *
   * @param prefixKinds the number of distinct shared prefixes, positive
   * @param seed seeds the kind draws and tails
   * @return the workload
   */
  public static SharedPrefixWorkload article(int prefixKinds, long seed) {
    return newBuilder().prefixKinds(prefixKinds).seed(seed).build();
  }

  /**
   * A builder with the article's defaults.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * The number of distinct shared prefixes.
   *
   * @return the kind count, positive
   */
  public int prefixKinds() {
    return prefixKinds;
  }

  /**
   * Tokens per shared prefix.
   *
   * @return the token count, zero or more
   */
  public int prefixTokens() {
    return prefixTokens;
  }

  /**
   * Tokens per unique tail.
   *
   * @return the token count, positive
   */
  public int tailTokens() {
    return tailTokens;
  }

  /**
   * Output tokens per request.
   *
   * @return the token count, positive
   */
  public int outputTokens() {
    return outputTokens;
  }

  /**
   * The prefix kind of request {@code index}: uniform over the kinds, or with a Zipf exponent {@code s > 0}, kind
   * {@code k} with probability proportional to {@code (k + 1)^-s} (kind 0 the most popular).
   *
   * @param index the request's position, zero or more
   * @return the kind, from 0 to {@code prefixKinds() - 1}
   */
  public int kind(int index) {
    SplittableRandom random = new SplittableRandom(seed * 0x9e3779b97f4a7c15L + index);
    if (zipfExponent == 0) {
      return random.nextInt(prefixKinds);
    }
    double u = random.nextDouble();
    for (int k = 0; k < prefixKinds - 1; k++) {
      if (u < cumulative[k]) {
        return k;
      }
    }
    return prefixKinds - 1;
  }

  /**
   * The probability of kind {@code k}.
   *
   * @param k the kind, from 0 to {@code prefixKinds() - 1}
   * @return the probability, from 0 to 1
   */
  public double kindProbability(int k) {
    return k == 0 ? cumulative[0] : cumulative[k] - cumulative[k - 1];
  }

  @Override
  public SimRequest request(int index) {
    requireIndex(index);
    int kind = kind(index);
    int[] tail = tokenizer.encode(tailText(index));
    int[] prompt = new int[prefixTokens + tail.length];
    System.arraycopy(prefixes[kind], 0, prompt, 0, prefixTokens);
    System.arraycopy(tail, 0, prompt, prefixTokens, tail.length);
    return new SimRequest(prompt, outputTokens, kind);
  }

  /**
   * The prompt of request {@code index} as text; {@link SimTokenizer#encode} gives {@code request(index)}'s tokens.
   *
   * @param index the request's position, zero or more
   * @return the shared prefix's text, a space and the request's own tail
   */
  public String promptText(int index) {
    requireIndex(index);
    return prefixText(kind(index)) + " " + tailText(index);
  }

  private String prefixText(int kind) {
    StringBuilder sb = new StringBuilder(prefixTokens * 8);
    for (int i = 0; i < prefixTokens; i++) {
      sb.append(i == 0 ? "" : " ").append('k').append(kind).append('w').append(i);
    }
    return sb.toString();
  }

  private String tailText(int index) {
    StringBuilder sb = new StringBuilder(tailTokens * 10);
    long tag = seed * 1_000_003L + index;
    for (int i = 0; i < tailTokens; i++) {
      sb.append(i == 0 ? "" : " ").append('r').append(Long.toHexString(tag)).append('w').append(i);
    }
    return sb.toString();
  }

  private static void requireIndex(int index) {
    Checks.notNegative("index", index);
  }

  @Override
  public String toString() {
    return "SharedPrefixWorkload{kinds=" + prefixKinds + ", prefix=" + prefixTokens + ", tail=" + tailTokens
        + ", output=" + outputTokens + ", seed=" + seed + (zipfExponent == 0 ? "" : ", zipf=" + zipfExponent) + "}";
  }

  /** Builds a {@link SharedPrefixWorkload}; not thread-safe. */
  public static final class Builder {
    private int prefixKinds = 7;
    private int prefixTokens = ARTICLE_PREFIX_TOKENS;
    private int tailTokens = ARTICLE_TAIL_TOKENS;
    private int outputTokens = DEFAULT_OUTPUT_TOKENS;
    private long seed = 42;
    private SimTokenizer tokenizer = SimTokenizer.standard();
    private double zipfExponent;

    private Builder() {}

    /**
     * Draws kinds from a Zipf distribution with this exponent instead of uniformly; 0 (the default) is uniform.
     *
     * @param exponent the Zipf exponent, finite and zero or more
     * @return this builder
     * @throws IllegalArgumentException if negative or not finite
     */
    public Builder zipfExponent(double exponent) {
      this.zipfExponent = Checks.finiteNotNegative("zipfExponent", exponent);
      return this;
    }

    /**
     * @param prefixKinds the number of distinct shared prefixes, positive (default 7)
     * @return this builder
     * @throws IllegalArgumentException if {@code prefixKinds} is not positive
     */
    public Builder prefixKinds(int prefixKinds) {
      this.prefixKinds = Checks.positive("prefixKinds", prefixKinds);
      return this;
    }

    /**
     * @param prefixTokens tokens per shared prefix, zero or more (default
     *     {@link SharedPrefixWorkload#ARTICLE_PREFIX_TOKENS})
     * @return this builder
     * @throws IllegalArgumentException if {@code prefixTokens} is negative
     */
    public Builder prefixTokens(int prefixTokens) {
      this.prefixTokens = Checks.notNegative("prefixTokens", prefixTokens);
      return this;
    }

    /**
     * @param tailTokens tokens per unique tail, positive (default {@link SharedPrefixWorkload#ARTICLE_TAIL_TOKENS})
     * @return this builder
     * @throws IllegalArgumentException if {@code tailTokens} is not positive
     */
    public Builder tailTokens(int tailTokens) {
      this.tailTokens = Checks.positive("tailTokens", tailTokens);
      return this;
    }

    /**
     * @param outputTokens output tokens per request, positive (default
     *     {@link SharedPrefixWorkload#DEFAULT_OUTPUT_TOKENS})
     * @return this builder
     * @throws IllegalArgumentException if {@code outputTokens} is not positive
     */
    public Builder outputTokens(int outputTokens) {
      this.outputTokens = Checks.positive("outputTokens", outputTokens);
      return this;
    }

    /**
     * Seeds the kind draws and tails.
     *
     * @param seed any value (default 42); the same seed gives the same requests
     * @return this builder
     */
    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /**
     * @param tokenizer the tokenizer giving the requests' tokens (default {@link SimTokenizer#standard()})
     * @return this builder
     * @throws NullPointerException if {@code tokenizer} is null
     */
    public Builder tokenizer(SimTokenizer tokenizer) {
      this.tokenizer = java.util.Objects.requireNonNull(tokenizer, "tokenizer");
      return this;
    }

    /**
     * Builds the workload.
     *
     * @return a new immutable workload
     */
    public SharedPrefixWorkload build() {
      return new SharedPrefixWorkload(this);
    }
  }
}
