package io.kvroute;

import org.jspecify.annotations.Nullable;

/** Where an engine holds a cached block; an immutable enum, thread-safe. */
public enum StorageTier {
  /** Accelerator memory: a hit needs no transfer. */
  GPU,
  /** Host (CPU) memory, such as vLLM's CPU offload: a hit needs a transfer to the GPU. */
  HOST,
  /** Local disk or external storage: the slowest tier. */
  DISK;

  /**
   * Maps an engine's {@code medium} string to a tier: null, {@code GPU} and {@code DEVICE} are GPU; {@code CPU},
   * {@code CPU_PINNED} and {@code CPU_TIER1} are host; anything else (DISK, STORAGE, CPU_TIER2, NVME, EXTERNAL, …)
   * is disk.
   *
   * @param medium the engine's medium name (case-insensitive), or null
   * @return the tier, never null
   */
  public static StorageTier fromMedium(@Nullable String medium) {
    if (medium == null || eq(medium, "GPU") || eq(medium, "DEVICE") || eq(medium, "CUDA")) {
      return GPU;
    }
    if (eq(medium, "CPU") || eq(medium, "CPU_PINNED") || eq(medium, "CPU_TIER1") || eq(medium, "HOST")) {
      return HOST;
    }
    return DISK;
  }

  // Case-insensitive without allocating: this runs for every decoded event.
  private static boolean eq(String medium, String name) {
    return medium.equalsIgnoreCase(name);
  }
}
