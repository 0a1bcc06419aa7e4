package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Random event streams applied to {@link KvIndexer} give the same answers as a naive reference model: stores with
 * known, unknown and absent parents, duplicates, tiers, tokenless offloads, malformed and mismatched events,
 * removals of known and unknown blocks, clears, worker removals and budget eviction, and the same content stored by
 * one worker under two engine hash salts (one matchable entry and its shadows).
 */
class KvIndexerPropertyTest {
  private static final int BLOCK = 4;
  private static final int DOCS = 6;
  private static final int DOC_BLOCKS = 8;
  private static final BlockHasher HASHER = BlockHasher.of(BLOCK);
  private static final WorkerId[] WORKERS = {
      WorkerId.of("a"), WorkerId.of("b"), new WorkerId("b", 1), WorkerId.of("c")};

  static Stream<Arguments> seeds() {
    return LongStream.range(0, 1000).mapToObj(seed -> Arguments.of(seed));
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void indexAgreesWithReferenceModel(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int budget = seed % 3 == 0 ? 8 + random.nextInt(24) : 100_000;
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).maxEntries(budget).build();
    Model model = new Model(budget);
    int[][] docs = documents(random);
    long[] salts = new long[WORKERS.length];
    long[] altSalts = new long[WORKERS.length];
    for (int i = 0; i < salts.length; i++) {
      salts[i] = random.nextLong();
      altSalts[i] = random.nextLong();
    }
    int steps = 150 + random.nextInt(100);
    Object lastEvent = null;
    // Odd seeds deliver stores and removals as a subscriber does, in batches of one worker's events through
    // applyAll or applyColumns (chunked, prepared under the shared lock); the model applies each event at once, and every other
    // operation, queries included, first flushes the batch.
    Batch batch = seed % 2 == 1 ? new Batch(index, random) : null;
    for (int step = 0; step < steps; step++) {
      int w = random.nextInt(WORKERS.length);
      WorkerId worker = WORKERS[w];
      if (batch != null && (worker != batch.worker || random.nextInt(6) == 0)) {
        batch.flush();
        batch.worker = worker;
      }
      int op = random.nextInt(100);
      // Now and then the worker hashes with a second salt: the same content under other engine hashes (shadows).
      long salt = random.nextInt(4) == 0 ? altSalts[w] : salts[w];
      if (op < 55) {
        KvEvent.BlockStored event = randomStore(random, docs, salt);
        lastEvent = event;
        if (batch != null) {
          batch.events.add(event);
        } else {
          index.apply(worker, event);
        }
        model.store(worker, event);
      } else if (op < 80) {
        KvEvent.BlockRemoved event = randomRemove(random, docs, salt);
        if (batch != null) {
          batch.events.add(event);
        } else {
          index.apply(worker, event);
        }
        model.remove(worker, event);
      } else if (op < 84) {
        if (batch != null) {
          batch.flush();
        }
        index.apply(worker, KvEvent.AllBlocksCleared.INSTANCE);
        model.clear(worker);
      } else if (op < 86) {
        if (batch != null) {
          batch.flush();
        }
        index.removeWorker(worker);
        model.removeWorker(worker);
      } else {
        if (batch != null) {
          batch.flush();
        }
        long[] query = randomQuery(random, docs);
        assertEquals(model.match(query), index.findMatches(query), "step " + step + " query");
      }
      if (step % 25 == 0 || Boolean.getBoolean("kv.debug")) {
        if (batch != null) {
          batch.flush();
        }
        IndexInvariants.check(index);
      }
      if (Boolean.getBoolean("kv.debug")) {
        for (int[] doc : docs) {
          long[] q = HASHER.sequenceHashes(doc);
          if (!model.match(q).equals(index.findMatches(q))) {
            throw new AssertionError("diverged after " + lastEvent + " doc " + java.util.Arrays.toString(q) + " step " + step + " op " + op + " worker " + worker + " model "
                + model.match(q) + " index " + index.findMatches(q));
          }
        }
      }
    }
    if (batch != null) {
      batch.flush();
    }
    IndexInvariants.check(index);
    for (int[] doc : docs) {
      long[] query = HASHER.sequenceHashes(doc);
      assertEquals(model.match(query), index.findMatches(query), "final query");
    }
    IndexStats stats = index.stats();
    assertEquals(model.size(), stats.entries(), "entries");
    for (WorkerId worker : WORKERS) {
      assertEquals(model.entriesOf(worker), index.entriesOf(worker), "entries of " + worker);
    }
  }

  /** One worker's pending events, applied with {@link KvIndexer#applyAll} at a flush; a list of random kind. */
  private static final class Batch {
    final KvIndexer index;
    final SplittableRandom random;
    final List<KvEvent> events = new ArrayList<>();
    WorkerId worker = WORKERS[0];

    Batch(KvIndexer index, SplittableRandom random) {
      this.index = index;
      this.random = random;
    }

