package io.kvroute;

import it.unimi.dsi.fastutil.ints.IntArrayList;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import it.unimi.dsi.fastutil.objects.Object2IntOpenHashMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.StampedLock;
import org.jspecify.annotations.Nullable;

/**
 * An index of which worker holds which prompt prefix in its KV cache, built from engine events; thread-safe: events
 * are applied under an exclusive lock, one at a time, while any number of {@link #findMatches} calls run together
 * under a shared lock and always see a whole event applied or none of it.
 *
 * <h2>Keys</h2>
 * Each entry is one block held by one worker in one {@link StorageTier}. It is found two ways:
 * <ul>
 *   <li>by the router's <em>sequence hash</em> ({@link BlockHasher}), recomputed from the event's token ids. This is
 *       what requests match, so workers whose engines hash differently still match each other;
 *   <li>by the worker's own engine hash, which stored events name as parents and removal events name as victims.
 * </ul>
 * Duplicate stores of the same engine block are reference-counted; a removal decrements and the entry goes at zero.
 *
 * <p>The same content held by one worker in one tier under several engine hashes (an engine salting its hashes per
 * request, or a misbehaving one) is one matchable entry: the others are <em>shadows</em>, found by their engine
 * hashes but kept out of the sequence chain that every request walks, and one of them takes the first one's place
 * when it goes. So a sequence chain holds at most one entry per worker and tier, whatever a worker sends, and one
 * worker's events cannot slow the matching of everyone's requests.
 *
 * <h2>Events that cannot be applied as given</h2>
 * Never silently lost, always counted in {@link #stats()} and reported to the {@link RouterListener}:
 * <ul>
 *   <li><b>Unknown parent</b> (the stream started mid-sequence, or an event was lost): the blocks are kept as
 *       <em>orphan</em> placeholders that never match a request, since the prefix they extend is unknown, but whose
 *       removals and children resolve. Children of orphans are orphans. llm-d drops such blocks (llm-d-kv-cache
 *       #372); keeping placeholders keeps removal accounting exact until the worker's stream is replayed or reset.
 *   <li><b>Block size differing from the index's</b>: dropped, since the router cannot hash them compatibly.
 *   <li><b>Tokenless stores</b> (offload placeholders with {@code blockSize == 0}): they take the sequence hash of the
 *       same engine block held in another tier of the worker, if any; otherwise they are orphans.
 *   <li><b>Malformed</b> (token count not {@code blocks x blockSize}, a block hash repeated or equal to its parent):
 *       dropped whole.
 *   <li><b>Non-full-attention groups</b> (sliding window, Mamba): ignored, since they say nothing about prefixes.
 * </ul>
 *
 * <h2>Memory</h2>
 * Entries live in flat primitive tables (about 48 bytes per entry at full capacity, see {@link IndexStats}). When
 * a store would exceed {@code maxEntries}, the <b>least recently stored</b> entries (across all workers; a duplicate
 * store counts as recent) are dropped first. Clearing or removing a worker scans the tables once.
 */
public final class KvIndexer implements KvEventSink, KvIndex {
  /** The default entry budget: 4 Mi entries, about 200 MB at full use. */
  public static final int DEFAULT_MAX_ENTRIES = 4 * 1024 * 1024;
  /** The default bound on distinct workers (worker name and rank pairs). */
  public static final int DEFAULT_MAX_WORKERS = 16_384;

  // Entry layout in `table`, STRIDE longs per entry.
  private static final int STRIDE = 5;
  private static final int SEQ = 0; // router sequence hash
  private static final int ENG = 1; // engine hash
  private static final int META = 2; // slotTier (hi 32) | orphan bit 31 | shadow bit 30 | refcount (low 30)
  private static final int LINK = 3; // next in sequence chain (hi 32) | next in engine chain / free list (lo 32)
  private static final int LRU = 4; // previous (hi 32) | next (lo 32) in store order
  private static final long ORPHAN = 1L << 31;
  private static final long SHADOW = 1L << 30;
  private static final long REFCOUNT_MASK = SHADOW - 1;
  private static final int NIL = -1;
  private static final int INITIAL_CAPACITY = 1024;
  private static final int TIERS = 4; // slotTier = slot * TIERS + tier ordinal
  private static final int GATHER = 16; // blocks whose bucket heads are fetched together when matching

