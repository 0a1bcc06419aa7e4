package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.RemoteLoad;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The receiving protocol on frames encoded by {@link FrameWriter} and decoded by {@link FrameCodec}: lost,
 * duplicated and reordered frames (which a healthy NATS server on loopback cannot produce on demand) never leave
 * the view counting a booking twice, and one snapshot makes it exact again. The view here is a plain map model of
 * the {@link RemoteLoad} contract (idempotent by replica and booking id); the router's real view is exercised by
 * {@code NatsLoadSyncTest}.
 */
class PeerTableTest {
  private static final int BLOCK_SIZE = 16;
  private static final WorkerId W0 = WorkerId.of("w0");
  private static final WorkerId W1 = WorkerId.of("w1");

  /** The {@link RemoteLoad} contract as a map: (replica, id) -> booking. */
  static final class ModelView implements RemoteLoad {
    final Map<String, Map<Long, long[]>> bookings = new HashMap<>(); // id -> {worker index, prefill, blocks}
    final List<WorkerId> workers = new ArrayList<>();
    int predictions;

    @Override
    public int blockSize() {
      return BLOCK_SIZE;
    }

    @Override
    public void booked(String replica, long id, WorkerId worker, long prefill, int blocks, long[] keys, int n) {
      assertEquals(RemoteLoad.loadKeyCount(blocks), n, "key count");
      if (!workers.contains(worker)) {
        workers.add(worker);
      }
      bookings.computeIfAbsent(replica, r -> new HashMap<>())
          .putIfAbsent(id, new long[] {workers.indexOf(worker), prefill, blocks});
    }

    @Override
    public void firstToken(String replica, long id) {
      long[] b = bookings.getOrDefault(replica, Map.of()).get(id);
      if (b != null) {
        b[1] = 0;
      }
    }

    @Override
    public void closed(String replica, long id) {
      Map<Long, long[]> m = bookings.get(replica);
      if (m != null) {
        m.remove(id);
      }
    }

    @Override
    public void predicted(WorkerId worker, long[] hashes, int count) {
      predictions++;
    }

    @Override
    public void dropReplica(String replica) {
      bookings.remove(replica);
    }

    @Override
    public int activeRequests(WorkerId worker) {
      int i = workers.indexOf(worker);
      return (int) bookings.values().stream().flatMap(m -> m.values().stream()).filter(b -> b[0] == i).count();
    }

    @Override
    public long openBookings() {
      return bookings.values().stream().mapToLong(Map::size).sum();
    }

    /** The replica's bookings as id -> "worker/prefill/blocks", for comparison. */
    Map<Long, String> of(String replica) {
      Map<Long, String> out = new TreeMap<>();
      bookings.getOrDefault(replica, Map.of()).forEach((id, b) -> out.put(id, workers.get((int) b[0]) + "/" + b[1]
          + "/" + b[2]));
      return out;
    }
  }

  /** Records what the table asks of the sender. */
  static final class Asks implements PeerTable.Outbox {
    final List<String> requestedBy = new ArrayList<>();
    final List<String> askedOf = new ArrayList<>();

    @Override
    public void snapshotRequested(String by) {
      requestedBy.add(by);
    }

    @Override
    public void requestSnapshotOf(String peer) {
      askedOf.add(peer);
    }
  }

  /** A sender: its open bookings (the truth), and frames as the real sync would encode them. */
  static final class Sender {
    final String name;
    long instance;
    long seq;
    long nextId;
    final Map<Long, String> open = new TreeMap<>();
    final Map<Long, Object[]> detail = new HashMap<>(); // id -> {worker, prefill, blocks}
    FrameWriter writer = new FrameWriter();
    // As the real sender: approximate-mode prompts that share a published prefix go out as renewals.
    final PromptDictionary published = new PromptDictionary();
    int renewals;

    Sender(String name, long instance) {
      this.name = name;
      this.instance = instance;
    }

    long book(WorkerId worker, long prefill, int blocks, boolean predicted) {
      long id = nextId++;
      // The first half of every prompt is one shared family of prefixes (a block's hash depends on its position
      // only, so equal hashes mean equal prefixes, as sequence hashes do); the second half is the booking's own.
      long[] hashes = LongStream.range(0, blocks).map(i -> 2 * i < blocks ? i * 31 + 7 : i * 31 + id * 1_000_003)
          .toArray();
      if (predicted) {
        int ref = published.longestPrefix(hashes, blocks);
        if (ref > 0) {
          writer.renew(id, worker, prefill, hashes, blocks, ref, DeltaRing.NO_NOTE, 0, 0);
          renewals++;
        } else {
          writer.bookPredicted(id, worker, prefill, hashes, blocks);
        }
        published.register(hashes, blocks);
      } else {
        long[] keys = new long[RemoteLoad.loadKeyCount(blocks)];
        int n = RemoteLoad.loadKeys(hashes, blocks, keys);
        writer.book(id, worker, prefill, blocks, keys, n);
      }
      detail.put(id, new Object[] {worker, prefill, blocks});
      open.put(id, worker + "/" + prefill + "/" + blocks);
      return id;
    }

