package io.kvroute;

/**
 * How much of a request's prefix one worker holds: consecutive blocks from the start of the prompt; an immutable
 * value, thread-safe.
 *
 * @param blocks consecutive matching blocks held in any tier
 * @param gpuBlocks consecutive matching blocks held on the GPU ({@code gpuBlocks <= blocks})
 */
public record PrefixMatch(int blocks, int gpuBlocks) {
  /** No match. */
  public static final PrefixMatch NONE = new PrefixMatch(0, 0);

  /**
   * @param blocks consecutive matching blocks held in any tier
   * @param gpuBlocks consecutive matching blocks held on the GPU ({@code gpuBlocks <= blocks})
   * @throws IllegalArgumentException if a count is negative or {@code gpuBlocks > blocks}
   */
  public PrefixMatch {
    if (blocks < 0 || gpuBlocks < 0 || gpuBlocks > blocks) {
      throw new IllegalArgumentException("need 0 <= gpuBlocks <= blocks but got gpuBlocks=" + gpuBlocks
          + ", blocks=" + blocks);
    }
  }

  /**
   * The slowest tier the match needs: GPU when every matched block is on the GPU, else HOST.
   *
   * @return {@link StorageTier#GPU} or {@link StorageTier#HOST}
   */
  public StorageTier tier() {
    return gpuBlocks == blocks ? StorageTier.GPU : StorageTier.HOST;
  }
}