    void flush() {
      if (!events.isEmpty()) {
        int path = random.nextInt(3);
        if (path == 2) {
          // As a decoder does: hashes and tokens appended into reused columns, then each event committed.
          columns.clear();
          for (KvEvent event : events) {
            commit(columns, event);
          }
          index.applyColumns(worker, columns);
        } else {
          index.applyAll(worker, path == 0 ? List.copyOf(events) : new LinkedList<>(events));
        }
        events.clear();
      }
    }

    final KvEventColumns columns = new KvEventColumns();

    private static void commit(KvEventColumns columns, KvEvent event) {
      if (event instanceof KvEvent.BlockStored s) {
        for (long h : s.blockHashes()) {
          columns.appendHash(h);
        }
        for (int t : s.tokenIds()) {
          columns.appendToken(t);
        }
        Long parent = s.parentBlockHash();
        columns.commitStored(parent != null, parent == null ? 0 : parent, s.blockSize(), s.tier(), s.loraName(),
            s.cacheSpecKind(), s.extraKeys(), -1);
      } else if (event instanceof KvEvent.BlockRemoved r) {
        for (long h : r.blockHashes()) {
          columns.appendHash(h);
        }
        columns.commitRemoved(r.tier(), -1);
      } else {
        columns.commitCleared(-1);
      }
    }
  }

  /** Documents sharing prefixes of random length with document 0. */
  private static int[][] documents(SplittableRandom random) {
    int[][] docs = new int[DOCS][DOC_BLOCKS * BLOCK];
    for (int t = 0; t < docs[0].length; t++) {
      docs[0][t] = random.nextInt(50_000);
    }
    for (int d = 1; d < DOCS; d++) {
      int shared = random.nextInt(DOC_BLOCKS) * BLOCK;
      for (int t = 0; t < docs[d].length; t++) {
        docs[d][t] = t < shared ? docs[0][t] : random.nextInt(50_000);
      }
    }
    return docs;
  }

  /** The engine's hash: chained over content like vLLM's, but salted per worker, unlike the router's. */
  private static long engineHash(long salt, long routerSeq) {
    long h = (routerSeq ^ salt) * 0x9E3779B97F4A7C15L;
    return (h ^ (h >>> 29)) & 0x3FFFFFFFFFFL; // narrowed so that collisions with random unknowns stay possible
  }

