package io.kvroute;

import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Approximate mode: the router's own predictions of what each worker caches, namely the prompts it routed there,
 * each assumed cached for a time to live after it was last routed; not thread-safe for writes: {@link #record} and
 * {@link #expire} run under the admission lock, while {@link #match} runs concurrently under the prediction index's
 * own read lock.
 *
 * <p>Used for every worker under {@link RouterPolicy#approximate()}, and under any other policy for the workers
 * whose KV event stream cannot be trusted ({@link EventStreamState#SILENT}, {@link EventStreamState#BROKEN}, or no
 * event yet): those are scored by what the router sent them rather than as workers with an empty cache, which the
 * smallest-tree tie-break would otherwise flood with every new prefix.
 *
 * <p>A prediction is a node of a per-worker tree of prefixes: a root holds a prompt's blocks from the first; a child
 * holds only the blocks a prompt adds to a prefix an existing node of that worker ends at (a conversation's next
 * turn). Routing a prompt again to a worker whose node ends exactly at its last block renews that node and its
 * ancestors (no index write at all), and extending one stores only the new blocks; any other prompt is stored whole
 * (its blocks shared with other nodes are reference-counted). So the index writes of a selection are the blocks the
 * worker was not yet predicted to hold, not the whole prompt: a repeated prompt costs a hash lookup, where storing
 * (and, a TTL later, removing) its 128 blocks cost about two thirds of an approximate-mode selection. Nodes are kept
 * in one list by last renewal, a node always after its descendants (a renewal moves the node, then its ancestors, to
 * the tail), so expiring from the head never removes a prefix a live node extends.
 *
 * <p>Memory is bounded by the entry budget of the prediction index: before storing, the least recently renewed
 * predictions (the router's own or its peers') are dropped until the new blocks fit, so the index never evicts by
 * itself (its store order is no longer the order of use once renewals skip it); and the router's own predictions
 * are dropped, oldest first, once they name more than twice that many blocks.
 *
 * <p>Peer replicas' predictions ({@link #recordRemote}, from a {@link SharedLoad} port) are kept in a list of their
 * own (a peer's prompt predicted again on the same worker renews its node, and one the router's own node holds whole
 * there renews that node, both with no index write; any other is stored whole), bounded by the budget, and expired by the thread that delivers them ({@link #expireRemote}), so that a
 * selection does not spend the index writes of removing its peers' predictions (as many as recording them took);
 * {@link #expire} removes a peer's prediction only once it is {@value #REMOTE_SLACK_NANOS} ns past its time to live
 * with no delivery since to expire it (a peer gone quiet).
 */
final class Predictions {
  /** The TTL and budget for event-less workers under a non-approximate policy: the approximate policy's defaults. */
  static final long DEFAULT_TTL_NANOS = 120_000_000_000L;
  static final int DEFAULT_BUDGET = 1 << 20;
  /** A selection expires a peer's prediction only this long after its time to live (see the class doc). */
  static final long REMOTE_SLACK_NANOS = 1_000_000_000L;

  private final KvIndexer index;
  private final long ttlNanos;
  private final int budget;
  // Guarded by the admission lock. The router's own predictions: a list by last renewal (head: least recent) and a
  // map from (worker slot, the sequence hash of a node's last block) to the node ending there.
  private final Long2ObjectOpenHashMap<Node> byEnd = new Long2ObjectOpenHashMap<>();
  private final NodeList local = new NodeList();
  private long blocks;
  // Peers' predictions: roots only, by last renewal, and by (slot, last block) as above.
  private final Long2ObjectOpenHashMap<Node> remoteByEnd = new Long2ObjectOpenHashMap<>();
  private final NodeList remote = new NodeList();
  private long remoteBlocks;
  // Counters for tests and benchmarks: nodes renewed without an index write, extended, and stored whole.
  long remoteRenewed;
  long renewed;
  long renewedRemote; // the router's own routing renewing a peer's node
  long extended;
  long storedWhole;
  long remoteStored; // a peer's prediction stored whole (not a renewal)
  long remoteRenewedOwn; // a peer's prediction renewing the router's own node
  // Written under the admission lock; read by selections to skip matching while nothing is predicted.
  private volatile boolean empty = true;

  Predictions(int blockSize, int maxWorkers, long ttlNanos, int budget) {
    this.index = KvIndexer.newBuilder().blockSize(blockSize).maxEntries(budget).maxWorkers(maxWorkers).build();
    this.ttlNanos = ttlNanos;
    this.budget = budget;
  }

  /** Registers a worker; returns its slot in the prediction index, or -1 if the worker bound is reached. */
  int register(WorkerId worker) {
    return index.register(worker);
  }

  /** Forgets a removed worker's predictions; under the admission lock. */
  void removed(WorkerId worker) {
    index.removeWorker(worker);
  }

  /**
   * Matches a request against the predictions, like {@link KvIndexer#matchLocked} (each touched slot's depth, and
   * its GPU depth, which is the same: predictions are stored in the GPU tier), probing a few blocks instead of all
   * of them; any thread.
   *
   * <p>The prediction index is prefix-closed per worker: a worker's predicted blocks are the union of its nodes'
   * paths from the root (a prompt is stored whole, or as the blocks it adds to a live node; a node is dropped only
   * after its descendants), and a peer's prediction is a whole prompt (a warm-up snapshot keeps a prefix of each,
   * see {@code Warmup}). So a worker predicted to hold block {@code i} holds every block before it, and its depth is
   * the position of the last block it holds. The match probes the first and the last block: a worker holding both
   * holds the whole prompt (the usual hit: a hot prompt is predicted whole on each worker it went to), one holding
   * neither holds nothing. For the rest (a shared prefix, a conversation's earlier turn), it probes every
   * {@code sqrt(n)}th block of the {@code n} between, then, once per distinct gap between the last sample a worker
   * holds and the next, the blocks of that gap. A 128-block hit costs 2 probed blocks and a partial one about 24,
   * where the full match probes all 128, each once per worker predicted to hold it. The depths are exactly the full
   * match's ({@code PredictionsModelTest} checks every prefix of every prompt against an independent model). A
   * concurrent store or removal between the probes can make a depth stale, as any match racing with a write.
   */
  int match(long[] hashes, int count, PrefixTable.MatchScratch scratch, Sampling sampling) {
    if (count == 0 || empty) {
      return 0;
    }
    if (count <= 2) {
      return index.matchLocked(hashes, count, scratch);
    }
    long[] ends = sampling.samples(2);
    ends[0] = hashes[0];
    ends[1] = hashes[count - 1];
    int touched = index.matchLocked(ends, 2, scratch);
    int[] depth = scratch.depth;
    int[] gpuDepth = scratch.gpuDepth;
    boolean partial = false;
    for (int i = 0; i < touched; i++) {
      int slot = scratch.touched[i];
      if (depth[slot] == 2) {
        depth[slot] = count;
        gpuDepth[slot] = count;
      } else {
        depth[slot] = PENDING; // holds block 0, not the last: somewhere in between
        gpuDepth[slot] = 0;
        partial = true;
      }
    }
    if (partial) {
      between(hashes, 1, count - 1, scratch, touched, sampling);
    }
    return touched;
  }

  /** {@link #match}'s mark of a slot known to hold the block before a range and not the block after it. */
  private static final int PENDING = -1;

  /**
   * Sets the depth of every {@link #PENDING} slot among the touched ones, each known to hold block {@code from - 1}
   * and not block {@code to}: a sample of every {@code sqrt(to - from)}th block of the range and its last, then the
   * gap after each slot's last sample held, once per distinct gap (see {@link #match}).
   */
  private void between(long[] hashes, int from, int to, PrefixTable.MatchScratch scratch, int touched,
      Sampling sampling) {
    int[] depth = scratch.depth;
    int[] gpuDepth = scratch.gpuDepth;
    PrefixTable.MatchScratch gap = sampling.gap;
    int length = to - from;
    int stride = Math.max(1, (int) Math.sqrt(length));
    long[] sampled = sampling.samples(length / stride + 2);
    int m = 0;
    for (int p = from; p < to; p += stride) {
      sampled[m++] = hashes[p];
    }
    if ((to - 1 - from) % stride != 0) {
      sampled[m++] = hashes[to - 1];
    }
    int gapTouched = length == 0 ? 0 : index.matchLocked(sampled, m, gap);
    // Each pending slot matched samples [0, k): none means it ends at `from`, all means at `to`; otherwise mark it
    // -(k + 1) until the gap after sample k - 1 is matched.
    for (int i = 0; i < touched; i++) {
      int slot = scratch.touched[i];
      if (depth[slot] != PENDING) {
        continue;
      }
      int k = length == 0 ? 0 : gap.depth[slot];
      depth[slot] = k == 0 ? from : k == m ? to : -(k + 1);
    }
    gap.reset(gapTouched);
    long[] run = sampling.between(stride);
    for (int i = 0; i < touched; i++) {
      int mark = depth[scratch.touched[i]];
      if (mark >= 0) {
        continue; // known, or matched with an earlier slot of the same gap
      }
      int k = -mark - 1;
      int start = from + (k - 1) * stride + 1; // the block after the last sample held
      int end = Math.min(from + k * stride, to - 1); // the first sample missed
      int n = end - start;
      System.arraycopy(hashes, start, run, 0, n);
      int runTouched = n == 0 ? 0 : index.matchLocked(run, n, gap);
      for (int j = i; j < touched; j++) {
        int slot = scratch.touched[j];
        if (depth[slot] == mark) {
          depth[slot] = start + (n == 0 ? 0 : gap.depth[slot]);
        }
      }
      gap.reset(runTouched);
    }
    for (int i = 0; i < touched; i++) {
      int slot = scratch.touched[i];
      gpuDepth[slot] = depth[slot];
    }
  }

  /** Per-thread buffers of {@link #match}; not thread-safe (one per selecting thread). */
  static final class Sampling {
    final PrefixTable.MatchScratch gap = new PrefixTable.MatchScratch();
    private long[] samples = new long[32];
    private long[] between = new long[32];

    long[] samples(int n) {
      if (samples.length < n) {
        samples = new long[Math.max(n, 2 * samples.length)];
      }
      return samples;
    }

    long[] between(int n) {
      if (between.length < n) {
        between = new long[Math.max(n, 2 * between.length)];
      }
      return between;
    }
  }

  /** Predicted entries of the worker in {@code slot}; racy read, for tie-breaking. */
  int entriesOfSlot(int slot) {
    return index.entriesOfSlot(slot);
  }

  /**
   * Records that the request was routed to the worker; under the admission lock, for a registered worker.
   *
   * @param matched the blocks the selection's match found predicted on this worker (its depth in the prediction
   *     index, read before the admission lock: a node still in the map proves its prefix is still predicted)
   */
  void record(WorkerRegistry.WorkerState state, long[] hashes, int count, int matched, long nowNanos) {
    if (count == 0) {
      return;
    }
    long expiresAt = nowNanos + ttlNanos;
    int slot = state.predictedSlot;
    @Nullable Node at = matched > 0 ? byEnd.get(key(slot, hashes[Math.min(matched, count) - 1])) : null;
    if (at != null && (at.state != state || at.end != Math.min(matched, count)
        || at.lastHash() != hashes[at.end - 1])) {
      at = null; // another registration in the slot, or a hash collision: store the prompt whole
    }
    if (at != null && at.end == count) {
      renewed++;
      renew(at, expiresAt);
      return;
    }
    // A peer's prediction of the whole prompt on this worker (a replica routed it there): renew it rather than
    // store the prompt again; it then lives for the TTL from this routing, as a node of the router's own would.
    @Nullable Node peer = remoteByEnd.get(key(slot, hashes[count - 1]));
    if (peer != null && peer.state == state && peer.end == count && peer.lastHash() == hashes[count - 1]) {
      renewedRemote++;
      peer.expiresAtNanos = expiresAt;
      remote.moveToTail(peer);
      return;
    }
    makeRoom(count - (at == null ? 0 : at.end));
    if (at != null && at.dropped) {
      at = null; // making room dropped the prefix it extends (the least recently renewed): store the prompt whole
      makeRoom(count);
    }
    int from = at == null ? 0 : at.end;
    long[] own = Arrays.copyOfRange(hashes, from, count);
    index.storeSequence(slot, own, own.length);
    Node node = new Node(state, own, count, at, expiresAt);
    Node previous = byEnd.put(key(slot, hashes[count - 1]), node);
    if (previous != null) {
      previous.mapped = false; // an older node ending there (stored before its prefix's entries were dropped)
    }
    local.append(node);
    blocks += own.length;
    if (at == null) {
      storedWhole++;
    } else {
      extended++;
      renew(at, expiresAt); // after the child: a node stays behind its descendants in the list
    }
    empty = false;
  }

  /**
   * Records a peer replica's prediction that the worker holds these blocks; under the admission lock, for a
   * registered worker.
   */
  void recordRemote(WorkerRegistry.WorkerState state, long[] hashes, int count, long nowNanos) {
    if (count == 0) {
      return;
    }
    long expiresAt = nowNanos + ttlNanos;
    long key = key(state.predictedSlot, hashes[count - 1]);
    @Nullable Node at = remoteByEnd.get(key);
    if (at != null && at.state == state && at.end == count && at.lastHash() == hashes[count - 1]) {
      remoteRenewed++;
      at.expiresAtNanos = expiresAt;
      remote.moveToTail(at);
      return;
    }
    // The router's own node of the whole prompt on this worker (it routed the prompt there too): renew it, as its
    // own routing would, rather than store the same blocks a second time (the index would count them once, but the
    // writes, and a TTL later the removals, would be the delivering thread's, holding the admission lock).
    @Nullable Node own = byEnd.get(key);
    if (own != null && own.state == state && own.end == count && own.lastHash() == hashes[count - 1]) {
      remoteRenewedOwn++;
      renew(own, expiresAt);
      return;
    }
    makeRoom(count);
    long[] copy = count == hashes.length ? hashes : Arrays.copyOf(hashes, count);
    index.storeSequence(state.predictedSlot, copy, count);
    Node node = new Node(state, copy, count, null, expiresAt);
    Node previous = remoteByEnd.put(key, node);
    if (previous != null) {
      previous.mapped = false;
    }
    remote.append(node);
    remoteBlocks += count;
    remoteStored++;
    empty = false;
  }

  /** Drops expired predictions, and the oldest beyond twice the budget; under the admission lock. */
  void expire(long nowNanos) {
    Node n;
    while ((n = local.head) != null && (n.expiresAtNanos - nowNanos <= 0 || blocks > 2L * budget)) {
      dropHead();
    }
    while ((n = remote.head) != null && n.expiresAtNanos + REMOTE_SLACK_NANOS - nowNanos <= 0) {
      dropRemoteHead();
    }
    updateEmpty();
  }

  /** Drops peers' expired predictions, and their oldest beyond the budget; under the admission lock. */
  void expireRemote(long nowNanos) {
    Node n;
    while ((n = remote.head) != null && (n.expiresAtNanos - nowNanos <= 0 || remoteBlocks > budget)) {
      dropRemoteHead();
    }
    updateEmpty();
  }

  /**
   * Drops the least recently renewed predictions, the router's own or its peers', until {@code newBlocks} more
   * entries fit in the index's budget (some may already be there; then it drops a little early).
   */
  private void makeRoom(int newBlocks) {
    while ((long) index.size() + newBlocks > budget) {
      Node n = local.head;
      Node p = remote.head;
      if (n == null && p == null) {
        return;
      }
      if (p == null || (n != null && n.expiresAtNanos - p.expiresAtNanos <= 0)) {
        dropHead();
      } else {
        dropRemoteHead();
      }
    }
  }

  private void dropHead() {
    Node n = local.head;
    local.unlink(n);
    n.dropped = true;
    blocks -= n.hashes.length;
    if (n.mapped) {
      byEnd.remove(key(n.state.predictedSlot, n.lastHash()));
    }
    remove(n.state, n.hashes);
  }

  private void dropRemoteHead() {
    Node n = remote.head;
    remote.unlink(n);
    remoteBlocks -= n.hashes.length;
    if (n.mapped) {
      remoteByEnd.remove(key(n.state.predictedSlot, n.lastHash()));
    }
    remove(n.state, n.hashes);
  }

  private void updateEmpty() {
    if (local.head == null && remote.head == null && !empty) {
      empty = true;
    }
  }

  /** Moves the node, then each of its ancestors, to the tail, with the new expiry. */
  private void renew(Node node, long expiresAt) {
    for (@Nullable Node n = node; n != null; n = n.parent) {
      n.expiresAtNanos = expiresAt;
      local.moveToTail(n);
    }
  }

  private void remove(WorkerRegistry.WorkerState state, long[] hashes) {
    // Under the admission lock a registered state's slot is still its own; a removed one's entries are gone.
    if (state.registered) {
      index.removeSequence(state.predictedSlot, hashes, hashes.length);
    }
  }

  private static long key(int slot, long lastHash) {
    return lastHash ^ ((slot + 1L) * 0x9E37_79B9_7F4A_7C15L);
  }

  /** The router's own predictions' nodes, for tests. */
  int nodes() {
    return byEnd.size();
  }

  /** The prediction index, for tests. */
  KvIndexer index() {
    return index;
  }

  /** One node of a worker's tree of predicted prefixes: blocks {@code [end - hashes.length, end)}. */
  private static final class Node {
    final WorkerRegistry.WorkerState state;
    final long[] hashes;
    final int end;
    final @Nullable Node parent;
    long expiresAtNanos;
    boolean mapped = true;
    boolean dropped;
    @Nullable Node prev;
    @Nullable Node next;

    Node(WorkerRegistry.WorkerState state, long[] hashes, int end, @Nullable Node parent, long expiresAtNanos) {
      this.state = state;
      this.hashes = hashes;
      this.end = end;
      this.parent = parent;
      this.expiresAtNanos = expiresAtNanos;
    }

    long lastHash() {
      return hashes[hashes.length - 1];
    }
  }

  /** An intrusive doubly linked list of nodes, head the least recently renewed. */
  private static final class NodeList {
    @Nullable Node head;
    @Nullable Node tail;

    void append(Node n) {
      n.prev = tail;
      n.next = null;
      if (tail == null) {
        head = n;
      } else {
        tail.next = n;
      }
      tail = n;
    }

    void unlink(Node n) {
      if (n.prev == null) {
        head = n.next;
      } else {
        n.prev.next = n.next;
      }
      if (n.next == null) {
        tail = n.prev;
      } else {
        n.next.prev = n.prev;
      }
      n.prev = null;
      n.next = null;
    }

    void moveToTail(Node n) {
      if (n != tail) {
        unlink(n);
        append(n);
      }
    }
  }
}
