package io.kvroute.sim;

import io.kvroute.internal.Checks;
import java.security.SecureRandom;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The shape of one simulated engine: its paged KV cache, batching limits, engine-side hash seed and timing; an
 * immutable value, thread-safe. Build one with {@link #newBuilder()}; {@link #DEFAULT} is a vLLM-like engine with
 * 16-token blocks and the article's 585-block (1 GiB) cache.
 */
public final class SimEngineConfig {
  /** vLLM's default block size. */
  public static final int DEFAULT_BLOCK_SIZE = 16;
  /** The article's per-worker cache: 1 GiB of Qwen3-0.6B KV at 112 KiB per token is 585 blocks of 16 tokens. */
  public static final int DEFAULT_NUM_BLOCKS = 585;
  /** vLLM's default per-step token budget for the OpenAI server. */
  public static final int DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192;
  /** vLLM's default limit on running sequences. */
  public static final int DEFAULT_MAX_NUM_SEQS = 256;
  /** Output tokens generated when a request does not say. */
  public static final int DEFAULT_MAX_TOKENS = 64;

  private static final long PROCESS_HASH_SEED = new SecureRandom().nextLong();

  /** The default engine: vLLM-like, with 16-token blocks and the article's 585-block (1 GiB) cache. */
  public static final SimEngineConfig DEFAULT = newBuilder().build(); // after PROCESS_HASH_SEED, which it reads

  private final int blockSize;
  private final int numBlocks;
  private final int maxNumBatchedTokens;
  private final int maxNumSeqs;
  private final int maxModelLen;
  private final int defaultMaxTokens;
  private final boolean chunkedPrefill;
  private final long engineHashSeed;
  private final String modelName;
  private final TimingModel timing;
  private final SimTokenizer tokenizer;

  private SimEngineConfig(Builder b) {
    this.blockSize = b.blockSize;
    this.numBlocks = b.numBlocks;
    this.maxNumBatchedTokens = b.maxNumBatchedTokens;
    this.maxNumSeqs = b.maxNumSeqs;
    this.maxModelLen = b.maxModelLen > 0 ? b.maxModelLen : b.numBlocks * b.blockSize;
    this.defaultMaxTokens = b.defaultMaxTokens;
    this.chunkedPrefill = b.chunkedPrefill;
    this.engineHashSeed = b.engineHashSeed != null ? b.engineHashSeed : PROCESS_HASH_SEED;
    this.modelName = b.modelName;
    this.timing = b.timing;
    this.tokenizer = b.tokenizer;
  }

  /**
   * A builder starting from the defaults.
   *
   * @return a new builder with {@link #DEFAULT}'s values
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * A builder starting from this configuration.
   *
   * @return a new builder holding this configuration's values
   */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.blockSize = blockSize;
    b.numBlocks = numBlocks;
    b.maxNumBatchedTokens = maxNumBatchedTokens;
    b.maxNumSeqs = maxNumSeqs;
    b.maxModelLen = maxModelLen;
    b.defaultMaxTokens = defaultMaxTokens;
    b.chunkedPrefill = chunkedPrefill;
    b.engineHashSeed = engineHashSeed;
    b.modelName = modelName;
    b.timing = timing;
    b.tokenizer = tokenizer;
    return b;
  }

  /**
   * Tokens per KV block.
   *
   * @return the block size, positive
   */
  public int blockSize() {
    return blockSize;
  }

  /**
   * KV cache capacity in blocks.
   *
   * @return the block count, positive
   */
  public int numBlocks() {
    return numBlocks;
  }

  /**
   * The per-step token budget shared by prefill chunks and decodes.
   *
   * @return the token budget, positive
   */
  public int maxNumBatchedTokens() {
    return maxNumBatchedTokens;
  }

  /**
   * The most sequences running at once.
   *
   * @return the sequence count, positive
   */
  public int maxNumSeqs() {
    return maxNumSeqs;
  }

  /**
   * The longest prompt plus output accepted; longer requests are rejected (by default, the cache's capacity).
   *
   * @return the length in tokens, positive
   */
  public int maxModelLen() {
    return maxModelLen;
  }

  /**
   * Output tokens generated when a request gives no {@code max_tokens}.
   *
   * @return the token count, positive
   */
  public int defaultMaxTokens() {
    return defaultMaxTokens;
  }

  /**
   * Whether a prompt longer than the step budget is prefilled over several steps.
   *
   * @return true if prompts are prefilled in chunks
   */
  public boolean chunkedPrefill() {
    return chunkedPrefill;
  }

  /**
   * The seed of the engine-side block hash (random per process unless set).
   *
   * @return the seed
   */
  public long engineHashSeed() {
    return engineHashSeed;
  }

  /**
   * The model name the engine serves.
   *
   * @return the model name, not blank
   */
  public String modelName() {
    return modelName;
  }

  /**
   * The step timing model.
   *
   * @return the timing model
   */
  public TimingModel timing() {
    return timing;
  }

  /**
   * The tokenizer for text prompts.
   *
   * @return the tokenizer
   */
  public SimTokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public String toString() {
    return "SimEngineConfig{blockSize=" + blockSize + ", numBlocks=" + numBlocks + ", maxNumBatchedTokens="
        + maxNumBatchedTokens + ", maxNumSeqs=" + maxNumSeqs + ", maxModelLen=" + maxModelLen
        + ", chunkedPrefill=" + chunkedPrefill + ", modelName=" + modelName + ", timing=" + timing + "}";
  }

  /** Builds a {@link SimEngineConfig}; not thread-safe. */
  public static final class Builder {
    private int blockSize = DEFAULT_BLOCK_SIZE;
    private int numBlocks = DEFAULT_NUM_BLOCKS;
    private int maxNumBatchedTokens = DEFAULT_MAX_NUM_BATCHED_TOKENS;
    private int maxNumSeqs = DEFAULT_MAX_NUM_SEQS;
    private int maxModelLen;
    private int defaultMaxTokens = DEFAULT_MAX_TOKENS;
    private boolean chunkedPrefill = true;
    private @Nullable Long engineHashSeed;
    private String modelName = "kvroute-sim";
    private TimingModel timing = TimingModel.DEFAULT;
    private SimTokenizer tokenizer = SimTokenizer.standard();

    private Builder() {}

    /**
     * @param blockSize tokens per KV block (default {@link SimEngineConfig#DEFAULT_BLOCK_SIZE})
     * @return this builder
     * @throws IllegalArgumentException if {@code blockSize} is not positive
     */
    public Builder blockSize(int blockSize) {
      this.blockSize = Checks.positive("blockSize", blockSize);
      return this;
    }

    /**
     * @param numBlocks the KV cache capacity in blocks (default {@link SimEngineConfig#DEFAULT_NUM_BLOCKS})
     * @return this builder
     * @throws IllegalArgumentException if {@code numBlocks} is not positive
     */
    public Builder numBlocks(int numBlocks) {
      this.numBlocks = Checks.positive("numBlocks", numBlocks);
      return this;
    }

    /**
     * @param maxNumBatchedTokens the per-step token budget, vLLM's {@code --max-num-batched-tokens} (default
     *     {@link SimEngineConfig#DEFAULT_MAX_NUM_BATCHED_TOKENS})
     * @return this builder
     * @throws IllegalArgumentException if {@code maxNumBatchedTokens} is not positive
     */
    public Builder maxNumBatchedTokens(int maxNumBatchedTokens) {
      this.maxNumBatchedTokens = Checks.positive("maxNumBatchedTokens", maxNumBatchedTokens);
      return this;
    }

    /**
     * @param maxNumSeqs the most sequences running at once, vLLM's {@code --max-num-seqs} (default
     *     {@link SimEngineConfig#DEFAULT_MAX_NUM_SEQS})
     * @return this builder
     * @throws IllegalArgumentException if {@code maxNumSeqs} is not positive
     */
    public Builder maxNumSeqs(int maxNumSeqs) {
      this.maxNumSeqs = Checks.positive("maxNumSeqs", maxNumSeqs);
      return this;
    }

    /**
     * Sets the longest prompt plus output accepted (default: the cache's capacity in tokens).
     *
     * @param maxModelLen the length in tokens, positive
     * @return this builder
     * @throws IllegalArgumentException if {@code maxModelLen} is not positive
     */
    public Builder maxModelLen(int maxModelLen) {
      this.maxModelLen = Checks.positive("maxModelLen", maxModelLen);
      return this;
    }

    /**
     * @param defaultMaxTokens output tokens for requests without {@code max_tokens} (default
     *     {@link SimEngineConfig#DEFAULT_MAX_TOKENS})
     * @return this builder
     * @throws IllegalArgumentException if {@code defaultMaxTokens} is not positive
     */
    public Builder defaultMaxTokens(int defaultMaxTokens) {
      this.defaultMaxTokens = Checks.positive("defaultMaxTokens", defaultMaxTokens);
      return this;
    }

    /**
     * Whether long prompts are prefilled in chunks of the step budget (default true, as in vLLM v1).
     *
     * @param chunkedPrefill true to prefill in chunks, false to require each prompt to fit one step
     * @return this builder
     */
    public Builder chunkedPrefill(boolean chunkedPrefill) {
      this.chunkedPrefill = chunkedPrefill;
      return this;
    }

    /**
     * Fixes the engine-side hash seed (by default random per process, as vLLM without PYTHONHASHSEED).
     *
     * @param engineHashSeed the seed of the engine's block hashes
     * @return this builder
     */
    public Builder engineHashSeed(long engineHashSeed) {
      this.engineHashSeed = engineHashSeed;
      return this;
    }

    /**
     * @param modelName the name {@code /v1/models} lists and requests must name (default {@code kvroute-sim})
     * @return this builder
     * @throws NullPointerException if {@code modelName} is null
     * @throws IllegalArgumentException if {@code modelName} is blank
     */
    public Builder modelName(String modelName) {
      this.modelName = Checks.notBlank("modelName", modelName);
      return this;
    }

    /**
     * @param timing the step timing model (default {@link TimingModel#DEFAULT})
     * @return this builder
     * @throws NullPointerException if {@code timing} is null
     */
    public Builder timing(TimingModel timing) {
      this.timing = Objects.requireNonNull(timing, "timing");
      return this;
    }

    /**
     * @param tokenizer the tokenizer for text prompts (default {@link SimTokenizer#standard()})
     * @return this builder
     * @throws NullPointerException if {@code tokenizer} is null
     */
    public Builder tokenizer(SimTokenizer tokenizer) {
      this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @return a new immutable configuration
     * @throws IllegalStateException if {@code maxModelLen} exceeds the cache's capacity in tokens, or the step
     *     budget is smaller than the longest prompt while chunked prefill is off
     */
    public SimEngineConfig build() {
      long capacity = (long) numBlocks * blockSize;
      if (maxModelLen > capacity) {
        throw new IllegalStateException("maxModelLen (" + maxModelLen + ") exceeds the cache capacity of " + capacity
            + " tokens (numBlocks " + numBlocks + " x blockSize " + blockSize + ")");
      }
      if (capacity > Integer.MAX_VALUE) {
        throw new IllegalStateException("cache capacity of " + capacity + " tokens exceeds Integer.MAX_VALUE");
      }
      long modelLen = maxModelLen > 0 ? maxModelLen : capacity;
      if (!chunkedPrefill && maxNumBatchedTokens < modelLen) {
        throw new IllegalStateException("without chunked prefill maxNumBatchedTokens (" + maxNumBatchedTokens
            + ") must be at least maxModelLen (" + modelLen + ")");
      }
      return new SimEngineConfig(this);
    }
  }
}