    void firstToken(long id) {
      Object[] d = detail.get(id);
      if (d != null) {
        d[1] = 0L;
        open.put(id, d[0] + "/0/" + d[2]);
      }
      writer.firstToken(id);
    }

    void close(long id) {
      detail.remove(id);
      open.remove(id);
      writer.close(id);
    }

    Frame deltas() {
      return decode(writer.finish(Frame.DELTAS, name, instance, ++seq, BLOCK_SIZE, 0, 0, false));
    }

    /** A snapshot in parts of at most {@code perPart} bookings. */
    List<Frame> snapshot(int perPart) {
      writer.reset();
      published.clear(); // just before the first part, as the real sender
      List<Frame> parts = new ArrayList<>();
      long snapshotId = seq + 1;
      List<Long> ids = new ArrayList<>(detail.keySet());
      int part = 0;
      FrameWriter w = new FrameWriter();
      for (int i = 0; i < ids.size(); i++) {
        Object[] d = detail.get(ids.get(i));
        int blocks = (int) d[2];
        long[] keys = new long[RemoteLoad.loadKeyCount(blocks)];
        w.book(ids.get(i), (WorkerId) d[0], (long) d[1], blocks, keys, keys.length);
        if ((i + 1) % perPart == 0 && i < ids.size() - 1) {
          parts.add(decode(w.finish(Frame.SNAPSHOT, name, instance, ++seq, BLOCK_SIZE, snapshotId, part++, false)));
        }
      }
      parts.add(decode(w.finish(Frame.SNAPSHOT, name, instance, ++seq, BLOCK_SIZE, snapshotId, part, true)));
      return parts;
    }

    static Frame decode(byte[] bytes) {
      Frame f = new Frame();
      FrameCodec.decode(bytes, f);
      return f;
    }
  }

  private final ModelView view = new ModelView();
  private final Asks asks = new Asks();
  private final PeerTable table = new PeerTable("me", view, SyncListener.NONE, asks);

  /**
   * A renewal whose prefix came in a frame this table never received cannot be rebuilt: it is counted, its booking
   * is not applied, and the table asks its sender for a snapshot; the snapshot (its first part clearing the
   * dictionaries on both sides) books it, and later renewals rebuild from prefixes published after it.
   */
  @Test
  void aRenewalOfAMissedPrefixIsCountedAndAsksForASnapshot() {
    Sender a = new Sender("a", 1);
    a.book(W0, 10, 16, true);
    table.receive(a.deltas(), 0);
    a.book(W0, 10, 40, true); // renews the first's 8 shared blocks, in a frame about to be lost
    Frame lostPrefix = a.deltas();
    a.book(W1, 20, 40, true); // renews 16 blocks, which only the lost booking published
    assertEquals(2, a.renewals);
    table.receive(a.deltas(), 1); // seq 3 after a lost seq 2: a gap, and a renewal it cannot rebuild
    assertEquals(1, table.renewalsMissed());
    assertEquals(1, view.of("a").size(), "only the first booking is counted");
    assertTrue(asks.askedOf.contains("a"), asks.askedOf.toString());
    assertTrue(lostPrefix.recordCount > 0);
    for (Frame part : a.snapshot(2)) {
      table.receive(part, 2);
    }
    assertEquals(a.open, view.of("a"), "the snapshot books all three");
    a.book(W1, 5, 32, true);
    assertEquals(2, a.renewals, "the sender's dictionary was cleared with the snapshot: whole again");
    table.receive(a.deltas(), 3);
    a.book(W0, 5, 24, true);
    assertEquals(3, a.renewals);
    table.receive(a.deltas(), 4);
    assertEquals(a.open, view.of("a"));
    assertEquals(1, table.renewalsMissed());
  }

