package io.kvroute;

import it.unimi.dsi.fastutil.ints.IntArrayList;
import it.unimi.dsi.fastutil.longs.Long2IntOpenHashMap;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.Arrays;

/**
 * The flat primitive tables behind {@link KvIndexer}: one entry per (worker slot, tier, engine block), found by the
 * router's sequence hash (the chains requests match) and by the engine hash (the chains events name), kept in store
 * order for the entry budget; not thread-safe: {@link KvIndexer} calls every method under its lock (the shared lock
 * for {@link #match} and the {@code touch}/{@code prefetch} methods, which only read, the exclusive lock for the
 * rest).
 *
 * <p>The table knows slots (small ints), never workers; what an event means (orphans, tokenless stores, validation)
 * is {@link KvIndexer}'s. The {@link #match} loop lives here, next to the layout it walks.
 *
 * <p>Fields are package-private so that the test-scope invariant check ({@code IndexInvariants}) can read them.
 */
final class PrefixTable extends PrefixTableLayout.Padded {
  // Entry layout in `table`, STRIDE longs per entry. What a match reads (SEQ, then LINK, and META on a hit) comes
  // first and together: 24 bytes, which share one 64-byte cache line for 6 of the 8 positions an entry takes
  // modulo a line (40-byte entries), where SEQ..LINK spanning 32 bytes did for 5 of 8, and SEQ with LINK alone
  // share a line for 7 of 8 (was 5 of 8).
  static final int STRIDE = 5;
  static final int SEQ = 0; // router sequence hash
  // A chained entry's held children (hi 32: see slotHoles) or a shadow's position in its group (hi 32) | next in
  // engine chain / free list (lo 32)
  static final int LINK = 1;
  // slotTier (hi 32) | orphan bit 31 | shadow bit 30 | root bit 29 | no-parent bit 28 | refcount (low 28)
  static final int META = 2;
  static final int ENG = 3; // engine hash
  static final int LRU = 4; // previous (hi 32) | next (lo 32) in store order
  static final long ORPHAN = 1L << 31;
  static final long SHADOW = 1L << 30;
  static final long ROOT = 1L << 29; // the first block of a sequence: it has no parent
  static final long NO_PARENT = 1L << 28; // a block whose parent is not known: counted as a hole while chained
  static final long REFCOUNT_MASK = NO_PARENT - 1;
  static final int NIL = -1;
  static final int INITIAL_CAPACITY = 1024;
  static final int TIERS = 4; // slotTier = slot * TIERS + tier ordinal
  static final int GATHER = 16; // blocks whose probe slots are fetched together when matching, after block 0
  static final int MAX_GATHER = 128; // and then, once those all matched (1 KB of scratch)
  static final long EMPTY = -1L; // a free probe slot: its entry half is NIL
  static final int RUN_AHEAD = 8; // a match also loads this far past a home slot: the next cache line of its run
  // After block 0, the match's walk stops at the entries it needs (see match), which sit within ENTRY_AHEAD slots
  // of their home for nine blocks in ten at half fill: loading the slot ENTRY_AHEAD on brings the next line only
  // when the home lies in the upper half of its line, where such an entry may have crossed into it.
  static final int ENTRY_AHEAD = 4;
  // A bisecting match (see matchBisecting) splits an interval whose ends differ into this many parts a round: 7
  // probes, loaded together, per interval and round, and log8 of the prompt's blocks rounds (3 for 128 blocks,
  // against 7 halving), each round waiting for one or two dependent cache misses. Measured on a prompt held to a
  // random depth (SameJvmAb select PARTIAL): 4 parts took 20 to 30 % longer than 8, and 16 no less than 8.
  static final int SPLIT = 8;
  // Rounds of chain entries touchChains loads ahead of the exclusive phase: a chain holds half an entry on average
  // at full capacity (twice as many buckets as entries), so 4 rounds cover all but about 0.02 % of the walks (0.4 %
  // at one entry a bucket); the rest are walked under the lock.
  static final int MAX_TOUCH_ROUNDS = 4;

  // The arrays (table, seqSlots, engHeads, slotEntries) and maxEntries are in PrefixTableLayout, apart from the
  // fields below, which the writer changes on every block.
  // Per entry: the parent block's sequence hash, unless ROOT or NO_PARENT (not for orphans). Beside the table rather
  // than in it: only the hole counts read it, on a store or a removal (never a selection), and a sequence's entries
  // are consecutive.
  long[] parents;
  int capacity;
  int size;
  int highWater; // entries [0, highWater) have been handed out at least once
  int freeHead = NIL;
  int lruHead = NIL;
  int lruTail = NIL;
  // slotEntries and slotHoles (holes per slot, over its tiers: see PrefixTableLayout) are in PrefixTableLayout.
  // (slot-tier, parent sequence hash) -> chained children of that slot-tier whose parent it does not hold.
  final Long2IntOpenHashMap waiting = new Long2IntOpenHashMap();
  // Shadow entries by (worker-tier, content): rare, so a map of small lists is cheap.
  final Long2ObjectOpenHashMap<IntArrayList> shadows = new Long2ObjectOpenHashMap<>();
  int shadowEntries;
  long evictedEntries;
  private long prefetchSink; // keeps prefetching loads from being optimised away
  private int lastJoined = NIL; // the entry joined last: most often the parent of the next one (see primaryOf)
  private int[] chainScratch = new int[64]; // touchChains' entries found per key
  private int[] homeScratch = new int[64]; // touchChains' probe homes per key

  PrefixTable(int maxEntries) {
    super(maxEntries);
    allocate(Math.min(INITIAL_CAPACITY, maxEntries));
  }

  /** Makes room for slots {@code [0, slots)}. */
  void ensureSlots(int slots) {
    if (slotEntries.length < slots) {
      slotEntries = Arrays.copyOf(slotEntries, Math.max(slots, slotEntries.length * 2));
    }
    if (slotHoles.length < slots) {
      slotHoles = Arrays.copyOf(slotHoles, Math.max(slots, slotHoles.length * 2));
    }
  }

