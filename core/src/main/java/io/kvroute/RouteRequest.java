package io.kvroute;

import io.kvroute.internal.Checks;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A request to route: its prompt tokens and what constrains or tunes the choice; an immutable value, thread-safe
 * (the token array is not copied: do not modify it while the request is being routed).
 */
public final class RouteRequest {
  private final int[] tokens;
  private final @Nullable String model;
  private final @Nullable String loraName;
  private final long @Nullable [][] blockExtraKeys;
  private final @Nullable String cacheSalt;
  private final @Nullable Set<WorkerId> allowedWorkers;
  private final double overlapWeight;
  private final double temperature;
  private final boolean explain;

  private RouteRequest(Builder b) {
    this.tokens = b.tokens;
    this.model = b.model;
    this.loraName = b.loraName;
    this.cacheSalt = b.cacheSalt == null || b.cacheSalt.isEmpty() ? null : b.cacheSalt;
    this.blockExtraKeys = BlockHasher.withCacheSalt(b.blockExtraKeys, cacheSalt);
    this.allowedWorkers = b.allowedWorkers == null ? null : Set.copyOf(b.allowedWorkers);
    this.overlapWeight = b.overlapWeight;
    this.temperature = b.temperature;
    this.explain = b.explain;
  }

  // What a builder with only tokens would build, without the builder: Router.select(int[]) calls this per request,
  // and escape analysis removes the builder only in some compilations (56 B per request when it does not).
  private RouteRequest(int[] tokens) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
    this.model = null;
    this.loraName = null;
    this.cacheSalt = null;
    this.blockExtraKeys = null;
    this.allowedWorkers = null;
    this.overlapWeight = Double.NaN;
    this.temperature = Double.NaN;
    this.explain = false;
  }

  /**
   * A request with only tokens.
   *
   * @param tokens the prompt's token ids, not empty
   * @return a request for any model, without adapter, restriction or explanation
   * @throws NullPointerException if {@code tokens} is null
   */
  public static RouteRequest of(int[] tokens) {
    return new RouteRequest(tokens);
  }

  /**
   * Returns a builder for a prompt of these tokens.
   *
   * @param tokens the prompt's token ids, as the engine will see them (not copied)
   * @return a new builder
   * @throws NullPointerException if {@code tokens} is null
   */
  public static Builder newBuilder(int[] tokens) {
    return new Builder(tokens);
  }

  /**
   * The prompt's token ids, as given (not copied).
   *
   * @return the token array
   */
  public int[] tokens() {
    return tokens;
  }

  /**
   * The model the request names, or null for any.
   *
   * @return the model's name, or null
   */
  public @Nullable String model() {
    return model;
  }

  /**
   * The LoRA adapter the request uses, or null for the base model.
   *
   * @return the adapter's name, or null
   */
  public @Nullable String loraName() {
    return loraName;
  }

  /**
   * The extra keys each block is hashed with: the multimodal content hashes set on the builder, plus, in block 0,
   * the {@linkplain #cacheSalt() cache salt}'s key ({@link BlockHasher#withCacheSalt}); null when there are none.
   *
   * @return per-block keys (index = block number), or null
   */
  public long @Nullable [][] blockExtraKeys() {
    return blockExtraKeys;
  }

  /**
   * The cache salt ({@code cache_salt} in vLLM and SGLang requests), or null for none.
   *
   * @return the salt
   */
  public @Nullable String cacheSalt() {
    return cacheSalt;
  }

  /**
   * The only workers this request may go to, or null for all.
   *
   * @return an immutable set of worker ids, or null
   */
  public @Nullable Set<WorkerId> allowedWorkers() {
    return allowedWorkers;
  }

  /**
   * Per-request overlap weight for KV-aware policies, or NaN to use the policy's.
   *
   * @return the weight, or NaN
   */
  public double overlapWeight() {
    return overlapWeight;
  }

  /**
   * Per-request softmax temperature for KV-aware policies, or NaN to use the policy's.
   *
   * @return the temperature, or NaN
   */
  public double temperature() {
    return temperature;
  }

  /**
   * Whether the routing result should carry every candidate's score.
   *
   * @return true if an explanation was asked for
   */
  public boolean explain() {
    return explain;
  }

  /** Builds a {@link RouteRequest}; not thread-safe. */
  public static final class Builder {
    private final int[] tokens;
    private @Nullable String model;
    private @Nullable String loraName;
    private long @Nullable [][] blockExtraKeys;
    private @Nullable String cacheSalt;
    private @Nullable Set<WorkerId> allowedWorkers;
    private double overlapWeight = Double.NaN;
    private double temperature = Double.NaN;
    private boolean explain;

    private Builder(int[] tokens) {
      this.tokens = Objects.requireNonNull(tokens, "tokens");
    }

    /**
     * The model the request names: only workers serving it (or serving any model) are candidates. Default: null,
     * any worker.
     *
     * @param model the model's name, or null for any
     * @return this builder
     */
    public Builder model(@Nullable String model) {
      this.model = model;
      return this;
    }

    /**
     * The LoRA adapter the request uses: only workers listing it in {@link Worker#loraAdapters()} are candidates,
     * and the adapter's name enters the block hashes (as vLLM's do), so cache matches never cross adapters.
     * Default: null, the base model.
     *
     * @param loraName the adapter's name, or null (or empty) for the base model
     * @return this builder
     */
    public Builder loraName(@Nullable String loraName) {
      this.loraName = loraName;
      return this;
    }

    /**
     * Per-block multimodal content hashes (for example of images), which enter the block hashes as vLLM's extra keys
     * do, so that prompts with the same placeholder tokens but other images do not match. Default: null, none.
     *
     * @param blockExtraKeys the keys of each full block (index = block number, a null entry for a block without), or
     *     null
     * @return this builder
     */
    public Builder blockExtraKeys(long @Nullable [][] blockExtraKeys) {
      this.blockExtraKeys = blockExtraKeys;
      return this;
    }

    /**
     * The request's cache salt, as sent to the engine ({@code cache_salt}); engines share cached blocks only between
     * requests with the same salt, and the router's block hashes fold it into block 0 the same way (see {@link
     * BlockHasher#cacheSaltKey}). Null or empty means none.
     *
     * @param cacheSalt the salt, or null
     * @return this builder
     */
    public Builder cacheSalt(@Nullable String cacheSalt) {
      this.cacheSalt = cacheSalt;
      return this;
    }

    /**
     * Restricts the request to these workers.
     *
     * @param allowedWorkers the allowed worker ids, not null; copied
     * @return this builder
     */
    public Builder allowedWorkers(Set<WorkerId> allowedWorkers) {
      this.allowedWorkers = Objects.requireNonNull(allowedWorkers, "allowedWorkers");
      return this;
    }

    /**
     * Overrides the KV-aware policy's overlap weight for this request.
     *
     * @param overlapWeight the weight, finite and zero or more
     * @return this builder
     * @throws IllegalArgumentException if negative or not finite
     */
    public Builder overlapWeight(double overlapWeight) {
      Checks.finiteNotNegative("overlapWeight", overlapWeight);
      this.overlapWeight = overlapWeight;
      return this;
    }

    /**
     * Overrides the KV-aware policy's temperature for this request.
     *
     * @param temperature the temperature, finite and zero or more
     * @return this builder
     * @throws IllegalArgumentException if negative or not finite
     */
    public Builder temperature(double temperature) {
      Checks.finiteNotNegative("temperature", temperature);
      this.temperature = temperature;
      return this;
    }

    /**
     * Asks for every candidate's overlap, load and cost in {@link Routing#explanation()}.
     *
     * @param explain whether to collect the explanation (it allocates; leave off on the hot path)
     * @return this builder
     */
    public Builder explain(boolean explain) {
      this.explain = explain;
      return this;
    }

    /**
     * Builds the request.
     *
     * @return a new immutable request
     */
    public RouteRequest build() {
      return new RouteRequest(this);
    }
  }
}
