package io.kvroute.sim;

/**
 * The simulated engine's own block hash, deliberately unlike the router's: a seeded 64-bit mix of the parent
 * block's engine hash and the block's tokens; immutable and thread-safe.
 *
 * <p>Like vLLM's hash without {@code PYTHONHASHSEED}, the seed is random per process unless configured, so the
 * router can only rely on these hashes as opaque per-worker keys for parents and removals.
 */
final class EngineHasher {
  private final long seed;
  private final long root;

  EngineHasher(long seed) {
    this.seed = seed;
    this.root = Mix.splitMix64(seed ^ 0x5bd1e9955bd1e995L);
  }

  /** The hash of the block {@code tokens[offset .. offset+blockSize)} whose parent block hashed to {@code parent}. */
  long hash(boolean hasParent, long parent, int[] tokens, int offset, int blockSize) {
    long h = Mix.fmix64(seed + (hasParent ? parent : root) * 0x9e3779b97f4a7c15L);
    for (int i = offset; i < offset + blockSize; i++) {
      h = Long.rotateLeft(h ^ (tokens[i] & 0xffffffffL), 29) * 0xc2b2ae3d27d4eb4fL;
    }
    return Mix.fmix64(h ^ blockSize);
  }
}
