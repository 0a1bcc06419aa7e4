package io.kvroute;

import io.kvroute.internal.Checks;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A change to one engine's KV cache, as vLLM and SGLang report it; implementations are immutable values and
 * thread-safe once constructed (arrays are owned by the event and must not be modified after construction).
 *
 * <p>Engine block hashes are opaque per-worker keys, held as {@code long} with unsigned meaning: they resolve
 * parents and removals only. Prefix matching uses hashes the router computes itself from {@link
 * BlockStored#tokenIds()}, so engines with different hash seeds still match each other.
 */
public sealed interface KvEvent permits KvEvent.BlockStored, KvEvent.BlockRemoved, KvEvent.AllBlocksCleared {

  /**
   * Blocks an engine computed and now holds, in prefix order: block {@code i} holds tokens
   * {@code tokenIds[i*blockSize .. (i+1)*blockSize)}, and the first block's parent is {@code parentBlockHash}
   * (null for a block at the start of a sequence).
   *
   * @param blockHashes the engine's hash of each block
   * @param parentBlockHash the engine hash of the block before the first one, or null
   * @param tokenIds the tokens of all the blocks, {@code blockHashes.length * blockSize} of them
   * @param blockSize tokens per block as the engine sees it; 0 marks an offload placeholder without tokens
   * @param loraName the LoRA adapter the blocks were computed with, or null for the base model
   * @param tier where the blocks are held
   * @param cacheSpecKind the KV cache group kind ({@code full_attention}, {@code sliding_window}, …), or null when
   *     the engine does not say; only full attention (and MLA) groups count toward prefix matches
   * @param extraKeys per-block multimodal content hashes (null, or one possibly-null entry per block)
   */
  record BlockStored(
      long[] blockHashes,
      @Nullable Long parentBlockHash,
      int[] tokenIds,
      int blockSize,
      @Nullable String loraName,
      StorageTier tier,
      @Nullable String cacheSpecKind,
      long @Nullable [][] extraKeys)
      implements KvEvent {

    /**
     * @param blockHashes the engine's hash of each block
     * @param parentBlockHash the engine hash of the block before the first one, or null
     * @param tokenIds the tokens of all the blocks, {@code blockHashes.length * blockSize} of them
     * @param blockSize tokens per block as the engine sees it; 0 marks an offload placeholder without tokens
     * @param loraName the LoRA adapter the blocks were computed with, or null for the base model
     * @param tier where the blocks are held
     * @param cacheSpecKind the KV cache group kind ({@code full_attention}, {@code sliding_window}, …), or null when
     *     the engine does not say; only full attention (and MLA) groups count toward prefix matches
     * @param extraKeys per-block multimodal content hashes (null, or one possibly-null entry per block)
     * @throws NullPointerException if an array or the tier is null
     * @throws IllegalArgumentException if {@code blockSize} is negative
     */
    public BlockStored {
      Objects.requireNonNull(blockHashes, "blockHashes");
      Objects.requireNonNull(tokenIds, "tokenIds");
      Objects.requireNonNull(tier, "tier");
      Checks.notNegative("blockSize", blockSize);
    }

    /**
     * A stored event for GPU blocks of the base model with no multimodal keys.
     *
     * @param blockHashes the engine's hash of each block
     * @param parentBlockHash the engine hash of the block before the first one, or null for a prefix's first block
     * @param tokenIds the tokens of all the blocks, {@code blockHashes.length * blockSize} of them
     * @param blockSize tokens per block as the engine sees it
     * @return a stored event of GPU blocks, without LoRA adapter, cache group kind or multimodal keys
     */
    public static BlockStored of(long[] blockHashes, @Nullable Long parentBlockHash, int[] tokenIds, int blockSize) {
      return new BlockStored(blockHashes, parentBlockHash, tokenIds, blockSize, null, StorageTier.GPU, null, null);
    }

    /**
     * Whether these blocks belong to a KV cache group that counts toward prefix matches.
     *
     * @return true for full attention and MLA groups and when the engine names no kind; false for sliding window, Mamba
     *     and other groups
     */
    public boolean countsTowardPrefix() {
      return countsTowardPrefix(cacheSpecKind);
    }

    /** Whether blocks of this KV cache spec kind (null: not sent) count toward prefixes. */
    static boolean countsTowardPrefix(@Nullable String cacheSpecKind) {
      if (cacheSpecKind == null) {
        return true;
      }
      String kind = cacheSpecKind.toLowerCase(Locale.ROOT);
      return kind.equals("full_attention") || kind.equals("mla_attention") || kind.equals("full");
    }

    /**
     * The multimodal keys of block {@code index}, or null.
     *
     * @param index the block's position in this event, from 0
     * @return the block's keys, or null when the event has none for it
     */
    public long @Nullable [] extraKeysOf(int index) {
      return extraKeys != null && index < extraKeys.length ? extraKeys[index] : null;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockStored other
          && Arrays.equals(blockHashes, other.blockHashes)
          && Objects.equals(parentBlockHash, other.parentBlockHash)
          && Arrays.equals(tokenIds, other.tokenIds)
          && blockSize == other.blockSize
          && Objects.equals(loraName, other.loraName)
          && tier == other.tier
          && Objects.equals(cacheSpecKind, other.cacheSpecKind)
          && Arrays.deepEquals(extraKeys, other.extraKeys);
    }

    @Override
    public int hashCode() {
      return Objects.hash(Arrays.hashCode(blockHashes), parentBlockHash, Arrays.hashCode(tokenIds), blockSize,
          loraName, tier, cacheSpecKind, Arrays.deepHashCode(extraKeys));
    }

    @Override
    public String toString() {
      return "BlockStored{blocks=" + hex(blockHashes) + ", parent=" + (parentBlockHash == null ? "none"
          : Long.toHexString(parentBlockHash)) + ", tokens=" + tokenIds.length + ", blockSize=" + blockSize
          + (loraName == null ? "" : ", lora=" + loraName) + ", tier=" + tier
          + (cacheSpecKind == null ? "" : ", kind=" + cacheSpecKind) + "}";
    }
  }

  /** Blocks an engine evicted from {@code tier}. */
  record BlockRemoved(long[] blockHashes, StorageTier tier) implements KvEvent {
    /**
     * @param blockHashes the engine's hashes of the removed blocks
     * @param tier the tier they were evicted from
     * @throws NullPointerException if an argument is null
     */
    public BlockRemoved {
      Objects.requireNonNull(blockHashes, "blockHashes");
      Objects.requireNonNull(tier, "tier");
    }

    /**
     * A removal from the GPU tier.
     *
     * @param blockHashes the engine's hashes of the removed blocks
     * @return a removal from {@link StorageTier#GPU}
     */
    public static BlockRemoved of(long... blockHashes) {
      return new BlockRemoved(blockHashes, StorageTier.GPU);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockRemoved other && Arrays.equals(blockHashes, other.blockHashes) && tier == other.tier;
    }

    @Override
    public int hashCode() {
      return 31 * Arrays.hashCode(blockHashes) + tier.hashCode();
    }

    @Override
    public String toString() {
      return "BlockRemoved{blocks=" + hex(blockHashes) + ", tier=" + tier + "}";
    }
  }

  /** The engine dropped its whole cache (for example {@code /reset_prefix_cache}). */
  record AllBlocksCleared() implements KvEvent {
    /** The one instance. */
    public static final AllBlocksCleared INSTANCE = new AllBlocksCleared();
  }

  private static String hex(long[] hashes) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < hashes.length && i < 4; i++) {
      sb.append(i == 0 ? "" : ",").append(Long.toHexString(hashes[i]));
    }
    return sb.append(hashes.length > 4 ? ",…(" + hashes.length + ")]" : "]").toString();
  }
}
