package io.kvroute;

import static io.kvroute.PrefixTable.LINK;
import static io.kvroute.PrefixTable.LRU;
import static io.kvroute.PrefixTable.META;
import static io.kvroute.PrefixTable.NIL;
import static io.kvroute.PrefixTable.ORPHAN;
import static io.kvroute.PrefixTable.REFCOUNT_MASK;
import static io.kvroute.PrefixTable.SEQ;
import static io.kvroute.PrefixTable.SHADOW;
import static io.kvroute.PrefixTable.STRIDE;
import static io.kvroute.PrefixTable.TIERS;

import it.unimi.dsi.fastutil.ints.IntArrayList;

/**
 * Consistency checks of a {@link KvIndexer}'s tables, for tests (here and, through core's test jar, in other
 * modules); each takes the index's shared lock.
 */
public final class IndexInvariants {
  private IndexInvariants() {}

  /**
   * Checks that every live entry is reachable by its engine hash and (unless an orphan or shadow) its sequence
   * hash, that shadows are in their groups, that counts per slot, the size and the store-order list agree, and that
   * the budget holds.
   *
   * @param index the index
   * @throws IllegalStateException if the index is internally inconsistent
   */
  public static void check(KvIndexer index) {
    index.inspect(t -> {
      check(t);
      return null;
    });
  }

  /**
   * The entries in the sequence chain of {@code seq}, over all workers and tiers.
   *
   * @param index the index
   * @param seq a sequence hash
   * @return the entries holding it in the chain
   */
  public static int sequenceChainLength(KvIndexer index, long seq) {
    return index.inspect(t -> {
      int n = 0;
      int e = t.seqHeads[PrefixTable.mix(seq) & (t.seqHeads.length - 1)];
      while (e != NIL) {
        n += t.table[e * STRIDE + SEQ] == seq ? 1 : 0;
        e = (int) (t.table[e * STRIDE + LINK] >> 32);
      }
      return n;
    });
  }

  private static void check(PrefixTable t) {
    long[] table = t.table;
    int live = 0;
    int shadowCount = 0;
    int[] perSlot = new int[t.slotEntries.length];
    for (int e = 0; e < t.highWater; e++) {
      long meta = table[e * STRIDE + META];
      if ((meta & REFCOUNT_MASK) == 0) {
        continue;
      }
      live++;
      int slotTier = (int) (meta >>> 32);
      perSlot[slotTier / TIERS]++;
      if (t.findEngine(slotTier, table[e * STRIDE + PrefixTable.ENG]) != e) {
        throw new IllegalStateException("entry " + e + " not reachable by engine hash");
      }
      if ((meta & SHADOW) != 0) {
        IntArrayList group = t.shadows.get(PrefixTable.groupKey(slotTier, table[e * STRIDE + SEQ]));
        int position = (int) (table[e * STRIDE + LINK] >> 32);
        if (group == null || position >= group.size() || group.getInt(position) != e) {
          throw new IllegalStateException("shadow entry " + e + " missing from its group");
        }
        if (t.findPrimary(slotTier, table[e * STRIDE + SEQ]) == NIL) {
          throw new IllegalStateException("shadow entry " + e + " has no chained entry for its content");
        }
        shadowCount++;
      } else if ((meta & ORPHAN) == 0) {
        if (!inSeqChain(t, e)) {
          throw new IllegalStateException("entry " + e + " not reachable by sequence hash");
        }
        if (t.findPrimary(slotTier, table[e * STRIDE + SEQ]) != e) {
          throw new IllegalStateException("entry " + e + " duplicates chained content of its worker and tier");
        }
      }
    }
    if (live != t.size) {
      throw new IllegalStateException("size " + t.size + " but " + live + " live entries");
    }
    if (shadowCount != t.shadowEntries) {
      throw new IllegalStateException(t.shadowEntries + " shadows counted but " + shadowCount + " found");
    }
    for (int s = 0; s < perSlot.length; s++) {
      if (perSlot[s] != t.slotEntries[s]) {
        throw new IllegalStateException("slot " + s + " counts " + t.slotEntries[s] + " but holds " + perSlot[s]);
      }
    }
    int lruCount = 0;
    for (int e = t.lruHead; e != NIL; e = (int) table[e * STRIDE + LRU]) {
      lruCount++;
      if (lruCount > t.size) {
        throw new IllegalStateException("store-order list longer than size");
      }
    }
    if (lruCount != t.size) {
      throw new IllegalStateException("store-order list has " + lruCount + " entries, size " + t.size);
    }
    if (t.size > t.maxEntries) {
      throw new IllegalStateException("size " + t.size + " exceeds budget " + t.maxEntries);
    }
  }

  private static boolean inSeqChain(PrefixTable t, int target) {
    int e = t.seqHeads[PrefixTable.mix(t.table[target * STRIDE + SEQ]) & (t.seqHeads.length - 1)];
    while (e != NIL) {
      if (e == target) {
        return true;
      }
      e = (int) (t.table[e * STRIDE + LINK] >> 32);
    }
    return false;
  }
}