  private final int blockSize;
  private final BlockHasher hasher;
  private final int maxEntries;
  private final int maxWorkers;
  private final RouterListener listener;
  private final StampedLock lock = new StampedLock();

  // Guarded by lock.
  private long[] table;
  private int[] seqHeads;
  private int[] engHeads;
  private int capacity;
  private int size;
  private int highWater; // entries [0, highWater) have been handed out at least once
  private int freeHead = NIL;
  private int lruHead = NIL;
  private int lruTail = NIL;
  private final Object2IntOpenHashMap<WorkerId> slots = new Object2IntOpenHashMap<>();
  // Shadow entries by (worker-tier, content): rare, so a map of small lists is cheap.
  private final Long2ObjectOpenHashMap<IntArrayList> shadows = new Long2ObjectOpenHashMap<>();
  private int shadowEntries;
  private WorkerId[] slotWorkers = new WorkerId[16];
  private int[] slotEntries = new int[16];
  private int[] freeSlots = new int[16];
  private int freeSlotCount;
  private int slotHighWater;

  private long[] sortScratch = new long[64];
  private long[] seqScratch = new long[64];
  private long prefetchSink; // keeps prefetching loads from being optimised away
  private long storedBlocks;
  private long removedBlocks;
  private long orphanBlocks;
  private long mismatchedBlocks;
  private long invalidEvents;
  private long unknownRemovals;
  private long ignoredBlocks;
  private long evictedEntries;

  private KvIndexer(Builder builder) {
    this.blockSize = builder.blockSize;
    this.hasher = BlockHasher.of(blockSize);
    this.maxEntries = builder.maxEntries;
    this.maxWorkers = builder.maxWorkers;
    this.listener = builder.listener;
    this.slots.defaultReturnValue(NIL);
    allocate(Math.min(INITIAL_CAPACITY, maxEntries));
  }

  /** Returns a builder with block size 16, a budget of {@value #DEFAULT_MAX_ENTRIES} entries and no listener. */
  public static Builder newBuilder() {
    return new Builder();
  }

  /** The block size, in tokens, that this index hashes with. */
  @Override
  public int blockSize() {
    return blockSize;
  }

