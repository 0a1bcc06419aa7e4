package io.kvroute.sync.nats;

import io.kvroute.RemoteLoad;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The receiving side of the protocol: which peers are alive, their frame sequences and snapshots, and what of their
 * frames reaches the router's {@link RemoteLoad} view; thread-safe (all methods synchronize on the table).
 *
 * <p>Rules that keep the view exact: frames at or below a peer's last sequence are dropped (duplicates); a gap, an
 * unknown peer or a new instance under a known name means earlier deltas were missed, so the frame is still applied
 * (booking ids make that idempotent) and a snapshot is asked for; a snapshot replaces the peer's whole state
 * (drop, then re-book). A peer not heard from within the TTL is dropped, so a dead replica's load disappears.
 */
final class PeerTable {
  /** A peer out of sync is asked for a snapshot at most this often. */
  static final long REQUEST_BACKOFF_NANOS = 250_000_000L;
  /** A snapshot staged over more bookings than this is abandoned (and asked again). */
  static final int MAX_STAGED_BOOKINGS = 1 << 20;
  /** Frames of further peers are rejected: a flood of made-up replica names cannot grow the table without bound. */
  static final int MAX_PEERS = 4096;

  private final String self;
  private final RemoteLoad view;
  private final SyncListener listener;
  private final Outbox outbox;
  private final Map<String, Peer> peers = new HashMap<>();
  private volatile int peerCount; // peers.size(), for the router's unlocked read at every selection
  private long[] keyScratch = new long[64];
  private long[] hashScratch = new long[256];
  private long framesApplied;
  private long framesRejected;
  private long renewalsMissed;

  /** One peer's receive state. */
  static final class Peer {
    final String name;
    long instance;
    long lastSeq;
    long lastHeardNanos;
    boolean synced;
    long lastRequestNanos = Long.MIN_VALUE;
    // A snapshot being received part by part.
    long stagingId = -1;
    int stagingNextPart;
    long stagingNextSeq;
    final List<Frame> staged = new ArrayList<>();
    int stagedBookings;
    // The prompts this peer published whole (or as renewals), from which its renewals are rebuilt.
    final PromptDictionary prompts = new PromptDictionary();

    Peer(String name) {
      this.name = name;
    }
  }

  /** What the table asks of the sending side; called while the table is locked, so it must only enqueue. */
  interface Outbox {
    /** A peer asked for this replica's snapshot. */
    void snapshotRequested(String by);

    /** This replica should ask {@code peer} for its snapshot. */
    void requestSnapshotOf(String peer);
  }

  PeerTable(String self, RemoteLoad view, SyncListener listener, Outbox outbox) {
    this.self = self;
    this.view = view;
    this.listener = listener;
    this.outbox = outbox;
  }

  /**
   * Handles one decoded frame received at {@code nowNanos}; a frame answered with {@link Disposition#STAGED} is kept
   * (a snapshot part), so the caller must decode the next message into a fresh one.
   */
  synchronized Disposition receive(Frame f, long nowNanos) {
    if (f.replica.equals(self)) {
      return Disposition.OWN;
    }
    if ((f.kind == Frame.DELTAS || f.kind == Frame.SNAPSHOT) && f.blockSize != view.blockSize()) {
      framesRejected++;
      notify(l -> l.onFrameRejected("replica " + f.replica + " uses block size " + f.blockSize + ", this router "
          + view.blockSize()));
      return Disposition.REJECTED;
    }
    if (f.kind == Frame.GOODBYE) {
      Peer p = peers.get(f.replica);
      if (p != null && p.instance == f.instance) {
        peers.remove(f.replica);
        peerCount = peers.size();
        view.dropReplica(f.replica);
        notify(l -> l.onPeerLeft(f.replica, "goodbye"));
      }
      return Disposition.CONTROL;
    }
    Peer p = peers.get(f.replica);
    if (p == null && peers.size() >= MAX_PEERS) {
      framesRejected++;
      notify(l -> l.onFrameRejected("more than " + MAX_PEERS + " peer replicas; frame of " + f.replica
          + " dropped"));
      return Disposition.REJECTED;
    }
    if (p == null) {
      p = new Peer(f.replica);
      p.instance = f.instance;
      p.lastSeq = f.seq - 1;
      peers.put(f.replica, p);
      peerCount = peers.size();
      notify(l -> l.onPeerJoined(f.replica));
    } else if (p.instance != f.instance) {
      // The peer restarted: what its previous instance booked is gone.
      view.dropReplica(f.replica);
      notify(l -> l.onPeerLeft(f.replica, "restarted"));
      p = new Peer(f.replica);
      p.instance = f.instance;
      p.lastSeq = f.seq - 1;
      peers.put(f.replica, p);
      peerCount = peers.size();
      notify(l -> l.onPeerJoined(f.replica));
    }
    if (f.seq <= p.lastSeq) {
      return Disposition.DUPLICATE;
    }
    p.lastHeardNanos = nowNanos;
    if (f.seq != p.lastSeq + 1) {
      long expected = p.lastSeq + 1;
      String name = p.name;
      p.synced = false;
      notify(l -> l.onGap(name, expected, f.seq));
    }
    p.lastSeq = f.seq;
    if (f.kind == Frame.SNAPSHOT_REQUEST) {
      if (f.target.isEmpty() || f.target.equals(self)) {
        outbox.snapshotRequested(f.replica);
      }
      askIfUnsynced(p, nowNanos);
      return Disposition.CONTROL;
    }
    if (f.kind == Frame.SNAPSHOT) {
      return stage(p, f, nowNanos);
    }
    if (p.stagingId >= 0) {
      abandonStaging(p); // deltas never interleave a snapshot's parts: the rest of it was lost
    }
    applyDeltas(p, f);
    framesApplied++;
    askIfUnsynced(p, nowNanos);
    return Disposition.APPLIED;
  }

