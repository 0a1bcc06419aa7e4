package io.kvroute;

import static io.kvroute.PrefixTable.LINK;
import static io.kvroute.PrefixTable.LRU;
import static io.kvroute.PrefixTable.META;
import static io.kvroute.PrefixTable.NIL;
import static io.kvroute.PrefixTable.NO_PARENT;
import static io.kvroute.PrefixTable.ROOT;
import static io.kvroute.PrefixTable.ORPHAN;
import static io.kvroute.PrefixTable.REFCOUNT_MASK;
import static io.kvroute.PrefixTable.SEQ;
import static io.kvroute.PrefixTable.SHADOW;
import static io.kvroute.PrefixTable.STRIDE;
import static io.kvroute.PrefixTable.TIERS;

import it.unimi.dsi.fastutil.ints.IntArrayList;
import java.util.HashMap;
import java.util.Map;

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
   * The entries found by the sequence lookup for {@code seq}, over all workers and tiers.
   *
   * @param index the index
   * @param seq a sequence hash
   * @return the entries holding it in the sequence lookup
   */
  public static int sequenceChainLength(KvIndexer index, long seq) {
    return index.inspect(t -> {
      int n = 0;
      long[] probe = t.seqSlots;
      for (int pos = PrefixTable.home(PrefixTable.mix(seq), probe.length); (int) probe[pos] >= 0;
          pos = (pos + 1) % probe.length) {
        n += t.table[(int) probe[pos] * STRIDE + SEQ] == seq ? 1 : 0;
      }
      return n;
    });
  }

  static void check(PrefixTable t) {
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
    int chained = 0;
    for (int e = 0; e < t.highWater; e++) {
      long meta = table[e * STRIDE + META];
      chained += (meta & REFCOUNT_MASK) != 0 && (meta & (ORPHAN | SHADOW)) == 0 ? 1 : 0;
    }
    long[] probe = t.seqSlots;
    int used = 0;
    for (int pos = 0; pos < probe.length; pos++) {
      long v = probe[pos];
      if (v == PrefixTable.EMPTY) {
        continue;
      }
      int e = (int) v;
      if (e < 0 || e >= t.highWater) {
        throw new IllegalStateException("probe slot " + pos + " names entry " + e + " outside the table");
      }
      long meta = table[e * STRIDE + META];
      if ((meta & REFCOUNT_MASK) == 0 || (meta & (ORPHAN | SHADOW)) != 0) {
        throw new IllegalStateException("probe slot " + pos + " names entry " + e + ", free, orphan or shadow");
      }
      if ((int) (v >>> 32) != PrefixTable.mix(table[e * STRIDE + SEQ])) {
        throw new IllegalStateException("probe slot " + pos + " has a fingerprint not its entry's");
      }
      for (int p = PrefixTable.home((int) (v >>> 32), probe.length); p != pos; p = (p + 1) % probe.length) {
        if (probe[p] == PrefixTable.EMPTY) {
          throw new IllegalStateException("probe slot " + pos + " unreachable from its home (free slot " + p + ")");
        }
      }
      used++;
    }
    if (used != chained) {
      throw new IllegalStateException(chained + " chained entries but " + used + " probe slots in use");
    }
    if (used * 2L > probe.length) {
      throw new IllegalStateException(used + " of " + probe.length + " probe slots in use: over half");
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
    checkHoles(t);
  }

  /**
   * The hole counts, recomputed from the definition: per slot, the chained entries whose parent is not known or
   * whose slot-tier holds no chained entry for their parent's content; per chained entry, the chained entries of
   * its slot-tier naming its content as their parent; and the children waiting for a content not held.
   */
  private static void checkHoles(PrefixTable t) {
    long[] table = t.table;
    int[] holes = new int[t.slotHoles.length];
    Map<Long, Integer> children = new HashMap<>(); // chained entry -> children
    Map<Long, Integer> waiting = new HashMap<>();
    for (int e = 0; e < t.highWater; e++) {
      int base = e * STRIDE;
      long meta = table[base + META];
      if ((meta & REFCOUNT_MASK) == 0 || (meta & (ORPHAN | SHADOW)) != 0 || (meta & ROOT) != 0) {
        continue;
      }
      int slotTier = (int) (meta >>> 32);
      long parent = t.parents[e];
      if ((meta & NO_PARENT) != 0 || parent == table[base + SEQ]) {
        holes[slotTier / TIERS]++;
        continue;
      }
      int p = t.findPrimary(slotTier, parent);
      if (p == NIL) {
        holes[slotTier / TIERS]++;
        waiting.merge(PrefixTable.groupKey(slotTier, parent), 1, Integer::sum);
      } else {
        children.merge((long) p, 1, Integer::sum);
      }
    }
    for (int s = 0; s < holes.length; s++) {
      if (holes[s] != t.slotHoles[s]) {
        throw new IllegalStateException("slot " + s + " counts " + t.slotHoles[s] + " holes but has " + holes[s]);
      }
    }
    for (int e = 0; e < t.highWater; e++) {
      long meta = table[e * STRIDE + META];
      if ((meta & REFCOUNT_MASK) == 0 || (meta & (ORPHAN | SHADOW)) != 0) {
        continue;
      }
      int expected = children.getOrDefault((long) e, 0);
      if (t.children(e) != expected) {
        throw new IllegalStateException("entry " + e + " counts " + t.children(e) + " children but has " + expected);
      }
    }
    Map<Long, Integer> counted = new HashMap<>();
    t.waiting.long2IntEntrySet().forEach(x -> counted.put(x.getLongKey(), x.getIntValue()));
    if (!counted.equals(waiting)) {
      throw new IllegalStateException("waiting children " + counted + " but expected " + waiting);
    }
  }

  private static boolean inSeqChain(PrefixTable t, int target) {
    long[] probe = t.seqSlots;
    for (int pos = PrefixTable.home(PrefixTable.mix(t.table[target * STRIDE + SEQ]), probe.length);
        (int) probe[pos] >= 0; pos = (pos + 1) % probe.length) {
      if ((int) probe[pos] == target) {
        return true;
      }
    }
    return false;
  }
}