  @Test
  void deltasApplyInOrderAndDuplicatesAreDropped() {
    Sender a = new Sender("a", 1);
    a.book(W0, 100, 9, false);
    long b = a.book(W1, 50, 3, true);
    Frame first = a.deltas();
    assertEquals(PeerTable.Disposition.APPLIED, table.receive(first, 0));
    assertEquals(a.open, view.of("a"));
    assertEquals(1, view.predictions, "the predicted booking is also a prediction");
    assertEquals(List.of("a"), asks.askedOf, "a peer first heard mid-stream is asked for its snapshot");

    a.firstToken(b);
    a.close(0);
    Frame second = a.deltas();
    assertEquals(PeerTable.Disposition.APPLIED, table.receive(second, 1));
    assertEquals(PeerTable.Disposition.DUPLICATE, table.receive(second, 2));
    assertEquals(PeerTable.Disposition.DUPLICATE, table.receive(first, 3), "an old frame replayed");
    assertEquals(a.open, view.of("a"));
    assertEquals(1, view.predictions);
  }

  @Test
  void aSnapshotReplacesTheWholeStateAndMarksThePeerSynced() {
    Sender a = new Sender("a", 1);
    for (int i = 0; i < 10; i++) {
      a.book(i % 2 == 0 ? W0 : W1, 10 * i, i, false);
    }
    Frame lost = a.deltas(); // never delivered
    a.close(3);
    a.firstToken(4);
    table.receive(a.deltas(), 0); // a gap: 1 was lost
    assertFalse(table.isSynced("a"));
    assertEquals(Map.of(), view.of("a"), "closes and first tokens of unknown bookings do nothing");
    for (Frame part : a.snapshot(3)) {
      table.receive(part, 1);
    }
    assertTrue(table.isSynced("a"));
    assertEquals(a.open, view.of("a"));
    assertEquals(PeerTable.Disposition.DUPLICATE, table.receive(lost, 2), "the lost frame arriving late");
    assertEquals(a.open, view.of("a"));
  }

  @Test
  void aSnapshotWithAMissingPartIsAbandoned() {
    Sender a = new Sender("a", 1);
    a.book(W0, 1, 1, false);
    table.receive(a.deltas(), 0);
    Map<Long, String> before = view.of("a");
    for (int i = 0; i < 7; i++) {
      a.book(W1, 2, 2, false);
    }
    List<Frame> parts = a.snapshot(2);
    assertEquals(4, parts.size());
    table.receive(parts.get(0), 1);
    table.receive(parts.get(2), 1); // part 1 lost
    table.receive(parts.get(3), 1);
    assertEquals(before, view.of("a"), "a partial snapshot changes nothing");
    assertFalse(table.isSynced("a"));
  }

  @Test
  void aRestartedPeerLosesItsPreviousInstancesLoad() {
    Sender a = new Sender("a", 1);
    a.book(W0, 1, 1, false);
    a.book(W0, 1, 1, false);
    table.receive(a.deltas(), 0);
    assertEquals(2, view.activeRequests(W0));
    Sender again = new Sender("a", 2); // same name, new instance, ids start over
    again.book(W1, 5, 5, false);
    table.receive(again.deltas(), 1);
    assertEquals(0, view.activeRequests(W0));
    assertEquals(again.open, view.of("a"));
  }

  @Test
  void silentPeersExpireAndGoodbyesDropAtOnce() {
    Sender a = new Sender("a", 1);
    Sender b = new Sender("b", 7);
    a.book(W0, 1, 1, false);
    b.book(W0, 1, 1, false);
    table.receive(a.deltas(), 0);
    table.receive(b.deltas(), 0);
    table.receive(b.deltas(), 900); // a heartbeat of b
    assertEquals(0, table.expire(999, 1000));
    assertEquals(1, table.expire(1000, 1000), "a was last heard at 0");
    assertEquals(List.of("b"), table.peerNames());
    assertEquals(1, view.openBookings());
    table.receive(Sender.decode(FrameCodec.control(Frame.GOODBYE, "b", 7, ++b.seq, "")), 1001);
    assertEquals(0, view.openBookings());
    assertEquals(List.of(), table.peerNames());
  }

  @Test
  void snapshotRequestsAreAnsweredWhenAddressedToThisReplicaOrAll() {
    table.receive(Sender.decode(FrameCodec.control(Frame.SNAPSHOT_REQUEST, "a", 1, 1, "")), 0);
    table.receive(Sender.decode(FrameCodec.control(Frame.SNAPSHOT_REQUEST, "a", 1, 2, "me")), 0);
    table.receive(Sender.decode(FrameCodec.control(Frame.SNAPSHOT_REQUEST, "a", 1, 3, "other")), 0);
    assertEquals(List.of("a", "a"), asks.requestedBy);
  }

