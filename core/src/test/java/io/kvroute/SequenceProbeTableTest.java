package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PrefixTable}'s sequence probe table (open addressing, linear probing, backward-shift deletion) under the
 * worst case for it: every sequence hash chosen so that its home slot lies in a window of a few slots around the
 * table's end, so that runs are long, wrap around to slot 0 and hold many keys, copies of one key on several
 * workers and shadows (a second engine block of one worker with the same content). After every store and release,
 * the table must answer as a plain map model does: which (worker-tier, sequence) pairs have a chained entry, and,
 * for a one-block match, which slots hold each sequence; and the invariants (every chained entry reachable from
 * its home with no free slot between, no other slot in use) must hold.
 */
class SequenceProbeTableTest {
  private static final int CAPACITY = 256;

  static Stream<Arguments> seeds() {
    return IntStream.range(0, 12).mapToObj(i -> Arguments.of("seed " + (900 + i), 900L + i));
  }

  @Test
  void homesStartTheGroupsOfEightAndReachEveryGroup() {
    // A home is slot LINE_OFFSET of one of the n / 8 groups (a cache line each, see PrefixTable.home), inside the
    // table; fingerprints spread over [0, 2^32) reach every group, the first and the last included.
    for (int n : new int[] {16, 17, 513, PrefixTable.probeSlots(1 << 20)}) {
      int groups = n / 8;
      boolean[] reached = new boolean[groups];
      SplittableRandom random = new SplittableRandom(n);
      for (int k = 0; k < 64 * groups; k++) {
        int home = PrefixTable.home(random.nextInt(), n);
        assertTrue(home >= 0 && home < n, "home " + home + " of " + n);
        assertEquals(PrefixTable.LINE_OFFSET, home % 8, "home " + home);
        reached[home / 8] = true;
      }
      assertEquals(PrefixTable.LINE_OFFSET, PrefixTable.home(0, n), "the lowest fingerprint: group 0");
      assertEquals((groups - 1) * 8 + PrefixTable.LINE_OFFSET, PrefixTable.home(-1, n), "the highest: the last group");
      for (int g = 0; g < groups; g++) {
        assertTrue(reached[g], "group " + g + " of " + groups);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void collidingRunsAnswerAsTheModel(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    PrefixTable table = new PrefixTable(CAPACITY);
    table.ensureSlots(4);
    int n = table.seqSlots.length;
    assertEquals(PrefixTable.probeSlots(CAPACITY), n);
    // Sequence hashes whose home is one of the last 3 or first 3 slots (homes are the first slot of a group of 8:
    // the last group's, n - 3, is the one such home).
    long[] seqs = new long[12];
    for (int k = 0; k < seqs.length; ) {
      long seq = random.nextLong();
      int home = PrefixTable.home(PrefixTable.mix(seq), n);
      if (home >= n - 3 || home < 3) {
        seqs[k++] = seq;
      }
    }
    // The model: (slotTier, engine hash) -> [sequence index, store count].
    Map<Long, int[]> model = new HashMap<>();
    List<long[]> held = new ArrayList<>();
    long nextEngine = 1;
    for (int step = 0; step < 1500; step++) {
      boolean store = held.isEmpty() || model.size() < CAPACITY - 8 && random.nextInt(5) < 3;
      if (store) {
        int slotTier = random.nextInt(4) * PrefixTable.TIERS; // GPU tier of slots 0..3
        long engine;
        int s;
        if (!held.isEmpty() && random.nextInt(4) == 0) { // store an already held block again
          long[] h = held.get(random.nextInt(held.size()));
          slotTier = (int) h[0];
          engine = h[1];
          s = model.get(key(slotTier, engine))[0];
        } else {
          engine = nextEngine++;
          s = random.nextInt(seqs.length);
          held.add(new long[] {slotTier, engine});
        }
        table.upsert(slotTier, engine, seqs[s], false);
        model.computeIfAbsent(key(slotTier, engine), k -> new int[] {0, 0});
        int[] m = model.get(key(slotTier, engine));
        m[0] = s;
        m[1]++;
      } else {
        int at = random.nextInt(held.size());
        long[] h = held.get(at);
        assertTrue(table.release((int) h[0], h[1]), name + ": release of a held block");
        int[] m = model.get(key((int) h[0], h[1]));
        if (--m[1] == 0) {
          model.remove(key((int) h[0], h[1]));
          held.set(at, held.get(held.size() - 1));
          held.remove(held.size() - 1);
        }
      }
      IndexInvariants.check(table);
      for (int s = 0; s < seqs.length; s++) {
        boolean[] holds = new boolean[4];
        for (long[] h : held) {
          if (model.get(key((int) h[0], h[1]))[0] == s) {
            holds[(int) h[0] / PrefixTable.TIERS] = true;
          }
        }
        PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
        int touched = table.match(new long[] {seqs[s]}, 1, scratch, 4);
        int expected = 0;
        for (int slot = 0; slot < 4; slot++) {
          boolean primary = table.findPrimary(slot * PrefixTable.TIERS, seqs[s]) != PrefixTable.NIL;
          assertEquals(holds[slot], primary, name + " step " + step + ": chained entry of slot " + slot);
          assertEquals(holds[slot] ? 1 : 0, scratch.depth[slot], name + " step " + step + ": depth of " + slot);
          expected += holds[slot] ? 1 : 0;
        }
        assertEquals(expected, touched, name + " step " + step + ": slots touched");
      }
    }
  }

  private static long key(int slotTier, long engine) {
    return engine * 64 + slotTier;
  }
}
