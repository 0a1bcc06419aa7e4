package io.kvroute;

import io.kvroute.internal.Checks;
import it.unimi.dsi.fastutil.objects.Object2IntOpenHashMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import java.util.RandomAccess;
import java.util.concurrent.locks.StampedLock;
import java.util.function.Function;
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
 * hashes but kept out of the sequence lookup that every request reads, and one of them takes the first one's place
 * when it goes. So the lookup holds at most one entry per worker and tier for a sequence hash, whatever a worker
 * sends, and one worker's events cannot slow the matching of everyone's requests.
 *
 * <h2>Events that cannot be applied as given</h2>
 * Never silently lost, always counted in {@link #stats()} and reported to the {@link IndexListener}:
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
 * Entries live in flat primitive tables (about 72 bytes per entry at full capacity, see {@link IndexStats}). When
 * a store would exceed {@code maxEntries}, the <b>least recently stored</b> entries (across all workers; a duplicate
 * store counts as recent) are dropped first. Clearing or removing a worker scans the tables once. The tables and the
 * match loop are in the package-private {@code PrefixTable}; this class holds the event rules and the locking.
 */
public final class KvIndexer implements KvEventSink, KvIndex {
  /** The default entry budget: 4 Mi entries, about 300 MB at full use. */
  public static final int DEFAULT_MAX_ENTRIES = 4 * 1024 * 1024;
  /** The default bound on distinct workers (worker name and rank pairs). */
  public static final int DEFAULT_MAX_WORKERS = 16_384;

  private static final int NIL = PrefixTable.NIL;
  private static final int UNRESOLVED = -2; // a slot not looked up yet
  private static final int TIERS = PrefixTable.TIERS;
  // Blocks of small events applyAll applies per hold of the write lock. A block costs 0.1 to 0.3 us to apply once
  // its index lines are in cache, so a chunk holds readers back a few microseconds at most, and a chunk's
  // independent cache misses (about 3 per block) are about what one core keeps in flight. Larger events are
  // applied whole, so that readers always see an event entirely or not at all.
  private static final int CHUNK_BLOCKS = 32;
  // How long a writer or a selecting reader spins for the lock before it queues (parks): about the cost of a park
  // and unpark on a loaded machine, and longer than a chunk's hold.
  private static final long SPIN_NANOS = 20_000;
  private static final VarHandle WAITING_READERS;
  private static final int TALLY_PAD = 8; // longs: a cache line
  private static final int CHUNK_HINTS = TALLY_PAD; // chunkEntries[0, CHUNK_HINTS) hold prepare's finds for removals
  private static final int CHUNK_SINK = TALLY_PAD + 1;
  private static final int STORED = TALLY_PAD + 2;
  private static final int REMOVED = TALLY_PAD + 3;
  private static final int ORPHANS = TALLY_PAD + 4;
  private static final int MISMATCHED = TALLY_PAD + 5;
  private static final int INVALID = TALLY_PAD + 6;
  private static final int UNKNOWN_REMOVALS = TALLY_PAD + 7;
  private static final int IGNORED = TALLY_PAD + 8;
  private static final int CHUNK_TOUCHED = TALLY_PAD + 9; // sequence hashes in chunkTouched (a count)
  private static final int TALLIES = 10;

  static {
    try {
      WAITING_READERS = MethodHandles.lookup().findVarHandle(KvIndexer.class, "waitingReaders", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final int blockSize;
  private final BlockHasher hasher;
  private final int maxWorkers;
  private final IndexListener listener;
  private final StampedLock lock = new StampedLock();
  // Selecting readers spinning for the read lock while a write holds it (matchLocked's slow path): a writer with
  // more events in its hold lets them in between two events. Written only by waiting readers.
  private volatile int waitingReaders;

  // Guarded by lock.
  private final PrefixTable entries;
  private final Object2IntOpenHashMap<WorkerId> slots = new Object2IntOpenHashMap<>();
  private WorkerId[] slotWorkers = new WorkerId[16];
  private int[] freeSlots = new int[16];
  private int freeSlotCount;
  private int slotHighWater;

  private long[] sortScratch = new long[64];
  private long[] seqScratch = new long[64];

  // applyAll's chunk state, guarded by `applying` (held across a chunk's shared-lock and exclusive-lock phases).
  private final Object applying = new Object();
  private final KvEventColumns objects = new KvEventColumns(); // the object paths' events, copied per chunk
  private long[] chunkLocals = new long[64]; // local hashes of the chunk's stores, computed outside the write lock
  private int[] chunkLocalsAt = new int[64]; // per event of the chunk: its first local hash in chunkLocals, or -1
  private long[] chunkSeqs = new long[64]; // per store of the chunk: its last sequence hash, for prefetching only
  private boolean[] chunkSeqKnown = new boolean[64];
  // Per store of the chunk whose sequence hashes prepare computed: where they start in chunkTouched, and the parent
  // sequence hash they were chained from (see applyStored).
  private int[] chunkSeqsAt = new int[64];
  private long[] chunkSeqFrom = new long[64];
  private long[] chunkTouched = new long[64]; // the chunk's stores' sequence hashes, touched in one loop
  private int[] chunkTiers = new int[64]; // the chunk's removals: worker-tier, engine hash, entry found
  private long[] chunkRemoved = new long[64];
  private int[] chunkEntries = new int[64];
  // The counters the writer changes on every event, in one array of their own, 64 bytes of padding on each side:
  // as fields of this object they would share a cache line with the lock and the table reference, which every
  // selection reads (several times: the candidate loop reloads the table in each iteration), and each write would
  // take that line from the selecting core, which then misses to the writer's cache (about 100 ns) for a
  // reference that did not change. An array's elements are laid out in order, fields are not.
  private final long[] tallies = new long[TALLY_PAD + TALLIES + TALLY_PAD];

  private KvIndexer(Builder builder) {
    this.blockSize = builder.blockSize;
    this.hasher = BlockHasher.of(blockSize);
    this.maxWorkers = builder.maxWorkers;
    this.listener = builder.listener;
    this.slots.defaultReturnValue(NIL);
    this.entries = new PrefixTable(builder.maxEntries);
  }

  /**
   * Returns a builder with block size 16, a budget of {@value #DEFAULT_MAX_ENTRIES} entries and no listener.
   *
   * @return a new builder
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * The block size, in tokens, that this index hashes with.
   *
   * @return the block size
   */
  @Override
  public int blockSize() {
    return blockSize;
  }

  /**
   * The hasher requests must use to query this index.
   *
   * @return the hasher
   */
  @Override
  public BlockHasher hasher() {
    return hasher;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Events: every path hands its events to one set of rules as columns (objects are copied into reused ones).

  /**
   * Applies one event of {@code worker}; never throws for bad events (they are counted and reported).
   *
   * @param worker the worker the event comes from
   * @param event the event
   */
  @Override
  public void apply(WorkerId worker, KvEvent event) {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(event, "event");
    int evicted;
    synchronized (applying) {
      objects.clear();
      try {
        objects.add(event);
        long stamp = writeLockSpinning();
        int evictedBefore = (int) entries.evictedEntries;
        try {
          applyLocked(worker, objects, 0, -1, -1);
        } finally {
          lock.unlockWrite(stamp);
          evicted = (int) entries.evictedEntries - evictedBefore;
        }
      } finally {
        objects.clear();
      }
    }
    if (evicted > 0) {
      listener.onIndexEviction(evicted);
    }
  }

  /**
   * Applies a batch of events of {@code worker}, in order; never throws for bad events. Each event is applied under
   * one hold of the exclusive lock, so readers see it entirely or not at all; consecutive small events share a hold
   * of up to {@value #CHUNK_BLOCKS} blocks, which a selection waiting for the lock interrupts between two events,
   * and between holds waiting readers go first. Before each hold, the
   * chunk's block hashes are computed and the index lines it will change are fetched under the shared lock, so that
   * readers wait for the changes only, not for their cache misses.
   *
   * @param worker the worker the events come from
   * @param events the events, in the order the engine produced them
   */
  @Override
  public void applyAll(WorkerId worker, List<? extends KvEvent> events) {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(events, "events");
    if (!(events instanceof RandomAccess)) {
      events = new ArrayList<>(events); // chunks index into the batch
    }
    int n = events.size();
    for (int from = 0; from < n; ) {
      int blocks = blocksOf(events.get(from));
      int to = from + 1;
      while (to < n) {
        int more = blocksOf(events.get(to));
        if (blocks + more > CHUNK_BLOCKS) {
          break;
        }
        blocks += more;
        to++;
      }
      int evicted;
      synchronized (applying) { // concurrent batches take turns per chunk
        objects.clear();
        try {
          for (int i = from; i < to; i++) {
            objects.add(events.get(i));
          }
          evicted = applyChunk(worker, objects, 0, to - from);
        } finally {
          objects.clear();
        }
      }
      if (evicted > 0) {
        listener.onIndexEviction(evicted);
      }
      from = to;
    }
  }

  /**
   * Applies a batch of events of {@code worker} held in columns, in order, exactly as {@link #applyAll} applies the
   * same events as objects (same chunks, same rules, same reports), without allocating for ordinary events; never
   * throws for bad events. The columns are only read; the caller may clear and refill them once this returns.
   *
   * @param worker the worker the events come from
   * @param batch the events, in the order the engine produced them
   */
  @Override
  public void applyColumns(WorkerId worker, KvEventColumns batch) {
    Objects.requireNonNull(worker, "worker");
    Objects.requireNonNull(batch, "batch");
    int n = batch.size();
    for (int from = 0; from < n; ) {
      int blocks = blocksOf(batch, from);
      int to = from + 1;
      while (to < n) {
        int more = blocksOf(batch, to);
        if (blocks + more > CHUNK_BLOCKS) {
          break;
        }
        blocks += more;
        to++;
      }
      int evicted;
      synchronized (applying) { // concurrent batches take turns per chunk
        evicted = applyChunk(worker, batch, from, to);
      }
      if (evicted > 0) {
        listener.onIndexEviction(evicted);
      }
      from = to;
    }
  }

  /** Applies events {@code [from, to)} as one chunk and returns the entries evicted; caller holds {@code applying}. */
  private int applyChunk(WorkerId worker, KvEventColumns events, int from, int to) {
    prepare(worker, events, from, to);
    long stamp = writeLockSpinning();
    int evictedBefore = (int) entries.evictedEntries;
    int evicted = 0; // by this chunk's earlier holds, when it let readers in between
    try {
      // A run of removals looks the worker's slot up once (only a store or a clear can change it: they register
      // the worker or empty its slot), and each removal starts from the entry prepare found for its block.
      int hint = 0;
      int removalSlot = UNRESOLVED;
      for (int i = from; i < to; i++) {
        if (i > from && waitingReaders != 0) {
          evicted += (int) entries.evictedEntries - evictedBefore;
          lock.unlockWrite(stamp);
          stamp = 0;
          stamp = relockAfterReaders();
          evictedBefore = (int) entries.evictedEntries;
          removalSlot = UNRESOLVED; // a worker's removal may have run in between
        }
        if (events.kind(i) == KvEventColumns.REMOVED) {
          if (removalSlot == UNRESOLVED) {
            removalSlot = slots.getInt(worker);
          }
          applyRemoved(worker, events, i, removalSlot, hint);
          hint += events.blocks(i);
        } else {
          int k = i - from;
          applyLocked(worker, events, i, chunkLocalsAt[k], chunkSeqKnown[k] ? k : -1);
          removalSlot = UNRESOLVED;
        }
      }
    } finally {
      if (stamp != 0) {
        lock.unlockWrite(stamp);
      }
    }
    return evicted + (int) entries.evictedEntries - evictedBefore;
  }

  /**
   * Takes the write lock again after a chunk's hold let waiting selections in between two of its events: first
   * waits (spinning, at most {@value #SPIN_NANOS} ns) until the readers that were waiting have their read lock, so
   * that the writer does not take the free lock back before they see it free, then takes the lock as a writer
   * does. A hold is a few microseconds of work whose lines are in cache, and a waiting selection would otherwise
   * wait for all of it: between two events it waits for at most the event being applied. With no reader waiting
   * the hold goes on, so the writer's throughput is unchanged when nobody selects.
   */
  private long relockAfterReaders() {
    long deadline = System.nanoTime() + SPIN_NANOS;
    while (waitingReaders != 0 && System.nanoTime() - deadline < 0) {
      Thread.onSpinWait();
    }
    return writeLockSpinning();
  }

  /**
   * Takes the write lock, spinning up to {@value #SPIN_NANOS} ns before it queues. StampedLock lets readers take a
   * free read lock even while a writer is queued, so a writer that parks behind a stream of selections wakes too
   * late for the gap between two of them (about a microsecond of hashing) and can wait for many; a spinning
   * writer takes the first gap.
   */
  private long writeLockSpinning() {
    long stamp = lock.tryWriteLock();
    if (stamp != 0) {
      return stamp;
    }
    long deadline = System.nanoTime() + SPIN_NANOS;
    do {
      for (int i = 0; i < 16; i++) {
        Thread.onSpinWait();
        stamp = lock.tryWriteLock();
        if (stamp != 0) {
          return stamp;
        }
      }
    } while (System.nanoTime() - deadline < 0);
    return lock.writeLock();
  }

  /**
   * Takes the read lock for a match while a write holds it: counts itself among the waiting readers (so that the
   * writer lets it in after the event it is applying), and while it waits, loads the probe slots the match will
   * read (racy reads that only warm the cache, as {@link #warmFirstBlock} does), one block between two tries of
   * the lock, in the order a bisection of the depth probes them. It queues after {@value #SPIN_NANOS} ns (a hold
   * is a chunk, {@value #CHUNK_BLOCKS} blocks, or one larger event: a few microseconds, less than a park and unpark
   * cost on a busy machine). Block 0's slots were loaded while the prompt hashed; the others are loaded only when
   * block 0 looks held (its fingerprint in its run), so a miss that waits fetches no lines it will not read.
   */
  private long readLockWarming(long[] hashes, int count, PrefixTable.MatchScratch scratch) {
    WAITING_READERS.getAndAdd(this, 1);
    try {
      long sink = 0;
      // Blocks in the order a bisection of the depth probes them: the last one, then midpoints, coarse to fine
      // (stride 64: block 64; 32: blocks 32 and 96; ...; 1: the odd ones), so that each block 1 to count - 1 is
      // warmed once, and whatever the wait allows is what the match reads first, bisecting or walking.
      int last = count > 1 && entries.mayHold(hashes[0]) ? count - 1 : 0;
      int stride = last > 1 ? Integer.highestOneBit(last - 1) : 0;
      int next = stride;
      long deadline = System.nanoTime() + SPIN_NANOS;
      do {
        for (int i = 0; i < 16; i++) {
          if (last > 0) {
            sink += entries.touchHome(hashes[last]);
            last = 0;
          } else if (stride > 0) {
            sink += entries.touchHome(hashes[next]);
            next += 2 * stride;
            if (next >= count - 1) {
              stride >>= 1;
              next = stride;
            }
          } else {
            Thread.onSpinWait();
          }
          long stamp = lock.tryReadLock();
          if (stamp != 0) {
            scratch.sink = sink;
            return stamp;
          }
        }
      } while (System.nanoTime() - deadline < 0);
      scratch.sink = sink;
      return lock.readLock();
    } finally {
      WAITING_READERS.getAndAdd(this, -1);
    }
  }

  /** The blocks an event changes, for chunking; a clear scans the whole table, so it fills a chunk alone. */
  private static int blocksOf(KvEvent event) {
    Objects.requireNonNull(event, "event");
    if (event instanceof KvEvent.BlockStored stored) {
      return Math.max(1, stored.blockHashes().length);
    }
    if (event instanceof KvEvent.BlockRemoved removed) {
      return Math.max(1, removed.blockHashes().length);
    }
    return CHUNK_BLOCKS;
  }

  /** {@link #blocksOf(KvEvent)} for event {@code i} of columns. */
  private static int blocksOf(KvEventColumns events, int i) {
    return events.kind(i) == KvEventColumns.CLEARED ? CHUNK_BLOCKS : Math.max(1, events.blocks(i));
  }

  /**
   * The shared-lock phase of a chunk (caller holds {@code applying}): computes the local hashes of its stores
   * without any lock, then, under the shared lock, touches the buckets and entries the exclusive phase will read,
   * gathering independent loads so that their cache misses overlap. Reads only; nothing found here is trusted by
   * the exclusive phase except the local hashes, which depend on the event alone.
   */
  private void prepare(WorkerId worker, KvEventColumns events, int from, int to) {
    int count = to - from;
    if (chunkLocalsAt.length < count) {
      chunkLocalsAt = new int[Math.max(count, chunkLocalsAt.length * 2)];
      chunkSeqs = new long[chunkLocalsAt.length];
      chunkSeqKnown = new boolean[chunkLocalsAt.length];
      chunkSeqsAt = new int[chunkLocalsAt.length];
      chunkSeqFrom = new long[chunkLocalsAt.length];
    }
    int[] tokens = events.tokens();
    int locals = 0;
    int removals = 0;
    for (int k = 0; k < count; k++) {
      int i = from + k;
      chunkLocalsAt[k] = -1;
      chunkSeqKnown[k] = false;
      byte kind = events.kind(i);
      if (kind == KvEventColumns.STORED && hashable(events, i)) {
        int blocks = events.blocks(i);
        if (chunkLocals.length < locals + blocks) {
          chunkLocals = Arrays.copyOf(chunkLocals, Math.max(locals + blocks, chunkLocals.length * 2));
        }
        int at = events.tokenStart(i);
        String lora = events.loraName(i);
        for (int b = 0; b < blocks; b++) {
          chunkLocals[locals + b] = hasher.localHash(tokens, at + b * blockSize, lora, events.extraKeysOf(i, b));
        }
        chunkLocalsAt[k] = locals;
        locals += blocks;
      } else if (kind == KvEventColumns.REMOVED) {
        removals += events.blocks(i);
      }
    }
    tallies[CHUNK_HINTS] = 0;
    int keys = removals + locals; // removed blocks first, then the stores' blocks
    if (chunkRemoved.length < keys) {
      int grown = Math.max(keys, chunkRemoved.length * 2);
      chunkRemoved = new long[grown];
      chunkTiers = new int[grown];
      chunkEntries = new int[grown];
    }
    long[] hashes = events.hashes();
    if (chunkTouched.length < locals) {
      chunkTouched = new long[Math.max(locals, chunkTouched.length * 2)];
    }
    tallies[CHUNK_TOUCHED] = 0;
    long stamp = lock.readLock();
    try {
      int slot = slots.getInt(worker);
      if (slot == NIL) {
        return;
      }
      int r = 0;
      int s = removals;
      for (int k = 0; k < count; k++) {
        int i = from + k;
        if (events.kind(i) == KvEventColumns.REMOVED) {
          int slotTier = slot * TIERS + events.tierOrdinal(i);
          for (int h = events.hashStart(i), end = events.hashStart(i + 1); h < end; h++) {
            chunkTiers[r] = slotTier;
            chunkRemoved[r++] = hashes[h];
          }
        } else if (chunkLocalsAt[k] >= 0) {
          int slotTier = slot * TIERS + events.tierOrdinal(i);
          for (int h = events.hashStart(i), end = events.hashStart(i + 1); h < end; h++) {
            chunkTiers[s] = slotTier;
            chunkRemoved[s++] = hashes[h];
          }
        }
      }
      // The engine buckets first: their misses are in flight while the stores' sequence hashes are chained (which
      // needs no table), and those hashes' runs are then touched with the chains' rounds.
      entries.touchBuckets(chunkTiers, chunkRemoved, chunkEntries, s);
      for (int k = 0; k < count; k++) {
        if (chunkLocalsAt[k] >= 0) {
          touchStore(slot, events, from + k, chunkLocalsAt[k], from, k);
        }
      }
      tallies[CHUNK_SINK] = entries.touchChains(chunkTiers, chunkRemoved, chunkEntries, r, s, chunkTouched,
          (int) tallies[CHUNK_TOUCHED]);
      tallies[CHUNK_HINTS] = r;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** Whether a store's local hashes can be computed ahead: it is one the exclusive phase will hash. */
  private boolean hashable(KvEventColumns events, int i) {
    int blocks = events.blocks(i);
    long[][] extraKeys = events.extraKeys(i);
    return blocks > 0 && events.countsTowardPrefix(i) && events.blockSize(i) == blockSize
        && (long) blocks * blockSize == events.tokenCount(i)
        && (extraKeys == null || extraKeys.length <= blocks);
  }

  /**
   * Computes, from a store's parent's sequence hash (an earlier store of the chunk or the index), the sequence
   * hashes of its blocks and appends them to {@code chunkTouched}, whose runs {@link #prepare} then touches in one
   * loop; caller holds the shared lock. (Its engine chains are touched with the chunk's.)
   */
  private void touchStore(int slot, KvEventColumns events, int i, int localsAt, int from, int k) {
    int tier = events.tierOrdinal(i);
    long[] hashes = events.hashes();
    int blocks = events.blocks(i);
    chunkSeqKnown[k] = false;
    boolean atRoot = !events.hasParent(i);
    long parentHash = events.parent(i);
    long previous = 0;
    boolean known = atRoot;
    if (!known) {
      // The parent is most often the last block of the store just before: not in the index before this chunk.
      for (int j = k - 1; j >= 0 && !known; j--) {
        int earlier = from + j;
        if (chunkSeqKnown[j] && events.kind(earlier) == KvEventColumns.STORED
            && hashes[events.hashStart(earlier + 1) - 1] == parentHash) {
          previous = chunkSeqs[j]; // the last sequence hash of that store
          known = true;
        }
      }
      if (!known) {
        int parent = entries.findAnyTier(slot, tier, parentHash);
        if (parent != NIL && !entries.isOrphan(parent)) {
          previous = entries.seqOf(parent);
          known = true;
        }
      }
    }
    if (!known) {
      return;
    }
    long seq = previous;
    long[] touched = chunkTouched;
    int at = (int) tallies[CHUNK_TOUCHED];
    chunkSeqsAt[k] = at;
    chunkSeqFrom[k] = previous;
    for (int b = 0; b < blocks; b++) {
      long local = chunkLocals[localsAt + b];
      seq = atRoot && b == 0 ? local : BlockHasher.sequenceHash(seq, local);
      touched[at + b] = seq;
    }
    tallies[CHUNK_TOUCHED] = at + blocks;
    chunkSeqs[k] = seq;
    chunkSeqKnown[k] = true;
  }

  /**
   * Applies event {@code i}; the caller holds the write lock. {@code localsAt} and {@code chained} are as in
   * {@link #applyStored}.
   */
  private void applyLocked(WorkerId worker, KvEventColumns events, int i, int localsAt, int chained) {
    byte kind = events.kind(i);
    if (kind == KvEventColumns.STORED) {
      applyStored(worker, events, i, localsAt, chained);
    } else if (kind == KvEventColumns.REMOVED) {
      applyRemoved(worker, events, i, slots.getInt(worker), -1);
    } else {
      int slot = slots.getInt(worker);
      if (slot != NIL) {
        entries.purgeSlot(slot);
      }
    }
  }

  /**
   * Removes every entry of {@code worker} and forgets the worker.
   *
   * @param worker the worker
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
      entries.purgeSlot(slot);
      slotWorkers[slot] = null;
      freeSlots[freeSlotCount++] = slot;
      return true;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /**
   * Applies store {@code i}; the caller holds the write lock. {@code localsAt} is where {@link #prepare} put the
   * event's local hashes in {@code chunkLocals}, or -1 to compute them here; {@code chained} is the event's position
   * in its chunk when {@link #touchStore} chained its sequence hashes, or -1. Those hashes are a function of the
   * local hashes and the parent's sequence hash alone, so they are taken when the parent found here has the
   * sequence hash they were chained from (the index may have changed since), and computed again otherwise.
   */
  private void applyStored(WorkerId worker, KvEventColumns events, int i, int localsAt, int chained) {
    int blocks = events.blocks(i);
    if (blocks == 0) {
      return;
    }
    if (!events.countsTowardPrefix(i)) {
      tallies[IGNORED] += blocks;
      return;
    }
    int eventBlockSize = events.blockSize(i);
    int tokenCount = events.tokenCount(i);
    boolean tokenless = eventBlockSize == 0 && tokenCount == 0;
    if (!tokenless && eventBlockSize != blockSize) {
      tallies[MISMATCHED] += blocks;
      listener.onBlockSizeMismatch(worker, blockSize, eventBlockSize, blocks);
      return;
    }
    String invalid = validate(events, i, tokenless);
    if (invalid != null) {
      tallies[INVALID]++;
      listener.onInvalidEvent(worker, events.event(i), invalid);
      return;
    }
    int slot = slotFor(worker);
    if (slot == NIL) {
      listener.onEventForUnknownWorker(worker, events.event(i));
      return;
    }
    int tier = events.tierOrdinal(i);
    int slotTier = slot * TIERS + tier;
    tallies[STORED] += blocks;

    long[] hashes = events.hashes();
    int first = events.hashStart(i);
    boolean orphan = false;
    long previous = 0;
    boolean atRoot = !events.hasParent(i);
    if (!atRoot) {
      int parent = entries.findAnyTier(slot, tier, events.parent(i));
      if (parent == NIL || entries.isOrphan(parent)) {
        orphan = true;
      } else {
        previous = entries.seqOf(parent);
      }
    }
    boolean prepared = localsAt >= 0; // prepare touched this store's engine chains and sequence runs
    if (!prepared) {
      entries.prefetchEngineChains(slotTier, hashes, first, blocks);
    }
    long[] seqs = null;
    int seqsAt = 0; // where the event's sequence hashes start in seqs
    long firstParent = previous; // the parent of block 0, unless atRoot
    if (!tokenless && !orphan) {
      // All sequence hashes first, so that their chains (walked to find the worker's entry for the same content)
      // can be fetched together, their cache misses overlapping instead of one per stored block.
      if (chained >= 0 && localsAt >= 0 && (atRoot || chunkSeqFrom[chained] == previous)) {
        seqs = chunkTouched;
        seqsAt = chunkSeqsAt[chained];
      } else {
        seqs = seqScratch(blocks);
        int[] tokens = events.tokens();
        int at = events.tokenStart(i);
        String lora = events.loraName(i);
        for (int b = 0; b < blocks; b++) {
          long local = localsAt >= 0 ? chunkLocals[localsAt + b]
              : hasher.localHash(tokens, at + b * blockSize, lora, events.extraKeysOf(i, b));
          seqs[b] = atRoot && b == 0 ? local : BlockHasher.sequenceHash(previous, local);
          previous = seqs[b];
        }
        if (!prepared) {
          entries.prefetchSeqChains(seqs, blocks);
        }
      }
    }
    int orphans = 0;
    for (int b = 0; b < blocks; b++) {
      long seq = 0;
      boolean blockOrphan = orphan;
      long hash = hashes[first + b];
      long parent = 0;
      long parentKind = 0;
      if (tokenless) {
        // A tokenless block is known only through the same engine block in a tier, whose content and parent it
        // takes; the event's parent does not matter.
        int twin = entries.findAnyTier(slot, tier, hash);
        blockOrphan = twin == NIL || entries.isOrphan(twin);
        if (!blockOrphan) {
          seq = entries.seqOf(twin);
          parent = entries.parentOf(twin);
          parentKind = entries.parentKindOf(twin);
        }
      } else if (!orphan) {
        seq = seqs[seqsAt + b];
        if (b > 0) {
          parent = seqs[seqsAt + b - 1];
        } else if (atRoot) {
          parentKind = PrefixTable.ROOT;
        } else {
          parent = firstParent;
        }
      }
      if (blockOrphan) {
        orphans++;
      }
      entries.upsert(slotTier, hash, seq, blockOrphan, parent, parentKind);
    }
    if (orphans > 0) {
      tallies[ORPHANS] += orphans;
      listener.onOrphanBlocks(worker, orphans);
    }
  }

  private long[] seqScratch(int count) {
    if (seqScratch.length < count) {
      seqScratch = new long[Math.max(count, seqScratch.length * 2)];
    }
    return seqScratch;
  }

  private @Nullable String validate(KvEventColumns events, int i, boolean tokenless) {
    int blocks = events.blocks(i);
    int eventBlockSize = events.blockSize(i);
    int tokenCount = events.tokenCount(i);
    if (!tokenless && (long) blocks * eventBlockSize != tokenCount) {
      return "token_ids has " + tokenCount + " tokens but " + blocks + " blocks of " + eventBlockSize + " need "
          + (long) blocks * eventBlockSize;
    }
    long[][] extraKeys = events.extraKeys(i);
    if (extraKeys != null && extraKeys.length > blocks) {
      return "extra_keys has " + extraKeys.length + " entries for " + blocks + " blocks";
    }
    long[] hashes = events.hashes();
    int first = events.hashStart(i);
    if (events.hasParent(i)) {
      long parent = events.parent(i);
      for (int h = first; h < first + blocks; h++) {
        if (hashes[h] == parent) {
          return "block hash " + Long.toUnsignedString(hashes[h]) + " equals its parent";
        }
      }
    }
    if (blocks > 32) {
      return duplicateIn(hashes, first, blocks); // sorted check: the pairwise one below is quadratic
    }
    for (int a = 1; a < blocks; a++) {
      for (int b = 0; b < a; b++) {
        if (hashes[first + b] == hashes[first + a]) {
          return "block hash " + Long.toUnsignedString(hashes[first + a]) + " repeats in one event";
        }
      }
    }
    return null;
  }

  private @Nullable String duplicateIn(long[] hashes, int first, int count) {
    if (sortScratch.length < count) {
      sortScratch = new long[Math.max(count, sortScratch.length * 2)];
    }
    long[] sorted = sortScratch; // reused under the write lock: no allocation per event
    System.arraycopy(hashes, first, sorted, 0, count);
    Arrays.sort(sorted, 0, count);
    for (int i = 1; i < count; i++) {
      if (sorted[i] == sorted[i - 1]) {
        return "block hash " + Long.toUnsignedString(sorted[i]) + " repeats in one event";
      }
    }
    return null;
  }

  /**
   * Applies removal {@code i} of the worker in {@code slot} (NIL if unknown); the caller holds the write lock.
   * {@code hintsAt} is where this event's blocks start among the removed blocks prepare touched (their entries,
   * as found then, are in {@code chunkEntries}), or -1 for none.
   */
  private void applyRemoved(WorkerId worker, KvEventColumns events, int i, int slot, int hintsAt) {
    int blocks = events.blocks(i);
    if (slot == NIL) {
      tallies[UNKNOWN_REMOVALS] += blocks;
      if (blocks > 0) {
        listener.onUnknownRemoval(worker, blocks);
      }
      return;
    }
    int slotTier = slot * TIERS + events.tierOrdinal(i);
    long[] hashes = events.hashes();
    int unknown = 0;
    int[] found = chunkEntries;
    int hints = hintsAt < 0 ? 0 : Math.max(0, Math.min(blocks, (int) tallies[CHUNK_HINTS] - hintsAt));
    for (int b = 0, h = events.hashStart(i); b < blocks; b++, h++) {
      if (entries.release(slotTier, hashes[h], b < hints ? found[hintsAt + b] : NIL)) {
        tallies[REMOVED]++;
      } else {
        unknown++;
      }
    }
    if (unknown > 0) {
      tallies[UNKNOWN_REMOVALS] += unknown;
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
   * @return the matches by worker, in the order the workers were first matched
   */
  @Override
  public Map<WorkerId, PrefixMatch> findMatches(long[] sequenceHashes) {
    Objects.requireNonNull(sequenceHashes, "sequenceHashes");
    PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
    long stamp = lock.readLock();
    try {
      int touched = entries.match(sequenceHashes, sequenceHashes.length, scratch, slotHighWater);
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
   * Starts loading the probe slots a match of a prompt whose block 0 has this sequence hash reads first, without
   * the lock, while the rest of the prompt is hashed; only a hint (racy reads, each index bounded by the array it
   * was read from): the match reads them again under the read lock.
   */
  long warmFirstBlock(long sequenceHash) {
    return entries.touchSeq(sequenceHash);
  }

  /**
   * Fills {@code scratch} with each slot's matched depth under the read lock and returns the number of slots
   * touched; for the router's hot path. The caller must call {@code scratch.reset(touched)} when done.
   */
  int matchLocked(long[] hashes, int count, PrefixTable.MatchScratch scratch) {
    long stamp = lock.tryReadLock();
    if (stamp == 0) {
      stamp = readLockWarming(hashes, count, scratch);
    }
    try {
      return entries.match(hashes, count, scratch, slotHighWater);
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
    int evictedBefore = (int) entries.evictedEntries;
    try {
      if (slot < 0 || slot >= slotHighWater || slotWorkers[slot] == null) {
        return;
      }
      for (int i = 0; i < count; i++) {
        entries.upsert(slot * TIERS, hashes[i], hashes[i], false, i == 0 ? 0 : hashes[i - 1],
            i == 0 ? PrefixTable.ROOT : 0);
      }
      tallies[STORED] += count;
    } finally {
      lock.unlockWrite(stamp);
    }
    int evicted = (int) entries.evictedEntries - evictedBefore;
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
        if (entries.release(slot * TIERS, hashes[i])) { // else evicted by the budget meanwhile
          tallies[REMOVED]++;
        }
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Entries in the index; a racy read unless the caller is the only writer (the prediction index's owner). */
  int size() {
    return entries.size;
  }

  /** Entries held by the worker in {@code slot}; racy read, used for tie-breaking only. */
  int entriesOfSlot(int slot) {
    return entries.entriesOfSlot(slot);
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

  /**
   * The number of entries {@code worker} holds.
   *
   * @param worker the worker
   * @return its entries, 0 if the index does not know it
   */
  @Override
  public long entriesOf(WorkerId worker) {
    long stamp = lock.readLock();
    try {
      int slot = slots.getInt(worker);
      return slot == NIL ? 0 : entries.slotEntries[slot];
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Returns a snapshot of sizes and counters.
   *
   * @return the stats
   */
  @Override
  public IndexStats stats() {
    long stamp = lock.readLock();
    try {
      Map<WorkerId, Long> perWorker = new HashMap<>();
      for (int s = 0; s < slotHighWater; s++) {
        if (slotWorkers[s] != null) {
          perWorker.put(slotWorkers[s], (long) entries.slotEntries[s]);
        }
      }
      return IndexStats.of(entries.size, perWorker, entries.capacity, entries.maxEntries, entries.bytes(),
          tallies[STORED], tallies[REMOVED], tallies[ORPHANS], tallies[MISMATCHED], tallies[INVALID],
          tallies[UNKNOWN_REMOVALS], tallies[IGNORED],
          entries.evictedEntries);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Workers the index knows, in no particular order.
   *
   * @return a copy of the workers
   */
  @Override
  public List<WorkerId> workers() {
    long stamp = lock.readLock();
    try {
      return new ArrayList<>(slots.keySet());
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Runs {@code reader} over the tables under the shared lock; for the test-scope consistency check.
   *
   * @param reader reads the tables; must not change them
   * @param <R> what it returns
   * @return what {@code reader} returned
   */
  <R> R inspect(Function<PrefixTable, R> reader) {
    long stamp = lock.readLock();
    try {
      return reader.apply(entries);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Slots (callers hold the write lock)

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
        freeSlots = Arrays.copyOf(freeSlots, grown);
        entries.ensureSlots(grown);
      }
    } else {
      return NIL;
    }
    slots.put(worker, slot);
    slotWorkers[slot] = worker;
    entries.slotEntries[slot] = 0;
    return slot;
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
    return "KvIndexer{blockSize=" + blockSize + ", entries=" + entries.size + ", maxEntries=" + entries.maxEntries
        + "}";
  }

  /** Configures a {@link KvIndexer}; not thread-safe. */
  public static final class Builder {
    private int blockSize = BlockHasher.DEFAULT_BLOCK_SIZE;
    private int maxEntries = DEFAULT_MAX_ENTRIES;
    private int maxWorkers = DEFAULT_MAX_WORKERS;
    private IndexListener listener = IndexListener.NONE;

    private Builder() {}

    /**
     * Tokens per block; must equal the engines' block size (vLLM default 16).
     *
     * @param blockSize tokens per block
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder blockSize(int blockSize) {
      this.blockSize = BlockHasher.requireBlockSize(blockSize);
      return this;
    }

    /**
     * The entry budget; beyond it the least recently stored entries are dropped.
     *
     * @param maxEntries the budget, in entries
     * @return this builder
     * @throws IllegalArgumentException if not positive or above 2^28
     */
    public Builder maxEntries(int maxEntries) {
      this.maxEntries = Checks.inRange("maxEntries", maxEntries, 1, 1 << 28);
      return this;
    }

    /**
     * The bound on distinct workers; events of further workers are dropped and reported.
     *
     * @param maxWorkers the bound
     * @return this builder
     * @throws IllegalArgumentException if not positive or above 2^24
     */
    public Builder maxWorkers(int maxWorkers) {
      this.maxWorkers = Checks.inRange("maxWorkers", maxWorkers, 1, 1 << 24);
      return this;
    }

    /**
     * Receives reports of events that could not be applied as given; a {@link RouterListener} is one.
     *
     * @param listener the listener
     * @return this builder
     */
    public Builder listener(IndexListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Builds the index.
     *
     * @return the index
     */
    public KvIndexer build() {
      return new KvIndexer(this);
    }
  }
}
