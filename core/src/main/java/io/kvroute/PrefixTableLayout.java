package io.kvroute;

/**
 * The fields of {@link PrefixTable} that selections read, apart from those the writer changes on every block; not
 * thread-safe (see {@link PrefixTable}).
 *
 * <p>A selection reads the table's array references (the entries, the probe slots, the live-entry counts) on
 * every call, and without this layout they would share a 64-byte cache line with the counters and list heads
 * ({@code size}, {@code freeHead}, {@code lruTail}, ...) that the ingesting thread writes for every block it
 * stores or removes. Each such write takes the line away from the selecting core, so its next read of an array
 * reference misses to the other core's cache (about 100 ns, once or several times per selection while events
 * stream in: the candidate loop reloads the references in each of its iterations), although no reference
 * changed. HotSpot lays out a superclass's fields before its subclass's, so 64 bytes of padding on each side of
 * the references keep both the object allocated before this one and the writer's fields (in {@link PrefixTable})
 * off their line, whatever the object's alignment.
 */
abstract class PrefixTableLayout {
  final int maxEntries; // the 4 bytes after the object header; read-only
  long p00, p01, p02, p03, p04, p05, p06, p07;
  long[] table;
  // The sequence-hash lookup: open addressing with linear probing, one long per slot, fingerprint (hi 32, the
  // sequence hash mixed, which also gives the home slot) | entry (lo 32), EMPTY when free. It holds every entry that
  // is neither an orphan nor a shadow. A lookup reads its home slot and the run after it (8 slots a cache line),
  // and an entry only when its fingerprint matches, so a block of a match costs one random load, not a bucket
  // head and then a chain of entries; and all of a prompt's slots can be loaded before any entry. At most 1/2 full.
  long[] seqSlots;
  int[] engHeads;
  int[] slotEntries = new int[16]; // live entries per slot
  // Holes per slot, over its tiers: chained entries whose parent content the same slot-tier does not hold (or whose
  // parent is not known). A slot without holes holds, in each tier, every prefix of every sequence it holds, so the
  // set of such slots holding block i of a prompt shrinks as i grows, and match can bisect the prompt's depth for
  // them instead of probing every block (see matchBisecting). Kept exact by linkContent and unlinkContent: a
  // chained entry counts its held children (LINK hi 32), and children whose parent is not held wait in `waiting`.
  int[] slotHoles = new int[16];
  int p08; // fills the 4 bytes before the padding: no writer field may take them

  PrefixTableLayout(int maxEntries) {
    this.maxEntries = maxEntries;
  }

  /** The padding after the selections' fields; the writer's fields follow in {@link PrefixTable}. */
  abstract static class Padded extends PrefixTableLayout {
    long p10, p11, p12, p13, p14, p15, p16, p17;

    Padded(int maxEntries) {
      super(maxEntries);
    }
  }
}