  private Disposition stage(Peer p, Frame f, long nowNanos) {
    boolean continues = p.stagingId == f.snapshotId && f.part == p.stagingNextPart && f.seq == p.stagingNextSeq;
    if (f.part == 0) {
      p.prompts.clear(); // the sender cleared its own just before this part (see PromptDictionary)
      abandonStaging(p);
      p.stagingId = f.snapshotId;
    } else if (!continues) {
      abandonStaging(p);
      askIfUnsynced(p, nowNanos);
      return Disposition.DROPPED;
    }
    p.staged.add(f);
    p.stagedBookings += f.recordCount;
    p.stagingNextPart = f.part + 1;
    p.stagingNextSeq = f.seq + 1;
    if (p.stagedBookings > MAX_STAGED_BOOKINGS) {
      abandonStaging(p);
      return Disposition.REJECTED;
    }
    if (!f.lastPart) {
      return Disposition.STAGED;
    }
    view.dropReplica(p.name);
    for (Frame part : p.staged) {
      applyDeltas(p, part);
    }
    int bookings = p.stagedBookings;
    String name = p.name;
    abandonStaging(p);
    p.synced = true;
    framesApplied++;
    notify(l -> l.onSnapshotApplied(name, bookings));
    return Disposition.SNAPSHOT_APPLIED;
  }

  private void abandonStaging(Peer p) {
    p.stagingId = -1;
    p.staged.clear();
    p.stagedBookings = 0;
    p.stagingNextPart = 0;
  }

  private void askIfUnsynced(Peer p, long nowNanos) {
    if (!p.synced && (p.lastRequestNanos == Long.MIN_VALUE || nowNanos - p.lastRequestNanos >= REQUEST_BACKOFF_NANOS)) {
      p.lastRequestNanos = nowNanos;
      outbox.requestSnapshotOf(p.name);
    }
  }

  private void applyDeltas(Peer peer, Frame f) {
    String replica = peer.name;
    for (int i = 0; i < f.recordCount; i++) {
      long id = f.ids[i];
      switch (f.tags[i]) {
        case Frame.BOOK -> {
          int blocks = f.blocks[i];
          int keys = f.keyCount[i];
          if (keys != RemoteLoad.loadKeyCount(blocks)) {
            continue; // a peer with another key stride: its booking counts requests, not blocks
          }
          long[] k = f.keys;
          if (f.keyOffset[i] != 0) {
            k = scratch(keys);
            System.arraycopy(f.keys, f.keyOffset[i], k, 0, keys);
          }
          book(replica, id, f, i, blocks, k, keys);
        }
        case Frame.BOOK_PREDICTED -> {
          int blocks = f.blocks[i];
          long[] hashes = hashScratch(blocks);
          System.arraycopy(f.keys, f.keyOffset[i], hashes, 0, blocks);
          predictedBooking(peer, id, f, i, hashes, blocks);
        }
        case Frame.RENEW -> {
          int blocks = f.blocks[i];
          long[] hashes = hashScratch(blocks);
          int ref = f.refBlocks[i];
          if (!peer.prompts.copyPrefix(f.refHash[i], ref, hashes)) {
            // Its prefix came in a frame this table missed: the booking cannot be rebuilt, so its load is counted
            // nowhere until the peer's snapshot (asked for now) replaces all of its bookings.
            renewalsMissed++;
            peer.synced = false;
            continue;
          }
          System.arraycopy(f.keys, f.keyOffset[i], hashes, ref, blocks - ref);
          predictedBooking(peer, id, f, i, hashes, blocks);
        }
        case Frame.FIRST_TOKEN -> view.firstToken(replica, id);
        case Frame.CLOSE -> view.closed(replica, id);
        default -> { }
      }
    }
  }

