package io.kvroute;

import io.kvroute.internal.Checks;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import net.openhft.hashing.LongHashFunction;
import org.jspecify.annotations.Nullable;

/**
 * Computes the router's block hashes, byte-compatible with NVIDIA Dynamo's KV router; instances are immutable and
 * thread-safe.
 *
 * <ul>
 *   <li>A block's <em>local</em> hash is XXH3-64 with seed {@value #SEED} over its tokens as little-endian u32. Only
 *       full blocks are hashed; a partial last block is ignored.
 *   <li>A LoRA adapter name is folded into the seed: {@code seed = 1337 + xxh3_64(utf8(name))} (wrapping).
 *   <li>Extra keys (multimodal content hashes) of a block are sorted and appended to its token bytes as LE u64. A
 *       cache salt is one more extra key of block 0 ({@link #cacheSaltKey}).
 *   <li>The <em>sequence</em> hash identifies a whole prefix: {@code seq[0] = local[0]},
 *       {@code seq[i] = xxh3_64_1337(seq[i-1] LE || local[i] LE)}. The index matches requests by sequence hash.
 * </ul>
 */
public final class BlockHasher {
  /** Dynamo's XXH3 seed. */
  public static final long SEED = 1337L;
  /** The default block size, in tokens, which is vLLM's default. */
  public static final int DEFAULT_BLOCK_SIZE = 16;

  private static final LongHashFunction BASE = LongHashFunction.xx3(SEED);
  private static final LongHashFunction UNSEEDED = LongHashFunction.xx3();
  private static final int MAX_CACHED_LORA_SEEDS = 1024;
  // Building xx3(seed) allocates a derived secret, so one function per LoRA name is kept (bounded).
  private static final ConcurrentHashMap<String, LongHashFunction> LORA_FUNCTIONS = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Long> LORA_SEEDS = new ConcurrentHashMap<>();

  private final int blockSize;

  private BlockHasher(int blockSize) {
    this.blockSize = blockSize;
  }

  /**
   * Returns a hasher for blocks of {@code blockSize} tokens.
   *
   * @param blockSize tokens per block (vLLM's default is 16)
   * @return the hasher
   * @throws IllegalArgumentException if {@code blockSize} is not positive
   */
  public static BlockHasher of(int blockSize) {
    return new BlockHasher(requireBlockSize(blockSize));
  }

  static int requireBlockSize(int blockSize) {
    return Checks.positive("blockSize", blockSize);
  }

  /**
   * The number of tokens per block.
   *
   * @return the block size
   */
  public int blockSize() {
    return blockSize;
  }

  /**
   * The number of full blocks in a prompt of {@code tokenCount} tokens.
   *
   * @param tokenCount the prompt's tokens
   * @return its full blocks (a partial last block is not hashed)
   */
  public int fullBlocks(int tokenCount) {
    return tokenCount / blockSize;
  }

  /**
   * Returns the local hash of the full block starting at {@code tokens[offset]}.
   *
   * @param tokens the prompt's token ids
   * @param offset where the block starts in {@code tokens}
   * @param loraName the LoRA adapter, or null (or empty) for the base model
   * @param extraKeys the block's multimodal content hashes, or null
   * @return the block's local hash
   * @throws IndexOutOfBoundsException if the block does not fit in {@code tokens}
   */
  public long localHash(int[] tokens, int offset, @Nullable String loraName, long @Nullable [] extraKeys) {
    Objects.checkFromIndexSize(offset, blockSize, tokens.length);
    if (extraKeys == null || extraKeys.length == 0) {
      return hashBlock(tokens, offset, loraName);
    }
    LongHashFunction function = functionFor(loraName);
    long[] sorted = extraKeys.clone();
    Arrays.sort(sorted);
    ByteBuffer bytes = ByteBuffer.allocate(blockSize * 4 + sorted.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < blockSize; i++) {
      bytes.putInt(tokens[offset + i]);
    }
    for (long key : sorted) {
      bytes.putLong(key);
    }
    return function.hashBytes(bytes.array());
  }