  /** Entries held by {@code slot}; a racy read is fine for tie-breaking. */
  int entriesOfSlot(int slot) {
    int[] counts = slotEntries;
    return slot >= 0 && slot < counts.length ? counts[slot] : 0;
  }

  /** Heap held by the tables, in bytes. */
  long bytes() {
    return (long) (table.length + parents.length + seqSlots.length) * Long.BYTES
        + (long) engHeads.length * Integer.BYTES;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Matching (shared lock)

  /**
   * Fills {@code scratch} with each slot's matched depth and returns the number of slots touched; the caller holds
   * the shared lock and must call {@code scratch.reset(touched)} when done.
   *
   * <p>Block 0 is walked first, alone (a miss costs that one lookup). If no slot holding it has holes (see
   * {@code slotHoles}), the rest is bisected ({@link #matchBisecting}): a prompt held to its end costs one more
   * lookup, where walking every block cost one random page of the probe table per block. Otherwise every block is
   * walked, in chunks.
   *
   * @param slots the slot high-water mark (every slot an entry can name is below it)
   */
  int match(long[] hashes, int count, MatchScratch scratch, int slots) {
    return match(hashes, count, scratch, slots, false);
  }

  /**
   * {@link #match(long[], int, MatchScratch, int)}; with {@code ignoreHoles} (tests only) it bisects even when a
   * slot holding block 0 has holes, which can give wrong answers.
   */
  int match(long[] hashes, int count, MatchScratch scratch, int slots, boolean ignoreHoles) {
    scratch.ensureSlots(slots);
    int[] depth = scratch.depth;
    int[] gpuDepth = scratch.gpuDepth;
    int[] homes = scratch.heads;
    int[] prints = scratch.next;
    long[] table = this.table;
    long[] probe = seqSlots;
    int n = probe.length;
    int touched = 0;
    // Workers that can still go deeper: those that matched the previous block, in any tier (live) and on the GPU
    // (liveGpu); before block 0, every worker. Once a block's run has advanced all of them, no later entry in the
    // run can change an answer, so the walk stops there instead of reading the run to its end: a block held by
    // one worker (a hit's usual case), whose entry sits at or near its home slot, costs a read of that slot and
    // its entry, and neither the branches on the rest of the run (which mispredict: runs' lengths vary) nor a
    // run's end that lies past the lines loaded ahead.
    int live = Integer.MAX_VALUE;
    int liveGpu = Integer.MAX_VALUE;
    // Block 0 alone first, so that a miss costs one lookup; then GATHER blocks, then chunks of MAX_GATHER. A chunk
    // waits for two rounds of loads whatever its size (its probe slots, then the entries they name, which a
    // sequence stored in one event has side by side), so a 128-block hit waits for 6 rounds, and a prompt whose
    // first 17 blocks are all held fetches the rest of its first 2,048 tokens in one go: a shared prefix that long
    // (a system prompt, a conversation) usually goes on, and when it does not the extra fetches overlap with the
    // ones that were needed. What must not happen is a branch on a load that misses the cache (the end of a run or
    // of a chain) in the walk below: the CPU cannot run ahead to the next block's loads past it, so each such miss
    // costs a whole memory latency in turn. The bucket chains this table replaced had one in most blocks (the
    // entries after the second), which made a cold 128-block hit cost 8 to 9 us.
    for (int chunk = 0, size = 1; chunk < count; size = size == 1 ? GATHER : MAX_GATHER) {
      int end = Math.min(count, chunk + size);
      // Round 1: the chunk's home slots, and the slots RUN_AHEAD further on for block 0, whose run is read to its
      // end (the next cache line, where a run that starts late in its line goes on), ENTRY_AHEAD for the others.
      // These loads are independent of each other, so the CPU overlaps their cache misses instead of waiting for
      // one block's slot before asking for the next one's.
      int reach = chunk == 0 ? RUN_AHEAD : ENTRY_AHEAD;
      long sink = 0;
      for (int i = chunk; i < end; i++) {
        int print = mix(hashes[i]);
        int home = home(print, n);
        prints[i - chunk] = print;
        homes[i - chunk] = home;
        int ahead = home + reach;
        sink += probe[home] + probe[ahead < n ? ahead : ahead - n];
      }
      if (chunk == 0 && count > 1) {
        // The last block's home too, where a bisection would look next (a miss loads it alongside, not after), and
        // the entry it names when its fingerprint is the block's, alongside block 0's entry.
        int lastPrint = mix(hashes[count - 1]);
        long v = probe[home(lastPrint, n)];
        if ((int) (v >>> 32) == lastPrint && (int) v >= 0) {
          sink += table[(int) v * STRIDE + SEQ];
        }
      }
      scratch.sink = sink;
      for (int i = chunk; i < end; i++) {
        long seq = hashes[i];
        int print = prints[i - chunk];
        int advanced = 0;
        int advancedGpu = 0;
        for (int pos = homes[i - chunk]; ; pos = pos + 1 == n ? 0 : pos + 1) {
          long v = probe[pos];
          if ((int) v < 0) {
            break;
          }
          if ((int) (v >>> 32) != print) {
            continue;
          }
          int base = (int) v * STRIDE;
          if (table[base + SEQ] == seq) {
            long meta = table[base + META];
            int slotTier = (int) (meta >>> 32);
            int slot = slotTier / TIERS;
            if (depth[slot] == i) {
              if (i == 0) {
                scratch.touched[touched++] = slot;
              }
              depth[slot] = i + 1;
              advanced++;
            }
            if (slotTier % TIERS == 0 && gpuDepth[slot] == i) {
              gpuDepth[slot] = i + 1;
              advancedGpu++;
            }
            if (advanced == live && advancedGpu == liveGpu) {
              break;
            }
          }
        }
        if (advanced == 0) {
          return touched;
        }
        live = advanced;
        liveGpu = advancedGpu;
      }
      if (end == 1 && count > 1 && (ignoreHoles || holeFree(scratch.touched, touched))) {
        matchBisecting(hashes, count, scratch, live, liveGpu);
        return touched;
      }
      chunk = end;
    }
    return touched;
  }

  private boolean holeFree(int[] slots, int count) {
    int[] holes = slotHoles;
    for (int k = 0; k < count; k++) {
      if (holes[slots[k]] != 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * The rest of a match once block 0 is walked, when no slot holding block 0 has holes: each such slot holds, in
   * each tier, every prefix of what it holds, so the slots holding block {@code i} (in any tier, and on the GPU)
   * can only shrink as {@code i} grows, and two sets of them, one inside the other, are equal when their sizes are.
   * So an interval of blocks whose two ends have the same holders (as many in any tier, as many on the GPU) has
   * them all the way through, and needs no probe in between; an interval whose ends differ is split into
   * {@link #SPLIT} parts, round by round, all of a round's inner blocks loaded together. A prompt held to its end by
   * the workers holding its block 0 costs one more probe (its last block, loaded with block 0); each distinct depth
   * costs about log8(count) rounds of 7 probes. Each probed block raises the depth of the slots holding it to at
   * least that block, which is each slot's depth once every interval is resolved or two blocks long.
   *
   * @param members slots holding block 0 (their depth is 1)
   * @param gpuMembers of them, those holding it on the GPU (their GPU depth is 1)
   */
  private void matchBisecting(long[] hashes, int count, MatchScratch scratch, int members, int gpuMembers) {
    scratch.ensureBlocks(count);
    long[] held = scratch.held; // per probed block: holders in any tier (hi 32) | on the GPU (lo 32)
    int[] from = scratch.from; // unresolved intervals [from, to], both ends probed
    int[] to = scratch.to;
    int[] homes = scratch.heads;
    int[] prints = scratch.next;
    held[0] = ((long) members << 32) | gpuMembers;
    int last = count - 1;
    held[last] = probeHolders(hashes, last, scratch, members, gpuMembers, home(mix(hashes[last]),
        seqSlots.length), mix(hashes[last]));
    int intervals = 0;
    if (held[last] != held[0] && last > 1) {
      from[0] = 0;
      to[0] = last;
      intervals = 1;
    }
    long[] probe = seqSlots;
    int n = probe.length;
    while (intervals > 0) {
      // Round 1: the inner blocks that split each interval into SPLIT parts (all of them in one shorter than that),
      // their home slots and the slots ENTRY_AHEAD on loaded together, for as many intervals as the scratch holds.
      int round = 0;
      int points = 0;
      long sink = 0;
      for (; round < intervals && points + SPLIT - 1 <= MAX_GATHER; round++) {
        int lo = from[round];
        int length = to[round] - lo;
        int parts = Math.min(SPLIT, length);
        for (int p = 1; p < parts; p++) {
          int print = mix(hashes[lo + length * p / parts]);
          int home = home(print, n);
          prints[points] = print;
          homes[points++] = home;
          int ahead = home + ENTRY_AHEAD;
          sink += probe[home] + probe[ahead < n ? ahead : ahead - n];
        }
      }
      scratch.sink = sink;
      // Then each inner block's run, left to right: the block before it bounds its holders (the sets only shrink).
      // A part whose ends differ (and that has blocks inside) is an interval of the next round.
      int next = 0;
      points = 0;
      for (int k = 0; k < round; k++) {
        int lo = from[k];
        int hi = to[k];
        int length = hi - lo;
        int parts = Math.min(SPLIT, length);
        int previous = lo;
        for (int p = 1; p <= parts; p++) {
          int b = p == parts ? hi : lo + length * p / parts;
          if (p < parts) {
            long bound = held[previous];
            held[b] = probeHolders(hashes, b, scratch, (int) (bound >>> 32), (int) bound, homes[points],
                prints[points]);
            points++;
          }
          // New intervals go after every interval not yet probed (this round's and, past the scratch, later ones).
          if (held[b] != held[previous] && b - previous > 1) {
            scratch.pushInterval(intervals + next++, previous, b);
          }
          previous = b;
        }
        from = scratch.from;
        to = scratch.to;
      }
      // Intervals of the next round: those past the scratch still waiting, then the new ones.
      intervals = intervals - round + next;
      System.arraycopy(from, round, from, 0, intervals);
      System.arraycopy(to, round, to, 0, intervals);
    }
  }

  /**
   * Walks block {@code i}'s run from {@code home}, raising the depth (and, for a GPU entry, the GPU depth) of each
   * slot holding block 0 (on the GPU) that holds it, each slot counted once; stops once {@code members} slots and
   * {@code gpuMembers} GPU slots have been found (no more can hold it). Returns the counts, packed as in
   * {@code MatchScratch.held}.
   */
  private long probeHolders(long[] hashes, int i, MatchScratch scratch, int members, int gpuMembers, int home,
      int print) {
    long[] table = this.table;
    long[] probe = seqSlots;
    int n = probe.length;
    int[] depth = scratch.depth;
    int[] gpuDepth = scratch.gpuDepth;
    int[] seen = scratch.seen;
    int[] seenGpu = scratch.seenGpu;
    long seq = hashes[i];
    int stamp = i + 1;
    int found = 0;
    int foundGpu = 0;
    if (members == 0) {
      return 0;
    }
    for (int pos = home; ; pos = pos + 1 == n ? 0 : pos + 1) {
      long v = probe[pos];
      if ((int) v < 0) {
        break;
      }
      if ((int) (v >>> 32) != print) {
        continue;
      }
      int base = (int) v * STRIDE;
      if (table[base + SEQ] == seq) {
        int slotTier = (int) (table[base + META] >>> 32);
        int slot = slotTier / TIERS;
        if (depth[slot] != 0 && seen[slot] != stamp) { // a slot holding block 0, not yet counted here
          seen[slot] = stamp;
          found++;
          if (depth[slot] < stamp) {
            depth[slot] = stamp;
          }
        }
        if (slotTier % TIERS == 0 && gpuDepth[slot] != 0 && seenGpu[slot] != stamp) {
          seenGpu[slot] = stamp;
          foundGpu++;
          if (gpuDepth[slot] < stamp) {
            gpuDepth[slot] = stamp;
          }
        }
        if (found == members && foundGpu == gpuMembers) {
          break;
        }
      }
    }
    return ((long) found << 32) | foundGpu;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Touching ahead (shared lock): independent loads whose cache misses overlap, before the exclusive phase

  /** Touches the home probe slot of {@code seq} and the next line of its run. */
  long touchSeq(long seq) {
    return touchRun(seq, RUN_AHEAD);
  }

  /**
   * Touches the home probe slot of {@code seq} and the slot {@value #ENTRY_AHEAD} on, what the match reads for a
   * block after block 0; with no lock (racy reads that only warm the cache, each index bounded by the array read).
   */
  long touchHome(long seq) {
    return touchRun(seq, ENTRY_AHEAD);
  }

  /** Loads the home probe slot of {@code seq} and the slot {@code ahead} on (wrapping at the table's end). */
  private long touchRun(long seq, int ahead) {
    long[] probe = seqSlots;
    int n = probe.length;
    int home = home(mix(seq), n);
    int next = home + ahead;
    return probe[home] + probe[next < n ? next : next - n];
  }

  /**
   * {@link #touchSeq} for each of {@code seqs[0, count)}: their homes computed first, then their runs' two lines
   * loaded in a loop that does nothing else, so that their cache misses issue back to back and overlap as far as the
   * CPU can keep misses in flight (see {@link #touchChains}).
   */
  long touchSeqs(long[] seqs, int count) {
    long sink = 0;
    long[] probe = seqSlots;
    int n = probe.length;
    int[] homes = homeScratch(count);
    for (int i = 0; i < count; i++) {
      homes[i] = home(mix(seqs[i]), n);
    }
    for (int i = 0; i < count; i++) {
      int home = homes[i];
      int next = home + RUN_AHEAD;
      sink += probe[home] + probe[next < n ? next : next - n];
    }
    return sink;
  }

  /**
   * Whether the first cache line of {@code seq}'s run holds its fingerprint: a guess, with no lock (racy reads of
   * slots block 0's warming already loaded), of whether a match of a prompt starting with {@code seq} goes on past
   * block 0.
   */
  boolean mayHold(long seq) {
    long[] probe = seqSlots;
    int n = probe.length;
    int print = mix(seq);
    int pos = home(print, n);
    for (int k = 0; k < RUN_AHEAD; k++, pos = pos + 1 == n ? 0 : pos + 1) {
      long v = probe[pos];
      if ((int) v < 0) {
        return false;
      }
      if ((int) (v >>> 32) == print) {
        return true;
      }
    }
    return true; // a long run: assume so
  }

  /**
   * Loads the engine bucket of each key {@code j < count} into {@code entries[j]} (the chain's first entry, or
   * NIL), in a loop that does nothing else once the buckets' indexes are computed: the first round of
   * {@link #touchChains}, which its caller may separate from the rest by other work (the misses are in flight
   * meanwhile).
   */
  void touchBuckets(int[] slotTiers, long[] keys, int[] entries, int count) {
    int[] heads = engHeads;
    for (int j = 0; j < count; j++) {
      entries[j] = engineBucket(slotTiers[j], keys[j]);
    }
    for (int j = 0; j < count; j++) {
      entries[j] = heads[entries[j]];
    }
  }

  /**
   * Touches what applying a chunk reads through engine hashes and sequence hashes: for each key {@code j < count}
   * (a worker-tier and an engine hash), the chain after its bucket up to the entry of that worker-tier and hash, or
   * to the chain's end when there is none (what a store's duplicate check walks), in rounds: every first entry,
   * then every second one, so that each round's cache misses overlap instead of one chain's loads waiting for each
   * other; the sequence runs of the stores' {@code seqs[0, seqCount)} with the first round; then, for the first
   * {@code removals} keys (removed blocks), what deleting the entry found reads: its sequence run and its LRU
   * neighbours. {@code entries} must hold each key's chain head, as {@link #touchBuckets} leaves them; it ends up
   * holding the entry found per key, or NIL.
   *
   * <p>Each round of misses is issued by a loop that does nothing else: the indexes are computed first, the loads
   * then follow back to back (a few instructions apart), so that all of a chunk's misses of a round fit in the
   * CPU's reorder window at once, where a loop that hashed, loaded and branched per key let about a dozen keys'
   * misses overlap.
   */
  long touchChains(int[] slotTiers, long[] keys, int[] entries, int removals, int count, long[] seqs,
      int seqCount) {
    long[] table = this.table;
    long[] probe = seqSlots;
    int n = probe.length;
    // Every sequence run's two lines (independent of the buckets).
    long sink = touchSeqs(seqs, seqCount);
    int[] homes = homeScratch(removals);
    // Round 2: every chain's first entry (entry 0 for an empty chain: a load without a branch on the bucket), both
    // of the lines a 40-byte entry may span (its first and last fields).
    for (int j = 0; j < count; j++) {
      int e = entries[j];
      int base = (e & ~(e >> 31)) * STRIDE;
      sink += table[base + SEQ] + table[base + LRU];
    }
    // Rounds over the chains; a key whose walk goes on keeps its next entry in entries[j] and one whose walk
    // ended there (found, or the chain's end) gets NIL | its found entry flagged in `done` below.
    int[] found = chainScratch(count);
    int live = count;
    for (int j = 0; j < count; j++) {
      found[j] = NIL;
    }
    for (int round = 0; live > 0 && round < MAX_TOUCH_ROUNDS; round++) {
      live = 0;
      for (int j = 0; j < count; j++) {
        int e = entries[j];
        if (e == NIL) {
          continue;
        }
        int base = e * STRIDE;
        long link = table[base + LINK];
        if (table[base + ENG] == keys[j] && (int) (table[base + META] >>> 32) == slotTiers[j]) {
          found[j] = e;
          entries[j] = NIL;
        } else {
          int next = (int) link;
          entries[j] = next;
          if (next != NIL) {
            live++;
          }
        }
      }
    }
    for (int j = 0; j < count; j++) {
      entries[j] = found[j];
    }
    // The removals' sequence runs and LRU neighbours: the homes from the entries found (in cache by now), then the
    // runs' loads back to back.
    for (int j = 0; j < removals; j++) {
      int e = entries[j];
      int home = 0;
      if (e != NIL) {
        int base = e * STRIDE;
        long links = table[base + LRU];
        int prev = (int) (links >> 32);
        int next = (int) links;
        home = home(mix(table[base + SEQ]), n);
        if (prev != NIL) {
          sink += table[prev * STRIDE + LRU];
        }
        if (next != NIL) {
          sink += table[next * STRIDE + LRU];
        }
      }
      homes[j] = home;
    }
    for (int j = 0; j < removals; j++) {
      int home = homes[j];
      int ahead = home + RUN_AHEAD;
      sink += probe[home] + probe[ahead < n ? ahead : ahead - n];
    }
    return sink;
  }

  private int[] homeScratch(int count) {
    if (homeScratch.length < count) {
      homeScratch = new int[Math.max(count, homeScratch.length * 2)];
    }
    return homeScratch;
  }

  private int[] chainScratch(int count) {
    if (chainScratch.length < count) {
      chainScratch = new int[Math.max(count, chainScratch.length * 2)];
    }
    return chainScratch;
  }

  /**
   * Touches the engine-hash buckets of all of an event's blocks, and their first entries, before they are applied
   * one by one: independent loads whose cache misses overlap, where the upserts would wait for each in turn.
   */
  void prefetchEngineChains(int slotTier, long[] hashes, int first, int count) {
    long sink = 0;
    for (int i = first; i < first + count; i++) {
      int e = engHeads[engineBucket(slotTier, hashes[i])];
      if (e != NIL) {
        sink += table[e * STRIDE + ENG];
      }
    }
    prefetchSink = sink;
  }

  /** Touches the home probe slots of an event's blocks' sequence hashes; see prefetchEngineChains. */
  void prefetchSeqChains(long[] seqs, int count) {
    prefetchSink += touchSeqs(seqs, count);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Reads (either lock)

  boolean isOrphan(int e) {
    return (table[e * STRIDE + META] & ORPHAN) != 0;
  }

  /** The parent sequence hash of non-orphan entry {@code e}, when {@link #parentKindOf} is 0. */
  long parentOf(int e) {
    return parents[e];
  }

  /** Whether non-orphan entry {@code e} names its parent (0), is a first block ({@link #ROOT}) or neither. */
  long parentKindOf(int e) {
    return table[e * STRIDE + META] & (ROOT | NO_PARENT);
  }

  /** The sequence hash of entry {@code e}. */
  long seqOf(int e) {
    return table[e * STRIDE + SEQ];
  }

  /** Finds the slot's entry for an engine hash, preferring {@code tier}. */
  int findAnyTier(int slot, int tier, long engineHash) {
    int e = findEngine(slot * TIERS + tier, engineHash);
    for (int t = 0; e == NIL && t < TIERS; t++) {
      if (t != tier) {
        e = findEngine(slot * TIERS + t, engineHash);
      }
    }
    return e;
  }

  int findEngine(int slotTier, long engineHash) {
    int e = engHeads[engineBucket(slotTier, engineHash)];
    while (e != NIL) {
      int base = e * STRIDE;
      if (table[base + ENG] == engineHash && (int) (table[base + META] >>> 32) == slotTier) {
        return e;
      }
      e = (int) table[base + LINK];
    }
    return NIL;
  }

  /** The chained entry of this worker-tier for this content, or NIL. */
  int findPrimary(int slotTier, long seq) {
    long[] probe = seqSlots;
    int n = probe.length;
    int print = mix(seq);
    for (int pos = home(print, n); ; pos = pos + 1 == n ? 0 : pos + 1) {
      long v = probe[pos];
      if ((int) v < 0) {
        return NIL;
      }
      if ((int) (v >>> 32) == print) {
        int base = (int) v * STRIDE;
        if (table[base + SEQ] == seq && (int) (table[base + META] >>> 32) == slotTier) {
          return (int) v;
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Writes (exclusive lock)

  /**
   * Stores one block of {@code slotTier}: a duplicate of an entry it holds is counted and, if its content changed,
   * re-keyed; a new entry may first evict the least recently stored one to stay within the budget.
   */
  void upsert(int slotTier, long engineHash, long seq, boolean orphan) {
    upsert(slotTier, engineHash, seq, orphan, 0, NO_PARENT);
  }

  /**
   * {@link #upsert(int, long, long, boolean)} naming the block's parent, which the hole counts follow.
   *
   * @param parent the parent block's sequence hash, when {@code parentKind} is 0
   * @param parentKind 0 (the parent is {@code parent}), {@link #ROOT} (no parent) or {@link #NO_PARENT} (unknown)
   */
  void upsert(int slotTier, long engineHash, long seq, boolean orphan, long parent, long parentKind) {
    int e = findEngine(slotTier, engineHash);
    if (e != NIL) {
      int base = e * STRIDE;
      long meta = table[base + META];
      boolean wasOrphan = (meta & ORPHAN) != 0;
      if (wasOrphan != orphan || (!orphan && table[base + SEQ] != seq)) {
        // The engine reused the hash for other content, or an orphan's prefix became known: re-key it.
        if (!wasOrphan) {
          unlinkContent(e);
        }
        table[base + SEQ] = seq;
        parents[e] = parent;
        meta = table[base + META] & ~(ROOT | NO_PARENT);
        table[base + META] = (orphan ? meta | ORPHAN : meta & ~ORPHAN) | parentKind;
        if (!orphan) {
          linkContent(e, slotTier, seq);
        }
        meta = table[base + META];
      }
      if ((meta & REFCOUNT_MASK) < REFCOUNT_MASK) {
        meta++;
      }
      table[base + META] = meta;
      lruUnlink(e);
      lruAppend(e);
      return;
    }
    if (size == maxEntries) {
      evictedEntries++;
      delete(lruHead);
    }
    e = allocateEntry();
    int base = e * STRIDE;
    table[base + SEQ] = seq;
    table[base + ENG] = engineHash;
    table[base + META] = ((long) slotTier << 32) | (orphan ? ORPHAN : 0) | parentKind | 1;
    parents[e] = parent;
    table[base + LINK] = ((long) NIL << 32) | (NIL & 0xFFFFFFFFL);
    int bucket = engineBucket(slotTier, engineHash);
    setEngineNext(e, engHeads[bucket]);
    engHeads[bucket] = e;
    if (!orphan) {
      linkContent(e, slotTier, seq);
    }
    lruAppend(e);
    slotEntries[slotTier / TIERS]++;
    size++;
  }

  /** {@link #release(int, long, int)} without a hint. */
  boolean release(int slotTier, long engineHash) {
    return release(slotTier, engineHash, NIL);
  }

  /**
   * Undoes one store of an engine block: decrements its count, removing the entry at zero.
   *
   * @param hint the block's entry if the caller found it earlier (checked, not trusted), or NIL
   * @return whether the slot-tier held the block
   */
  boolean release(int slotTier, long engineHash, int hint) {
    int e = isEntryOf(hint, slotTier, engineHash) ? hint : findEngine(slotTier, engineHash);
    if (e == NIL) {
      return false;
    }
    int base = e * STRIDE;
    long meta = table[base + META];
    if ((meta & REFCOUNT_MASK) > 1) {
      table[base + META] = meta - 1;
    } else {
      delete(e);
    }
    return true;
  }

  /**
   * Whether {@code e} is a live entry of this worker-tier for this engine hash, and so the only one (a store of a
   * held engine block is counted on its entry, never a second entry): a hint found before the exclusive phase,
   * possibly stale by now, is checked this way rather than trusted.
   */
  private boolean isEntryOf(int e, int slotTier, long engineHash) {
    if (e < 0 || e >= highWater) {
      return false;
    }
    int base = e * STRIDE;
    long meta = table[base + META];
    return (meta & REFCOUNT_MASK) != 0 && (int) (meta >>> 32) == slotTier && table[base + ENG] == engineHash;
  }

  /** Removes every entry of {@code slot}: one scan of the table. */
  void purgeSlot(int slot) {
    if (slotEntries[slot] == 0) {
      return;
    }
    for (int e = 0; e < highWater && slotEntries[slot] > 0; e++) {
      long meta = table[e * STRIDE + META];
      if ((meta & REFCOUNT_MASK) != 0 && (int) (meta >>> 32) / TIERS == slot) {
        delete(e);
      }
    }
  }

  private void delete(int e) {
    int base = e * STRIDE;
    long meta = table[base + META];
    int slotTier = (int) (meta >>> 32);
    if ((meta & ORPHAN) == 0) {
      unlinkContent(e);
    }
    unlinkEngine(e, slotTier, table[base + ENG]);
    lruUnlink(e);
    slotEntries[slotTier / TIERS]--;
    size--;
    table[base + META] = 0;
    setEngineNext(e, freeHead);
    freeHead = e;
  }

  private int allocateEntry() {
    if (freeHead != NIL) {
      int e = freeHead;
      freeHead = (int) table[e * STRIDE + LINK];
      return e;
    }
    if (highWater == capacity) {
      grow();
    }
    return highWater++;
  }

  private void grow() {
    int newCapacity = (int) Math.min(maxEntries, (long) capacity * 2);
    long[] old = table;
    long[] oldParents = parents;
    int oldHighWater = highWater;
    allocate(newCapacity);
    System.arraycopy(old, 0, table, 0, oldHighWater * STRIDE);
    System.arraycopy(oldParents, 0, parents, 0, oldHighWater);
    highWater = oldHighWater;
    rehash();
  }

  private void allocate(int newCapacity) {
    capacity = newCapacity;
    table = new long[newCapacity * STRIDE];
    parents = new long[newCapacity];
    // Twice as many engine buckets as entries: a store's duplicate check (almost always a miss) walks its whole
    // chain, one cache miss per entry, so chains of half an entry at full capacity instead of one save half of
    // those misses, for 4 more bytes per entry.
    int buckets = Math.max(16, 2 * Integer.highestOneBit(newCapacity));
    engHeads = new int[buckets];
    Arrays.fill(engHeads, NIL);
    seqSlots = new long[probeSlots(newCapacity)];
    Arrays.fill(seqSlots, EMPTY);
  }

  private void rehash() {
    for (int e = 0; e < highWater; e++) {
      int base = e * STRIDE;
      long meta = table[base + META];
      if ((meta & REFCOUNT_MASK) == 0) {
        continue; // free entry; its LINK low half is the free list and stays valid
      }
      int slotTier = (int) (meta >>> 32);
      int engBucket = engineBucket(slotTier, table[base + ENG]);
      setEngineNext(e, engHeads[engBucket]);
      engHeads[engBucket] = e;
      if ((meta & (ORPHAN | SHADOW)) == 0) { // a shadow keeps its place in its group's list
        linkSeq(e, table[base + SEQ]);
      }
    }
  }

  /**
   * Makes a non-orphan entry matchable: it joins the sequence probe table, unless that already holds an entry of the
   * same worker and tier for this content; then it becomes that entry's shadow.
   */
  private void linkContent(int e, int slotTier, long seq) {
    // One pass over the run: an entry of this worker-tier for the content makes e a shadow; otherwise e takes the
    // free slot that ends the run (what findPrimary and then linkSeq would do, reading the run once).
    long[] probe = seqSlots;
    int n = probe.length;
    int print = mix(seq);
    int pos = home(print, n);
    for (long v; (int) (v = probe[pos]) >= 0; pos = pos + 1 == n ? 0 : pos + 1) {
      if ((int) (v >>> 32) == print) {
        int base = (int) v * STRIDE;
        if (table[base + SEQ] == seq && (int) (table[base + META] >>> 32) == slotTier) {
          addShadow(e, slotTier, seq);
          return;
        }
      }
    }
    probe[pos] = ((long) print << 32) | e;
    joined(e, slotTier, seq);
  }

  /**
   * Counts chained entry {@code e} (just placed in the probe table) as a child of its parent's chained entry, or
   * as a hole when its slot-tier does not hold the parent; the slot-tier's children that were waiting for this
   * content stop being holes.
   */
  private void joined(int e, int slotTier, long seq) {
    int base = e * STRIDE;
    int slot = slotTier / TIERS;
    int hint = lastJoined;
    lastJoined = e;
    int children = 0;
    if (slotHoles[slot] != 0) { // children waiting in this slot-tier are holes of the slot
      children = waiting.remove(groupKey(slotTier, seq));
      slotHoles[slot] -= children;
    }
    setChildren(e, children);
    long meta = table[base + META];
    if ((meta & ROOT) != 0) {
      return;
    }
    long parent = parents[e];
    if ((meta & NO_PARENT) != 0 || parent == seq) {
      slotHoles[slot]++;
      return;
    }
    int p = primaryOf(slotTier, parent, hint);
    if (p != NIL) {
      setChildren(p, children(p) + 1);
    } else {
      waiting.addTo(groupKey(slotTier, parent), 1);
      slotHoles[slot]++;
    }
  }

  /**
   * Undoes {@link #joined} for chained entry {@code e}, whose content its slot-tier no longer holds (e has left the
   * probe table): its parent loses a child, or the slot-tier a hole; its children wait for the content as holes.
   */
  private void left(int e, int slotTier, long seq) {
    int base = e * STRIDE;
    int slot = slotTier / TIERS;
    long meta = table[base + META];
    if ((meta & ROOT) == 0) {
      long parent = parents[e];
      if ((meta & NO_PARENT) != 0 || parent == seq) {
        slotHoles[slot]--;
      } else {
        int p = primaryOf(slotTier, parent, e - 1);
        if (p != NIL) {
          setChildren(p, children(p) - 1);
        } else {
          long key = groupKey(slotTier, parent);
          if (waiting.addTo(key, -1) == 1) {
            waiting.remove(key);
          }
          slotHoles[slot]--;
        }
      }
    }
    int children = children(e);
    if (children > 0) {
      waiting.addTo(groupKey(slotTier, seq), children);
      slotHoles[slot] += children;
    }
  }

  /**
   * {@link #findPrimary}, trying {@code hint} first: a sequence stored in one event takes consecutive entries (from
   * the end of the table, or from the free list, which a sequence removed leaves first hands out in order), so a
   * block's parent is most often the entry before it, which the caller has just read or written; the probe run is
   * walked only when it is not.
   */
  private int primaryOf(int slotTier, long seq, int hint) {
    if (hint >= 0 && hint < highWater) {
      int base = hint * STRIDE;
      long meta = table[base + META];
      if (table[base + SEQ] == seq && (meta & REFCOUNT_MASK) != 0 && (meta & (ORPHAN | SHADOW)) == 0
          && (int) (meta >>> 32) == slotTier) {
        return hint; // the one chained entry of this slot-tier for this content
      }
    }
    return findPrimary(slotTier, seq);
  }

  /** The held children of chained entry {@code e}. */
  int children(int e) {
    return (int) (table[e * STRIDE + LINK] >>> 32);
  }

  private void setChildren(int e, int children) {
    setSeqNext(e, children);
  }

  private void addShadow(int e, int slotTier, long seq) {
    long key = groupKey(slotTier, seq);
    IntArrayList group = shadows.get(key);
    if (group == null) {
      group = new IntArrayList(2);
      shadows.put(key, group);
    }
    setSeqNext(e, group.size()); // a shadow's sequence link is its position in its group
    group.add(e);
    table[e * STRIDE + META] |= SHADOW;
    shadowEntries++;
  }

  /**
   * Undoes {@link #linkContent}: a shadow leaves its group; a chained entry leaves the probe table, and one of its
   * shadows takes its place.
   */
  private void unlinkContent(int e) {
    int base = e * STRIDE;
    long meta = table[base + META];
    int slotTier = (int) (meta >>> 32);
    long seq = table[base + SEQ];
    long key = groupKey(slotTier, seq);
    if ((meta & SHADOW) != 0) {
      removeShadow(key, e, (int) (table[base + LINK] >> 32));
      table[base + META] = meta & ~SHADOW;
      return;
    }
    unlinkSeq(e, seq);
    if (shadowEntries == 0) {
      left(e, slotTier, seq); // no group exists (an emptied group leaves the map): skip the map's lookup
      return;
    }
    IntArrayList group = shadows.get(key);
    if (group == null) {
      left(e, slotTier, seq);
      return;
    }
    for (int i = group.size() - 1; i >= 0; i--) {
      int candidate = group.getInt(i);
      int cbase = candidate * STRIDE;
      if (table[cbase + SEQ] == seq && (int) (table[cbase + META] >>> 32) == slotTier) {
        removeShadow(key, candidate, i);
        // The shadow takes e's place as the content's chained entry, with e's parent and children, so that the
        // hole counts (which follow contents, not entries) stay as they are.
        table[cbase + META] = (table[cbase + META] & ~(SHADOW | ROOT | NO_PARENT)) | (meta & (ROOT | NO_PARENT));
        parents[candidate] = parents[e];
        setChildren(candidate, children(e));
        linkSeq(candidate, seq);
        return;
      }
    }
    left(e, slotTier, seq);
  }

  private void removeShadow(long key, int e, int position) {
    IntArrayList group = shadows.get(key);
    int last = group.removeInt(group.size() - 1);
    if (last != e) {
      group.set(position, last);
      setSeqNext(last, position);
    }
    if (group.isEmpty()) {
      shadows.remove(key);
    }
    shadowEntries--;
  }

  static long groupKey(int slotTier, long seq) {
    return seq ^ ((slotTier + 1) * 0x9E3779B97F4A7C15L);
  }

  /** Puts entry {@code e} in the first free slot of its sequence hash's run (never full: see probeSlots). */
  private void linkSeq(int e, long seq) {
    long[] probe = seqSlots;
    int n = probe.length;
    int print = mix(seq);
    int pos = home(print, n);
    while ((int) probe[pos] >= 0) {
      pos = pos + 1 == n ? 0 : pos + 1;
    }
    probe[pos] = ((long) print << 32) | e;
  }

  /**
   * Takes entry {@code e} out of the probe table, then moves later slots of the run back into the hole when their
   * home allows (backward-shift deletion: no tombstones, so runs stay as short as the fill makes them).
   */
  private void unlinkSeq(int e, long seq) {
    long[] probe = seqSlots;
    int n = probe.length;
    int hole = home(mix(seq), n);
    while ((int) probe[hole] != e) {
      if ((int) probe[hole] < 0) {
        throw new IllegalStateException("entry " + e + " missing from the sequence probe table");
      }
      hole = hole + 1 == n ? 0 : hole + 1;
    }
    for (int i = hole + 1 == n ? 0 : hole + 1; ; i = i + 1 == n ? 0 : i + 1) {
      long v = probe[i];
      if ((int) v < 0) {
        break;
      }
      int h = home((int) (v >>> 32), n);
      // v may fill the hole unless its home lies cyclically in (hole, i]: then it would sit before its home.
      if (hole <= i ? (h <= hole || h > i) : (h <= hole && h > i)) {
        probe[hole] = v;
        hole = i;
      }
    }
    probe[hole] = EMPTY;
  }

  /**
   * Probe slots for a table of {@code capacity} entries: at most half full when every entry is chained, so that a
   * run (read to its end by every lookup, insertion and deletion) averages about 2.5 slots from a home; 2/3 full
   * (12 instead of 16 B per entry) made removals measurably slower (about 245 against 220 ns per removed block,
   * same-JVM A/B) and cold hits no faster.
   */
  static int probeSlots(int capacity) {
    return Math.max(16, 2 * capacity + 1);
  }

  /** The home slot of a fingerprint in a probe table of {@code n} slots: the fingerprint scaled to [0, n). */
  static int home(int print, int n) {
    return (int) (((print & 0xFFFFFFFFL) * n) >>> 32);
  }

  private void unlinkEngine(int e, int slotTier, long engineHash) {
    int bucket = engineBucket(slotTier, engineHash);
    int next = (int) table[e * STRIDE + LINK];
    int cur = engHeads[bucket];
    if (cur == e) {
      engHeads[bucket] = next;
      return;
    }
    while (cur != NIL) {
      int after = (int) table[cur * STRIDE + LINK];
      if (after == e) {
        setEngineNext(cur, next);
        return;
      }
      cur = after;
    }
    throw new IllegalStateException("entry " + e + " missing from its engine chain");
  }

  private void setSeqNext(int e, int next) {
    int i = e * STRIDE + LINK;
    table[i] = ((long) next << 32) | (table[i] & 0xFFFFFFFFL);
  }

  private void setEngineNext(int e, int next) {
    int i = e * STRIDE + LINK;
    table[i] = (table[i] & 0xFFFFFFFF00000000L) | (next & 0xFFFFFFFFL);
  }

  private void lruAppend(int e) {
    table[e * STRIDE + LRU] = ((long) lruTail << 32) | (NIL & 0xFFFFFFFFL);
    if (lruTail == NIL) {
      lruHead = e;
    } else {
      int i = lruTail * STRIDE + LRU;
      table[i] = (table[i] & 0xFFFFFFFF00000000L) | (e & 0xFFFFFFFFL);
    }
    lruTail = e;
  }

  private void lruUnlink(int e) {
    long links = table[e * STRIDE + LRU];
    int prev = (int) (links >> 32);
    int next = (int) links;
    if (prev == NIL) {
      lruHead = next;
    } else {
      int i = prev * STRIDE + LRU;
      table[i] = (table[i] & 0xFFFFFFFF00000000L) | (next & 0xFFFFFFFFL);
    }
    if (next == NIL) {
      lruTail = prev;
    } else {
      int i = next * STRIDE + LRU;
      table[i] = ((long) prev << 32) | (table[i] & 0xFFFFFFFFL);
    }
  }

  int engineBucket(int slotTier, long engineHash) {
    return mix(engineHash ^ (slotTier * 0x9E3779B97F4A7C15L)) & (engHeads.length - 1);
  }

  static int mix(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return (int) h;
  }

  /** Per-thread buffers for allocation-free matching; not thread-safe, one per thread. */
  static final class MatchScratch {
    int[] depth = new int[16];
    int[] gpuDepth = new int[16];
    int[] touched = new int[16];
    int[] seen = new int[16]; // per slot: the block (+1) whose holders it was last counted among, when bisecting
    int[] seenGpu = new int[16];
    final int[] heads = new int[MAX_GATHER];
    final int[] next = new int[MAX_GATHER];
    long[] held = new long[0]; // per block, when bisecting: see matchBisecting (grown to the longest prompt)
    int[] from = new int[16]; // intervals still to bisect (grown as needed)
    int[] to = new int[16];
    long sink; // keeps the gathering loads from being optimised away

    void ensureSlots(int slots) {
      if (depth.length < slots) {
        int n = Math.max(slots, depth.length * 2);
        depth = new int[n];
        gpuDepth = new int[n];
        touched = new int[n];
        seen = new int[n];
        seenGpu = new int[n];
      }
    }

    void ensureBlocks(int count) {
      if (held.length < count) {
        held = new long[Math.max(count, held.length * 2)];
      }
    }

    void pushInterval(int at, int lo, int hi) {
      if (at >= from.length) {
        from = Arrays.copyOf(from, Math.max(at + 1, from.length * 2));
        to = Arrays.copyOf(to, from.length);
      }
      from[at] = lo;
      to[at] = hi;
    }

    void reset(int touchedCount) {
      for (int i = 0; i < touchedCount; i++) {
        int slot = touched[i];
        depth[slot] = 0;
        gpuDepth[slot] = 0;
        seen[slot] = 0;
        seenGpu[slot] = 0;
      }
    }
  }
}