  /** An approximate-mode booking with all its hashes: predicted, booked by its load keys, and remembered. */
  private void predictedBooking(Peer peer, long id, Frame f, int i, long[] hashes, int blocks) {
    view.predicted(f.worker(i), hashes, blocks);
    peer.prompts.register(hashes, blocks);
    long[] k = scratch(RemoteLoad.loadKeyCount(blocks));
    int n = RemoteLoad.loadKeys(hashes, blocks, k);
    book(peer.name, id, f, i, blocks, k, n);
  }

  /** A delta's booking, with its policy's note when it has one (a snapshot's bookings are applied without). */
  private void book(String replica, long id, Frame f, int i, int blocks, long[] keys, int keyCount) {
    if (f.noted[i]) {
      view.booked(replica, id, f.worker(i), f.prefill[i], blocks, keys, keyCount, f.warmBlocks[i], f.warmKey[i],
          f.newPrefix[i]);
    } else {
      view.booked(replica, id, f.worker(i), f.prefill[i], blocks, keys, keyCount);
    }
  }

  private long[] hashScratch(int n) {
    if (hashScratch.length < n) {
      hashScratch = new long[Math.max(n, hashScratch.length * 2)];
    }
    return hashScratch;
  }

  private long[] scratch(int n) {
    if (keyScratch.length < n) {
      keyScratch = new long[Math.max(n, keyScratch.length * 2)];
    }
    return keyScratch;
  }

  /** Drops peers not heard from since {@code deadlineNanos}; returns how many. */
  synchronized int expire(long nowNanos, long ttlNanos) {
    int dropped = 0;
    for (Iterator<Peer> it = peers.values().iterator(); it.hasNext(); ) {
      Peer p = it.next();
      if (nowNanos - p.lastHeardNanos >= ttlNanos) {
        it.remove();
        peerCount = peers.size();
        view.dropReplica(p.name);
        String name = p.name;
        notify(l -> l.onPeerLeft(name, "expired"));
        dropped++;
      }
    }
    return dropped;
  }

  /** Drops every peer: this replica lost its connection, so none of their states can be kept current. */
  synchronized void dropAll(String reason) {
    for (Peer p : peers.values()) {
      view.dropReplica(p.name);
      String name = p.name;
      notify(l -> l.onPeerLeft(name, reason));
    }
    peers.clear();
    peerCount = 0;
  }

  /** The peers in the table now; a volatile read, no lock. */
  int peerCount() {
    return peerCount;
  }

  synchronized List<String> peerNames() {
    return List.copyOf(peers.keySet());
  }

  synchronized Map<String, Long> peerSequences() {
    Map<String, Long> out = new HashMap<>();
    peers.forEach((name, p) -> out.put(name, p.lastSeq));
    return out;
  }

  synchronized boolean isSynced(String replica) {
    Peer p = peers.get(replica);
    return p != null && p.synced;
  }

  synchronized long framesApplied() {
    return framesApplied;
  }

  /** Renewals whose prefix this table did not hold (a frame of that peer missed): each asks for a snapshot. */
  synchronized long renewalsMissed() {
    return renewalsMissed;
  }

  synchronized long framesRejected() {
    return framesRejected;
  }

  /** Counts a frame that could not be decoded. */
  synchronized void rejected(String reason) {
    framesRejected++;
    notify(l -> l.onFrameRejected(reason));
  }

  private void notify(Consumer<SyncListener> event) {
    try {
      event.accept(listener);
    } catch (RuntimeException e) {
      NatsLoadSync.LOGGER.log(System.Logger.Level.WARNING, "sync listener threw", e);
    }
  }

  /** What became of a received frame. */
  enum Disposition { OWN, APPLIED, STAGED, SNAPSHOT_APPLIED, DUPLICATE, DROPPED, REJECTED, CONTROL }
}