  private static KvEvent.BlockStored randomStore(SplittableRandom random, int[][] docs, long salt) {
    int[] doc = docs[random.nextInt(DOCS)];
    long[] seq = HASHER.sequenceHashes(doc);
    int from = random.nextInt(DOC_BLOCKS);
    int to = from + 1 + random.nextInt(DOC_BLOCKS - from);
    int blocks = to - from;
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = engineHash(salt, seq[from + i]);
    }
    Long parent = from == 0 ? null : engineHash(salt, seq[from - 1]);
    if (from > 0 && random.nextInt(10) == 0) {
      parent = random.nextLong(); // unknown parent: orphan
    }
    int[] tokens = java.util.Arrays.copyOfRange(doc, from * BLOCK, to * BLOCK);
    int blockSize = BLOCK;
    StorageTier tier = random.nextInt(5) == 0 ? StorageTier.HOST : StorageTier.GPU;
    String kind = null;
    int fault = random.nextInt(40);
    if (fault == 0) {
      blockSize = BLOCK * 2; // mismatched block size
      tokens = java.util.Arrays.copyOf(tokens, blocks * blockSize);
    } else if (fault == 1) {
      tokens = java.util.Arrays.copyOf(tokens, tokens.length - 1); // malformed
    } else if (fault == 2 && blocks > 1) {
      hashes[1] = hashes[0]; // repeated hash
    } else if (fault == 3) {
      kind = "sliding_window";
    } else if (fault == 4) {
      kind = "full_attention";
    } else if (fault == 5) {
      tokens = new int[0]; // tokenless offload placeholder
      blockSize = 0;
    }
    return new KvEvent.BlockStored(hashes, parent, tokens, blockSize, null, tier, kind, null);
  }

  private static KvEvent.BlockRemoved randomRemove(SplittableRandom random, int[][] docs, long salt) {
    long[] seq = HASHER.sequenceHashes(docs[random.nextInt(DOCS)]);
    int n = 1 + random.nextInt(3);
    long[] hashes = new long[n];
    for (int i = 0; i < n; i++) {
      hashes[i] = random.nextInt(8) == 0 ? random.nextLong() : engineHash(salt, seq[random.nextInt(DOC_BLOCKS)]);
    }
    return new KvEvent.BlockRemoved(hashes, random.nextInt(5) == 0 ? StorageTier.HOST : StorageTier.GPU);
  }

  private static long[] randomQuery(SplittableRandom random, int[][] docs) {
    int[] doc = docs[random.nextInt(DOCS)].clone();
    int length = BLOCK * (1 + random.nextInt(DOC_BLOCKS));
    if (random.nextBoolean()) {
      doc[random.nextInt(length)] ^= 1; // diverge somewhere
    }
    return HASHER.sequenceHashes(java.util.Arrays.copyOf(doc, length));
  }

  /** The obvious implementation: maps and a linear scan for the least recently stored entry. */
  private static final class Model {
    private final int budget;
    private final Map<Key, Entry> entries = new HashMap<>();
    private long clock;

    Model(int budget) {
      this.budget = budget;
    }

    record Key(WorkerId worker, StorageTier tier, long engineHash) {}

    static final class Entry {
      @Nullable Long seq; // null: orphan
      int refs;
      long storedAt;
    }

    void store(WorkerId worker, KvEvent.BlockStored e) {
      long[] hashes = e.blockHashes();
      if (hashes.length == 0) {
        return;
      }
      if (!e.countsTowardPrefix()) {
        return;
      }
      boolean tokenless = e.blockSize() == 0 && e.tokenIds().length == 0;
      if (!tokenless && e.blockSize() != BLOCK) {
        return;
      }
      if (!tokenless && hashes.length * e.blockSize() != e.tokenIds().length) {
        return;
      }
      for (int i = 0; i < hashes.length; i++) {
        if (e.parentBlockHash() != null && hashes[i] == e.parentBlockHash()) {
          return;
        }
        for (int j = 0; j < i; j++) {
          if (hashes[i] == hashes[j]) {
            return;
          }
        }
      }
      Long previous = null;
      boolean orphan = false;
      boolean atRoot = e.parentBlockHash() == null;
      if (!atRoot) {
        Entry parent = findAnyTier(worker, e.tier(), e.parentBlockHash());
        if (parent == null || parent.seq == null) {
          orphan = true;
        } else {
          previous = parent.seq;
        }
      }
      for (int i = 0; i < hashes.length; i++) {
        Long seq = null;
        if (tokenless) {
          Entry twin = findAnyTier(worker, e.tier(), hashes[i]);
          seq = twin == null ? null : twin.seq;
        } else if (!orphan) {
          long local = HASHER.localHash(e.tokenIds(), i * BLOCK, null, null);
          seq = atRoot && i == 0 ? local : BlockHasher.sequenceHash(previous, local);
          previous = seq;
        }
        Key key = new Key(worker, e.tier(), hashes[i]);
        Entry existing = entries.get(key);
        if (existing != null) {
          existing.seq = seq;
          existing.refs++;
          existing.storedAt = ++clock;
          continue;
        }
        if (entries.size() == budget) {
          Key oldest = null;
          long oldestAt = Long.MAX_VALUE;
          for (Map.Entry<Key, Entry> candidate : entries.entrySet()) {
            if (candidate.getValue().storedAt < oldestAt) {
              oldestAt = candidate.getValue().storedAt;
              oldest = candidate.getKey();
            }
          }
          entries.remove(oldest);
        }
        Entry created = new Entry();
        created.seq = seq;
        created.refs = 1;
        created.storedAt = ++clock;
        entries.put(key, created);
      }
    }

    private @Nullable Entry findAnyTier(WorkerId worker, StorageTier tier, long hash) {
      Entry e = entries.get(new Key(worker, tier, hash));
      for (StorageTier t : StorageTier.values()) {
        if (e == null && t != tier) {
          e = entries.get(new Key(worker, t, hash));
        }
      }
      return e;
    }

    void remove(WorkerId worker, KvEvent.BlockRemoved e) {
      for (long hash : e.blockHashes()) {
        Key key = new Key(worker, e.tier(), hash);
        Entry entry = entries.get(key);
        if (entry != null && --entry.refs == 0) {
          entries.remove(key);
        }
      }
    }

    void clear(WorkerId worker) {
      entries.keySet().removeIf(k -> k.worker.equals(worker));
    }

    void removeWorker(WorkerId worker) {
      clear(worker);
    }

    int size() {
      return entries.size();
    }

    long entriesOf(WorkerId worker) {
      return entries.keySet().stream().filter(k -> k.worker.equals(worker)).count();
    }

    Map<WorkerId, PrefixMatch> match(long[] query) {
      Map<WorkerId, PrefixMatch> result = new LinkedHashMap<>();
      for (WorkerId worker : WORKERS) {
        int any = depth(worker, query, null);
        if (any > 0) {
          result.put(worker, new PrefixMatch(any, depth(worker, query, StorageTier.GPU)));
        }
      }
      return result;
    }

    private int depth(WorkerId worker, long[] query, @Nullable StorageTier tier) {
      int depth = 0;
      while (depth < query.length && holds(worker, query[depth], tier)) {
        depth++;
      }
      return depth;
    }

    private boolean holds(WorkerId worker, long seq, @Nullable StorageTier tier) {
      for (Map.Entry<Key, Entry> e : entries.entrySet()) {
        if (e.getKey().worker.equals(worker) && (tier == null || e.getKey().tier == tier)
            && Objects.equals(e.getValue().seq, seq)) {
          return true;
        }
      }
      return false;
    }
  }
}
