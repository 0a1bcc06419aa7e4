package io.kvroute;

import java.util.Locale;
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
   */
  public static StorageTier fromMedium(@Nullable String medium) {
    if (medium == null) {
      return GPU;
    }
    switch (medium.toUpperCase(Locale.ROOT)) {
      case "GPU":
      case "DEVICE":
      case "CUDA":
        return GPU;
      case "CPU":
      case "CPU_PINNED":
      case "CPU_TIER1":
      case "HOST":
        return HOST;
      default:
        return DISK;
    }
  }
}