  /**
   * The extra key a request's cache salt adds to its first block: XXH3-64 (seed 0) of the salt's UTF-8 bytes.
   *
   * <p>vLLM folds {@code cache_salt} into the extra keys of the block that starts at token 0 only
   * ({@code generate_block_hash_extra_keys} in {@code vllm/v1/core/kv_cache_utils.py}: {@code cache_salt_keys =
   * [request.cache_salt] if (start_token_idx == 0 and request.cache_salt) else []}); every later block differs
   * through the chained parent hash. This router does the same with its own hashes: the salt's key joins block 0's
   * extra keys (see {@link #withCacheSalt}), so a salted and an unsalted prompt share no block.
   *
   * @param salt the cache salt, not empty
   * @return its 64-bit key
   * @throws IllegalArgumentException if {@code salt} is empty
   */
  public static long cacheSaltKey(String salt) {
    Objects.requireNonNull(salt, "salt");
    if (salt.isEmpty()) {
      throw new IllegalArgumentException("salt must not be empty");
    }
    return UNSEEDED.hashBytes(salt.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Per-block extra keys with a cache salt folded into block 0, as the engines do (see {@link #cacheSaltKey}).
   *
   * @param blockExtraKeys per-block extra keys (index = block number), or null; not modified
   * @param salt the cache salt, or null or empty for none
   * @return {@code blockExtraKeys} itself when there is no salt, else a copy whose block 0 also holds the salt's key
   */
  public static long @Nullable [][] withCacheSalt(long @Nullable [][] blockExtraKeys, @Nullable String salt) {
    if (salt == null || salt.isEmpty()) {
      return blockExtraKeys;
    }
    long key = cacheSaltKey(salt);
    long[][] out = blockExtraKeys == null || blockExtraKeys.length == 0 ? new long[1][]
        : blockExtraKeys.clone();
    long[] first = out[0];
    if (first == null || first.length == 0) {
      out[0] = new long[] {key};
    } else {
      long[] keys = Arrays.copyOf(first, first.length + 1);
      keys[first.length] = key;
      out[0] = keys;
    }
    return out;
  }

  /**
   * Chains a block's local hash onto its parent's sequence hash.
   *
   * @param parentSequenceHash the sequence hash of the block before
   * @param localHash the block's local hash
   * @return the block's sequence hash
   */
  public static long sequenceHash(long parentSequenceHash, long localHash) {
    return Xxh3.hash16(parentSequenceHash, localHash, SEED);
  }

  /**
   * Writes the sequence hashes of the full blocks of {@code tokens[0..length)} into {@code out} and returns how
   * many were written. Allocation-free when {@code blockExtraKeys} is null.
   *
   * @param tokens the prompt's token ids
   * @param length how many of {@code tokens} form the prompt
   * @param loraName the LoRA adapter, or null (or empty) for the base model
   * @param blockExtraKeys per-block multimodal hashes (index = block number), or null
   * @param out receives the sequence hashes, from index 0
   * @return the number of hashes written: the prompt's full blocks
   * @throws IllegalArgumentException if {@code out} is too small or {@code length} is out of range
   */
  public int sequenceHashes(
      int[] tokens, int length, @Nullable String loraName, long @Nullable [][] blockExtraKeys, long[] out) {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(out, "out");
    if (length < 0 || length > tokens.length) {
      throw new IllegalArgumentException("length must be in [0, " + tokens.length + "] but was " + length);
    }
    int blocks = length / blockSize;
    if (out.length < blocks) {
      throw new IllegalArgumentException("out holds " + out.length + " hashes but " + blocks + " are needed");
    }
    if (blockExtraKeys == null && blockSize == 16) {
      // vLLM's default block and no multimodal keys: one seed for all blocks, no per-block dispatch.
      Xxh3.sequence16(tokens, blocks, cachedSeedFor(loraName), SEED, out);
      return blocks;
    }
    long previous = 0;
    for (int b = 0; b < blocks; b++) {
      int offset = b * blockSize;
      long local;
      long[] extra = blockExtraKeys != null && b < blockExtraKeys.length ? blockExtraKeys[b] : null;
      if (extra == null || extra.length == 0) {
        local = hashBlock(tokens, offset, loraName);
      } else {
        local = localHash(tokens, offset, loraName, extra);
      }
      previous = b == 0 ? local : Xxh3.hash16(previous, local, SEED);
      out[b] = previous;
    }
    return blocks;
  }

  /** Told of block 0's sequence hash as soon as it is hashed, before the rest of the prompt. */
  interface FirstBlock {
    /** Block 0's sequence hash is {@code sequenceHash}. */
    void hashed(long sequenceHash);
  }

  /**
   * {@link #sequenceHashes(int[], int, String, long[][], long[])}, telling {@code first} of block 0's hash before
   * the other blocks are hashed, so that the caller can start loading what it will look up first (a memory
   * latency that then overlaps with the hashing instead of following it). Only the base model's 16-token blocks
   * without extra keys are hashed in two parts; any other prompt is hashed whole and {@code first} is not called.
   * For a prompt with a negative token at an odd index, the hash {@code first} gets is not block 0's (the portable
   * loop hashes such prompts again afterwards): it is a hint, never an answer.
   */
  int sequenceHashes(int[] tokens, int length, @Nullable String loraName, long @Nullable [][] blockExtraKeys,
      long[] out, FirstBlock first) {
    int blocks = length / blockSize;
    if (blockExtraKeys != null || blockSize != 16 || !IntWords.AVAILABLE || (loraName != null && !loraName.isEmpty())
        || length < 0 || length > tokens.length || out.length < blocks || blocks == 0) {
      return sequenceHashes(tokens, length, loraName, blockExtraKeys, out); // and its argument checks
    }
    boolean words = Xxh3.sequence16Base(tokens, 1, out);
    first.hashed(out[0]);
    words &= blocks == 1 || Xxh3.sequence16BaseFrom(tokens, 1, blocks, out);
    if (!words) {
      Xxh3.sequence16(tokens, blocks, SEED, SEED, out);
    }
    return blocks;
  }

  /**
   * Returns the sequence hashes of every full block of {@code tokens}, for the base model.
   *
   * @param tokens the prompt's token ids
   * @return one sequence hash per full block
   */
  public long[] sequenceHashes(int[] tokens) {
    long[] out = new long[tokens.length / blockSize];
    sequenceHashes(tokens, tokens.length, null, null, out);
    return out;
  }

  private long hashBlock(int[] tokens, int offset, @Nullable String loraName) {
    if (blockSize == 16) {
      return Xxh3.hashInts16(tokens, offset, cachedSeedFor(loraName));
    }
    if (Xxh3.handlesInts(blockSize)) {
      return Xxh3.hashInts(tokens, offset, blockSize, cachedSeedFor(loraName));
    }
    return functionFor(loraName).hashInts(tokens, offset, blockSize);
  }

  private static long cachedSeedFor(@Nullable String loraName) {
    if (loraName == null || loraName.isEmpty()) {
      return SEED;
    }
    Long cached = LORA_SEEDS.get(loraName);
    if (cached != null) {
      return cached;
    }
    long seed = seedFor(loraName);
    if (LORA_SEEDS.size() < MAX_CACHED_LORA_SEEDS) {
      LORA_SEEDS.putIfAbsent(loraName, seed);
    }
    return seed;
  }

  /** The seed used for blocks of the given LoRA adapter. */
  static long seedFor(@Nullable String loraName) {
    if (loraName == null || loraName.isEmpty()) {
      return SEED;
    }
    return SEED + UNSEEDED.hashBytes(loraName.getBytes(StandardCharsets.UTF_8));
  }

  private static LongHashFunction functionFor(@Nullable String loraName) {
    if (loraName == null || loraName.isEmpty()) {
      return BASE;
    }
    LongHashFunction cached = LORA_FUNCTIONS.get(loraName);
    if (cached != null) {
      return cached;
    }
    LongHashFunction function = LongHashFunction.xx3(seedFor(loraName));
    if (LORA_FUNCTIONS.size() < MAX_CACHED_LORA_SEEDS) {
      LORA_FUNCTIONS.putIfAbsent(loraName, function);
    }
    return function;
  }

  @Override
  public String toString() {
    return "BlockHasher{blockSize=" + blockSize + "}";
  }
}