  @Test
  void framesOfAnotherBlockSizeOrFromItselfAreNotApplied() {
    FrameWriter w = new FrameWriter();
    w.book(1, W0, 1, 1, new long[1], 1);
    Frame other = Sender.decode(w.finish(Frame.DELTAS, "a", 1, 1, 32, 0, 0, false));
    assertEquals(PeerTable.Disposition.REJECTED, table.receive(other, 0));
    w.book(1, W0, 1, 1, new long[1], 1);
    Frame own = Sender.decode(w.finish(Frame.DELTAS, "me", 1, 1, BLOCK_SIZE, 0, 0, false));
    assertEquals(PeerTable.Disposition.OWN, table.receive(own, 0));
    assertEquals(0, view.openBookings());
    assertEquals(1, table.framesRejected());
  }

  @Test
  void theNumberOfPeersIsBounded() {
    for (int i = 0; i < PeerTable.MAX_PEERS; i++) {
      assertEquals(PeerTable.Disposition.APPLIED, table.receive(new Sender("r" + i, i).deltas(), 0));
    }
    assertEquals(PeerTable.Disposition.REJECTED, table.receive(new Sender("one-too-many", 1).deltas(), 0));
    assertEquals(PeerTable.MAX_PEERS, table.peerNames().size());
    assertEquals(PeerTable.MAX_PEERS, table.expire(1, 1), "they all expire");
    assertEquals(PeerTable.Disposition.APPLIED, table.receive(new Sender("one-too-many", 1).deltas(), 2));
  }

  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 30).mapToObj(Arguments::of);
  }

  /**
   * Two senders, random bookings and releases, and a channel that loses, duplicates and delays frames. While every
   * frame of a sender since its last snapshot arrived, the view holds exactly its open bookings; after a loss it
   * may hold stale ones (a lost close) or miss some (a lost booking), but never a booking closed before the last
   * snapshot it applied, and the next snapshot makes it exact again.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void lossyChannelsConvergeOnSnapshotsAndCleanStreamsAreExact(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    Sender[] senders = {new Sender("a", random.nextLong()), new Sender("b", random.nextLong())};
    boolean[] clean = {true, true};
    List<Frame> delayed = new ArrayList<>();
    WorkerId[] workers = {W0, W1, WorkerId.of("w2")};
    for (int step = 0; step < 400; step++) {
      int si = random.nextInt(2);
      Sender s = senders[si];
      int ops = random.nextInt(1, 6);
      for (int o = 0; o < ops; o++) {
        int kind = random.nextInt(10);
        List<Long> ids = new ArrayList<>(s.open.keySet());
        if (kind < 5 || ids.isEmpty()) {
          s.book(workers[random.nextInt(3)], random.nextInt(1, 3000), random.nextInt(0, 40), random.nextInt(4) == 0);
        } else if (kind < 7) {
          s.firstToken(ids.get(random.nextInt(ids.size())));
        } else {
          s.close(ids.get(random.nextInt(ids.size())));
        }
      }
      boolean snapshot = random.nextInt(20) == 0;
      List<Frame> frames = snapshot ? s.snapshot(1 + random.nextInt(4)) : List.of(s.deltas());
      boolean allArrived = true;
      for (Frame f : frames) {
        int fate = random.nextInt(20);
        if (fate == 0) {
          allArrived = false; // lost
        } else if (fate == 1) {
          allArrived = false;
          delayed.add(f); // delivered late, out of order
        } else {
          table.receive(f, step);
          if (fate == 2) {
            table.receive(f, step); // duplicated
          }
        }
      }
      clean[si] = snapshot ? allArrived : clean[si] && allArrived;
      if (!delayed.isEmpty() && random.nextInt(5) == 0) {
        table.receive(delayed.remove(random.nextInt(delayed.size())), step);
      }
      for (int x = 0; x < senders.length; x++) {
        if (clean[x]) {
          assertEquals(senders[x].open, view.of(senders[x].name), "seed " + seed + " step " + step + ": "
              + senders[x].name + " streamed without loss since its last snapshot");
        }
      }
    }
    assertTrue(senders[0].renewals + senders[1].renewals > 0, "some predicted bookings went out as renewals");
    for (Sender s : senders) {
      for (Frame part : s.snapshot(3)) {
        table.receive(part, 1000);
      }
      assertEquals(s.open, view.of(s.name), "seed " + seed + ": " + s.name + " after its snapshot");
    }
    assertEquals(Arrays.stream(senders).mapToLong(s -> s.open.size()).sum(), view.openBookings());
  }
}