  /** The hasher requests must use to query this index. */
  @Override
  public BlockHasher hasher() {
    return hasher;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Events

  /** Applies one event of {@code worker}; never throws for bad events (they are counted and reported). */
  @Override
  public void apply(WorkerId worker, KvEvent event) {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(event, "event");
    long stamp = lock.writeLock();
    int evictedBefore = (int) evictedEntries;
    try {
      if (event instanceof KvEvent.BlockStored stored) {
        applyStored(worker, stored);
      } else if (event instanceof KvEvent.BlockRemoved removed) {
        applyRemoved(worker, removed);
      } else {
        int slot = slots.getInt(worker);
        if (slot != NIL) {
          purgeSlot(slot);
        }
      }
    } finally {
      lock.unlockWrite(stamp);
    }
    int evicted = (int) evictedEntries - evictedBefore;
    if (evicted > 0) {
      listener.onIndexEviction(evicted);
    }
  }

  /**
   * Removes every entry of {@code worker} and forgets the worker.
   *
   * @return whether the worker was known
   */
  public boolean removeWorker(WorkerId worker) {
    Objects.requireNonNull(worker, "worker");
    long stamp = lock.writeLock();
    try {
      int slot = slots.removeInt(worker);
      if (slot == NIL) {
        return false;
      }
      purgeSlot(slot);
      slotWorkers[slot] = null;
      freeSlots[freeSlotCount++] = slot;
      return true;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  private void applyStored(WorkerId worker, KvEvent.BlockStored event) {
    long[] hashes = event.blockHashes();
    int blocks = hashes.length;
    if (blocks == 0) {
      return;
    }
    if (!event.countsTowardPrefix()) {
      ignoredBlocks += blocks;
      return;
    }
    boolean tokenless = event.blockSize() == 0 && event.tokenIds().length == 0;
    if (!tokenless && event.blockSize() != blockSize) {
      mismatchedBlocks += blocks;
      listener.onBlockSizeMismatch(worker, blockSize, event.blockSize(), blocks);
      return;
    }
    String invalid = validate(event, tokenless);
    if (invalid != null) {
      invalidEvents++;
      listener.onInvalidEvent(worker, event, invalid);
      return;
    }
    int slot = slotFor(worker);
    if (slot == NIL) {
      listener.onEventForUnknownWorker(worker, event);
      return;
    }
    int tier = event.tier().ordinal();
    int slotTier = slot * TIERS + tier;
    storedBlocks += blocks;

    boolean orphan = false;
    long previous = 0;
    boolean atRoot = event.parentBlockHash() == null;
    if (!atRoot) {
      int parent = findAnyTier(slot, tier, event.parentBlockHash());
      if (parent == NIL || isOrphan(parent)) {
        orphan = true;
      } else {
        previous = table[parent * STRIDE + SEQ];
      }
    }
    prefetchEngineChains(slotTier, hashes);
    int[] tokens = event.tokenIds();
    long[] seqs = null;
    if (!tokenless && !orphan) {
      // All sequence hashes first, so that their chains (walked to find the worker's entry for the same content)
      // can be fetched together, their cache misses overlapping instead of one per stored block.
      seqs = seqScratch(blocks);
      for (int i = 0; i < blocks; i++) {
        long local = hasher.localHash(tokens, i * blockSize, event.loraName(), event.extraKeysOf(i));
        seqs[i] = atRoot && i == 0 ? local : BlockHasher.sequenceHash(previous, local);
        previous = seqs[i];
      }
      prefetchSeqChains(seqs, blocks);
    }
    int orphans = 0;
    for (int i = 0; i < blocks; i++) {
      long seq = 0;
      boolean blockOrphan = orphan;
      if (tokenless) {
        // A tokenless block is known only through the same engine block in a tier; its parent does not matter.
        int twin = findAnyTier(slot, tier, hashes[i]);
        blockOrphan = twin == NIL || isOrphan(twin);
        if (!blockOrphan) {
          seq = table[twin * STRIDE + SEQ];
        }
      } else if (!orphan) {
        seq = seqs[i];
      }
      if (blockOrphan) {
        orphans++;
      }
      upsert(slot, slotTier, hashes[i], seq, blockOrphan);
    }
    if (orphans > 0) {
      orphanBlocks += orphans;
      listener.onOrphanBlocks(worker, orphans);
    }
  }

  /**
   * Touches the engine-hash buckets of all of an event's blocks, and their first entries, before they are applied
   * one by one: independent loads whose cache misses overlap, where the upserts would wait for each in turn.
   */
  private void prefetchEngineChains(int slotTier, long[] hashes) {
    long sink = 0;
    for (int i = 0; i < hashes.length; i++) {
      int e = engHeads[engineBucket(slotTier, hashes[i])];
      if (e != NIL) {
        sink += table[e * STRIDE + ENG];
      }
    }
    prefetchSink = sink;
  }

  /** Touches the sequence-hash buckets of an event's blocks and their first entries; see prefetchEngineChains. */
  private void prefetchSeqChains(long[] seqs, int count) {
    long sink = 0;
    int mask = seqHeads.length - 1;
    for (int i = 0; i < count; i++) {
      int e = seqHeads[mix(seqs[i]) & mask];
      if (e != NIL) {
        sink += table[e * STRIDE + SEQ];
      }
    }
    prefetchSink += sink;
  }

  private long[] seqScratch(int count) {
    if (seqScratch.length < count) {
      seqScratch = new long[Math.max(count, seqScratch.length * 2)];
    }
    return seqScratch;
  }

  private @Nullable String validate(KvEvent.BlockStored event, boolean tokenless) {
    long[] hashes = event.blockHashes();
    if (!tokenless && (long) hashes.length * event.blockSize() != event.tokenIds().length) {
      return "token_ids has " + event.tokenIds().length + " tokens but " + hashes.length + " blocks of "
          + event.blockSize() + " need " + (long) hashes.length * event.blockSize();
    }
    if (event.extraKeys() != null && event.extraKeys().length > hashes.length) {
      return "extra_keys has " + event.extraKeys().length + " entries for " + hashes.length + " blocks";
    }
    Long parent = event.parentBlockHash();
    if (parent != null) {
      for (long hash : hashes) {
        if (hash == parent) {
          return "block hash " + Long.toUnsignedString(hash) + " equals its parent";
        }
      }
    }
    if (hashes.length > 32) {
      return duplicateIn(hashes); // sorted check: the pairwise one below is quadratic
    }
    for (int i = 1; i < hashes.length; i++) {
      for (int j = 0; j < i; j++) {
        if (hashes[j] == hashes[i]) {
          return "block hash " + Long.toUnsignedString(hashes[i]) + " repeats in one event";
        }
      }
    }
    return null;
  }

  private @Nullable String duplicateIn(long[] hashes) {
    if (sortScratch.length < hashes.length) {
      sortScratch = new long[Math.max(hashes.length, sortScratch.length * 2)];
    }
    long[] sorted = sortScratch; // reused under the write lock: no allocation per event
    System.arraycopy(hashes, 0, sorted, 0, hashes.length);
    Arrays.sort(sorted, 0, hashes.length);
    for (int i = 1; i < hashes.length; i++) {
      if (sorted[i] == sorted[i - 1]) {
        return "block hash " + Long.toUnsignedString(sorted[i]) + " repeats in one event";
      }
    }
    return null;
  }

  private void applyRemoved(WorkerId worker, KvEvent.BlockRemoved event) {
    int slot = slots.getInt(worker);
    long[] hashes = event.blockHashes();
    if (slot == NIL) {
      unknownRemovals += hashes.length;
      if (hashes.length > 0) {
        listener.onUnknownRemoval(worker, hashes.length);
      }
      return;
    }
    int slotTier = slot * TIERS + event.tier().ordinal();
    int unknown = 0;
    for (long hash : hashes) {
      int e = findEngine(slotTier, hash);
      if (e == NIL) {
        unknown++;
        continue;
      }
      removedBlocks++;
      int base = e * STRIDE;
      long meta = table[base + META];
      if ((meta & REFCOUNT_MASK) > 1) {
        table[base + META] = meta - 1;
      } else {
        delete(e);
      }
    }
    if (unknown > 0) {
      unknownRemovals += unknown;
      listener.onUnknownRemoval(worker, unknown);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Queries

  /**
   * Returns, for every worker holding at least the first block, how many consecutive blocks of the request it holds.
   * Allocates the result; routers use an allocation-free internal path.
   *
   * @param sequenceHashes the request's block sequence hashes, from {@link #hasher()}
   */
  @Override
  public Map<WorkerId, PrefixMatch> findMatches(long[] sequenceHashes) {
    Objects.requireNonNull(sequenceHashes, "sequenceHashes");
    MatchScratch scratch = new MatchScratch();
    long stamp = lock.readLock();
    try {
      int touched = match(sequenceHashes, sequenceHashes.length, scratch);
      Map<WorkerId, PrefixMatch> result = new LinkedHashMap<>();
      for (int i = 0; i < touched; i++) {
        int slot = scratch.touched[i];
        result.put(slotWorkers[slot], new PrefixMatch(scratch.depth[slot], scratch.gpuDepth[slot]));
      }
      scratch.reset(touched);
      return result;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Fills {@code scratch} with each slot's matched depth and returns the number of slots touched; the caller holds
   * the read lock (or calls {@link #matchLocked}) and must call {@code scratch.reset(touched)} when done.
   */
  private int match(long[] hashes, int count, MatchScratch scratch) {
    scratch.ensureSlots(slotHighWater);
    int[] depth = scratch.depth;
    int[] gpuDepth = scratch.gpuDepth;
    int[] heads = scratch.heads;
    int[] next = scratch.next;
    long[] table = this.table;
    int touched = 0;
    int mask = seqHeads.length - 1;
    // Block 0 alone first, so that a miss costs one lookup; then chunks of GATHER blocks.
    for (int chunk = 0, end = Math.min(count, 1); chunk < count; chunk = end, end = Math.min(count, end + GATHER)) {
      // Gather the chunk's bucket heads and first entries first: these loads are independent of each other, so the
      // CPU overlaps their cache misses instead of waiting for one block's entry before asking for the next one's.
      // Two rounds: the heads and their entries' links, then the second entries (a chain holds about two).
      long sink = 0;
      for (int i = chunk; i < end; i++) {
        heads[i - chunk] = seqHeads[mix(hashes[i]) & mask];
      }
      for (int j = 0; j < end - chunk; j++) {
        int e = heads[j];
        next[j] = e == NIL ? NIL : (int) (table[e * STRIDE + LINK] >> 32);
      }
      for (int j = 0; j < end - chunk; j++) {
        int e = next[j];
        if (e != NIL) {
          sink += table[e * STRIDE + SEQ];
        }
      }
      scratch.sink = sink;
      for (int i = chunk; i < end; i++) {
        long seq = hashes[i];
        int advanced = 0;
        int e = heads[i - chunk];
        while (e != NIL) {
          int base = e * STRIDE;
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
            }
          }
          e = (int) (table[base + LINK] >> 32);
        }
        if (advanced == 0) {
          return touched;
        }
      }
    }
    return touched;
  }

  /** Runs {@link #match} under the read lock; for the router's hot path. */
  int matchLocked(long[] hashes, int count, MatchScratch scratch) {
    long stamp = lock.readLock();
    try {
      return match(hashes, count, scratch);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Records that the worker in {@code slot} holds the prefix named by these sequence hashes (approximate mode); the
   * sequence hash doubles as the engine key, and repeated records are reference-counted.
   */
  void storeSequence(int slot, long[] hashes, int count) {
    long stamp = lock.writeLock();
    int evictedBefore = (int) evictedEntries;
    try {
      if (slot < 0 || slot >= slotHighWater || slotWorkers[slot] == null) {
        return;
      }
      for (int i = 0; i < count; i++) {
        upsert(slot, slot * TIERS, hashes[i], hashes[i], false);
      }
      storedBlocks += count;
    } finally {
      lock.unlockWrite(stamp);
    }
    int evicted = (int) evictedEntries - evictedBefore;
    if (evicted > 0) {
      listener.onIndexEviction(evicted);
    }
  }

  /** Undoes one {@link #storeSequence} of the same hashes. */
  void removeSequence(int slot, long[] hashes, int count) {
    long stamp = lock.writeLock();
    try {
      if (slot < 0 || slot >= slotHighWater || slotWorkers[slot] == null) {
        return;
      }
      for (int i = 0; i < count; i++) {
        int e = findEngine(slot * TIERS, hashes[i]);
        if (e == NIL) {
          continue; // evicted by the budget meanwhile
        }
        removedBlocks++;
        long meta = table[e * STRIDE + META];
        if ((meta & REFCOUNT_MASK) > 1) {
          table[e * STRIDE + META] = meta - 1;
        } else {
          delete(e);
        }
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Entries held by the worker in {@code slot}; racy read, used for tie-breaking only. */
  int entriesOfSlot(int slot) {
    int[] counts = slotEntries;
    return slot >= 0 && slot < counts.length ? counts[slot] : 0;
  }

  /** Returns the slot of {@code worker}, creating it; NIL when the worker bound is reached. */
  int register(WorkerId worker) {
    long stamp = lock.writeLock();
    try {
      return slotFor(worker);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** The number of entries {@code worker} holds. */
  @Override
  public long entriesOf(WorkerId worker) {
    long stamp = lock.readLock();
    try {
      int slot = slots.getInt(worker);
      return slot == NIL ? 0 : slotEntries[slot];
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** Returns a snapshot of sizes and counters. */
  @Override
  public IndexStats stats() {
    long stamp = lock.readLock();
    try {
      Map<WorkerId, Long> perWorker = new HashMap<>();
      for (int s = 0; s < slotHighWater; s++) {
        if (slotWorkers[s] != null) {
          perWorker.put(slotWorkers[s], (long) slotEntries[s]);
        }
      }
      long bytes = (long) table.length * Long.BYTES + (long) (seqHeads.length + engHeads.length) * Integer.BYTES;
      return new IndexStats(size, perWorker, capacity, maxEntries, bytes, storedBlocks, removedBlocks, orphanBlocks,
          mismatchedBlocks, invalidEvents, unknownRemovals, ignoredBlocks, evictedEntries);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** Workers the index knows, in no particular order. */
  @Override
  public List<WorkerId> workers() {
    long stamp = lock.readLock();
    try {
      return new ArrayList<>(slots.keySet());
    } finally {
      lock.unlockRead(stamp);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Tables (callers hold the write lock unless noted)

  private int slotFor(WorkerId worker) {
    int slot = slots.getInt(worker);
    if (slot != NIL) {
      return slot;
    }
    if (freeSlotCount > 0) {
      slot = freeSlots[--freeSlotCount];
    } else if (slotHighWater < maxWorkers) {
      slot = slotHighWater++;
      if (slot == slotWorkers.length) {
        int grown = Math.min(maxWorkers, slotWorkers.length * 2);
        slotWorkers = Arrays.copyOf(slotWorkers, grown);
        slotEntries = Arrays.copyOf(slotEntries, grown);
        freeSlots = Arrays.copyOf(freeSlots, grown);
      }
    } else {
      return NIL;
    }
    slots.put(worker, slot);
    slotWorkers[slot] = worker;
    slotEntries[slot] = 0;
    return slot;
  }

  private boolean isOrphan(int e) {
    return (table[e * STRIDE + META] & ORPHAN) != 0;
  }

  /** Finds the worker's entry for an engine hash, preferring {@code tier}. */
  private int findAnyTier(int slot, int tier, long engineHash) {
    int e = findEngine(slot * TIERS + tier, engineHash);
    for (int t = 0; e == NIL && t < TIERS; t++) {
      if (t != tier) {
        e = findEngine(slot * TIERS + t, engineHash);
      }
    }
    return e;
  }

  private int findEngine(int slotTier, long engineHash) {
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

  private void upsert(int slot, int slotTier, long engineHash, long seq, boolean orphan) {
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
        meta = table[base + META];
        table[base + META] = orphan ? meta | ORPHAN : meta & ~ORPHAN;
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
    table[base + META] = ((long) slotTier << 32) | (orphan ? ORPHAN : 0) | 1;
    table[base + LINK] = ((long) NIL << 32) | (NIL & 0xFFFFFFFFL);
    int bucket = engineBucket(slotTier, engineHash);
    setEngineNext(e, engHeads[bucket]);
    engHeads[bucket] = e;
    if (!orphan) {
      linkContent(e, slotTier, seq);
    }
    lruAppend(e);
    slotEntries[slot]++;
    size++;
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

  private void purgeSlot(int slot) {
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
    int oldHighWater = highWater;
    allocate(newCapacity);
    System.arraycopy(old, 0, table, 0, oldHighWater * STRIDE);
    highWater = oldHighWater;
    rehash();
  }

  private void allocate(int newCapacity) {
    capacity = newCapacity;
    table = new long[newCapacity * STRIDE];
    int buckets = Math.max(16, Integer.highestOneBit(newCapacity));
    seqHeads = new int[buckets];
    engHeads = new int[buckets];
    Arrays.fill(seqHeads, NIL);
    Arrays.fill(engHeads, NIL);
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
        int seqBucket = mix(table[base + SEQ]) & (seqHeads.length - 1);
        setSeqNext(e, seqHeads[seqBucket]);
        seqHeads[seqBucket] = e;
      }
    }
  }

  /**
   * Makes a non-orphan entry matchable: it joins the sequence chain, unless the chain already holds an entry of the
   * same worker and tier for this content; then it becomes that entry's shadow.
   */
  private void linkContent(int e, int slotTier, long seq) {
    if (findPrimary(slotTier, seq) == NIL) {
      linkSeq(e, seq);
      return;
    }
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
   * Undoes {@link #linkContent}: a shadow leaves its group; a chained entry leaves the chain, and one of its shadows
   * takes its place.
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
    unlinkSeq(e);
    IntArrayList group = shadows.get(key);
    if (group == null) {
      return;
    }
    for (int i = group.size() - 1; i >= 0; i--) {
      int candidate = group.getInt(i);
      int cbase = candidate * STRIDE;
      if (table[cbase + SEQ] == seq && (int) (table[cbase + META] >>> 32) == slotTier) {
        removeShadow(key, candidate, i);
        table[cbase + META] &= ~SHADOW;
        linkSeq(candidate, seq);
        return;
      }
    }
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

  /** The chained entry of this worker-tier for this content, or NIL. */
  private int findPrimary(int slotTier, long seq) {
    int e = seqHeads[mix(seq) & (seqHeads.length - 1)];
    while (e != NIL) {
      int base = e * STRIDE;
      if (table[base + SEQ] == seq && (int) (table[base + META] >>> 32) == slotTier) {
        return e;
      }
      e = (int) (table[base + LINK] >> 32);
    }
    return NIL;
  }

  private static long groupKey(int slotTier, long seq) {
    return seq ^ ((slotTier + 1) * 0x9E3779B97F4A7C15L);
  }

  /** Entries in the sequence chain of {@code seq} (all workers and tiers); for tests. Takes the read lock. */
  int sequenceChainLength(long seq) {
    long stamp = lock.readLock();
    try {
      int n = 0;
      int e = seqHeads[mix(seq) & (seqHeads.length - 1)];
      while (e != NIL) {
        n += table[e * STRIDE + SEQ] == seq ? 1 : 0;
        e = (int) (table[e * STRIDE + LINK] >> 32);
      }
      return n;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private void linkSeq(int e, long seq) {
    int bucket = mix(seq) & (seqHeads.length - 1);
    setSeqNext(e, seqHeads[bucket]);
    seqHeads[bucket] = e;
  }

  private void unlinkSeq(int e) {
    int bucket = mix(table[e * STRIDE + SEQ]) & (seqHeads.length - 1);
    int next = (int) (table[e * STRIDE + LINK] >> 32);
    int cur = seqHeads[bucket];
    if (cur == e) {
      seqHeads[bucket] = next;
      return;
    }
    while (cur != NIL) {
      int after = (int) (table[cur * STRIDE + LINK] >> 32);
      if (after == e) {
        setSeqNext(cur, next);
        return;
      }
      cur = after;
    }
    throw new IllegalStateException("entry " + e + " missing from its sequence chain");
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

  private int engineBucket(int slotTier, long engineHash) {
    return mix(engineHash ^ (slotTier * 0x9E3779B97F4A7C15L)) & (engHeads.length - 1);
  }

  private static int mix(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    return (int) h;
  }

  /** Checks internal consistency; for tests. Takes the read lock. */
  void checkInvariants() {
    long stamp = lock.readLock();
    try {
      int live = 0;
      int shadowCount = 0;
      int[] perSlot = new int[slotEntries.length];
      for (int e = 0; e < highWater; e++) {
        long meta = table[e * STRIDE + META];
        if ((meta & REFCOUNT_MASK) == 0) {
          continue;
        }
        live++;
        int slotTier = (int) (meta >>> 32);
        perSlot[slotTier / TIERS]++;
        if (findEngine(slotTier, table[e * STRIDE + ENG]) != e) {
          throw new IllegalStateException("entry " + e + " not reachable by engine hash");
        }
        if ((meta & SHADOW) != 0) {
          IntArrayList group = shadows.get(groupKey(slotTier, table[e * STRIDE + SEQ]));
          int position = (int) (table[e * STRIDE + LINK] >> 32);
          if (group == null || position >= group.size() || group.getInt(position) != e) {
            throw new IllegalStateException("shadow entry " + e + " missing from its group");
          }
          if (findPrimary(slotTier, table[e * STRIDE + SEQ]) == NIL) {
            throw new IllegalStateException("shadow entry " + e + " has no chained entry for its content");
          }
          shadowCount++;
        } else if ((meta & ORPHAN) == 0) {
          if (!inSeqChain(e)) {
            throw new IllegalStateException("entry " + e + " not reachable by sequence hash");
          }
          if (findPrimary(slotTier, table[e * STRIDE + SEQ]) != e) {
            throw new IllegalStateException("entry " + e + " duplicates chained content of its worker and tier");
          }
        }
      }
      if (live != size) {
        throw new IllegalStateException("size " + size + " but " + live + " live entries");
      }
      if (shadowCount != shadowEntries) {
        throw new IllegalStateException(shadowEntries + " shadows counted but " + shadowCount + " found");
      }
      for (int s = 0; s < slotHighWater; s++) {
        if (perSlot[s] != slotEntries[s]) {
          throw new IllegalStateException("slot " + s + " counts " + slotEntries[s] + " but holds " + perSlot[s]);
        }
      }
      int lruCount = 0;
      for (int e = lruHead; e != NIL; e = (int) table[e * STRIDE + LRU]) {
        lruCount++;
        if (lruCount > size) {
          throw new IllegalStateException("store-order list longer than size");
        }
      }
      if (lruCount != size) {
        throw new IllegalStateException("store-order list has " + lruCount + " entries, size " + size);
      }
      if (size > maxEntries) {
        throw new IllegalStateException("size " + size + " exceeds budget " + maxEntries);
      }
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private boolean inSeqChain(int target) {
    int e = seqHeads[mix(table[target * STRIDE + SEQ]) & (seqHeads.length - 1)];
    while (e != NIL) {
      if (e == target) {
        return true;
      }
      e = (int) (table[e * STRIDE + LINK] >> 32);
    }
    return false;
  }

  /** A view of this index without its mutators; thread-safe. */
  KvIndex readOnlyView() {
    return new ReadOnlyView(this);
  }

  private static final class ReadOnlyView implements KvIndex {
    private final KvIndexer index;

    ReadOnlyView(KvIndexer index) {
      this.index = index;
    }

    @Override
    public int blockSize() {
      return index.blockSize();
    }

    @Override
    public BlockHasher hasher() {
      return index.hasher();
    }

    @Override
    public Map<WorkerId, PrefixMatch> findMatches(long[] sequenceHashes) {
      return index.findMatches(sequenceHashes);
    }

    @Override
    public long entriesOf(WorkerId worker) {
      return index.entriesOf(worker);
    }

    @Override
    public IndexStats stats() {
      return index.stats();
    }

    @Override
    public List<WorkerId> workers() {
      return index.workers();
    }

    @Override
    public String toString() {
      return index.toString();
    }
  }

  @Override
  public String toString() {
    return "KvIndexer{blockSize=" + blockSize + ", entries=" + size + ", maxEntries=" + maxEntries + "}";
  }

  /** Per-thread buffers for allocation-free matching; not thread-safe, one per thread. */
  static final class MatchScratch {
    int[] depth = new int[16];
    int[] gpuDepth = new int[16];
    int[] touched = new int[16];
    final int[] heads = new int[GATHER];
    final int[] next = new int[GATHER];
    long sink; // keeps the gathering loads from being optimised away

    void ensureSlots(int slots) {
      if (depth.length < slots) {
        int n = Math.max(slots, depth.length * 2);
        depth = new int[n];
        gpuDepth = new int[n];
        touched = new int[n];
      }
    }

    void reset(int touchedCount) {
      for (int i = 0; i < touchedCount; i++) {
        int slot = touched[i];
        depth[slot] = 0;
        gpuDepth[slot] = 0;
      }
    }
  }

  /** Configures a {@link KvIndexer}; not thread-safe. */
  public static final class Builder {
    private int blockSize = BlockHasher.DEFAULT_BLOCK_SIZE;
    private int maxEntries = DEFAULT_MAX_ENTRIES;
    private int maxWorkers = DEFAULT_MAX_WORKERS;
    private RouterListener listener = RouterListener.NONE;

    private Builder() {}

    /**
     * Tokens per block; must equal the engines' block size (vLLM default 16).
     *
     * @throws IllegalArgumentException if not positive
     */
    public Builder blockSize(int blockSize) {
      this.blockSize = BlockHasher.requireBlockSize(blockSize);
      return this;
    }

    /**
     * The entry budget; beyond it the least recently stored entries are dropped.
     *
     * @throws IllegalArgumentException if not positive or above 2^28
     */
    public Builder maxEntries(int maxEntries) {
      if (maxEntries <= 0 || maxEntries > (1 << 28)) {
        throw new IllegalArgumentException("maxEntries must be in [1, 2^28] but was " + maxEntries);
      }
      this.maxEntries = maxEntries;
      return this;
    }

    /**
     * The bound on distinct workers; events of further workers are dropped and reported.
     *
     * @throws IllegalArgumentException if not positive or above 2^24
     */
    public Builder maxWorkers(int maxWorkers) {
      if (maxWorkers <= 0 || maxWorkers > (1 << 24)) {
        throw new IllegalArgumentException("maxWorkers must be in [1, 2^24] but was " + maxWorkers);
      }
      this.maxWorkers = maxWorkers;
      return this;
    }

    /** Receives reports of events that could not be applied as given. */
    public Builder listener(RouterListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /** Builds the index. */
    public KvIndexer build() {
      return new KvIndexer(this);
    }
  }
}
