package io.kvroute.sync.nats;

import io.kvroute.RemoteLoad;
import io.kvroute.SharedLoad;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import io.nats.client.Connection;
import io.nats.client.ConnectionListener;
import io.nats.client.Consumer;
import io.nats.client.Dispatcher;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamApiException;
import io.nats.client.KeyValue;
import io.nats.client.KeyValueManagement;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.KeyValueConfiguration;
import io.nats.client.api.KeyValueEntry;
import io.nats.client.api.StorageType;
import it.unimi.dsi.fastutil.longs.Long2ObjectMap;
import it.unimi.dsi.fastutil.longs.Long2ObjectOpenHashMap;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;

/**
 * Shares a router's bookings and approximate-mode predictions with its peer replicas over NATS; thread-safe: the
 * router calls the {@link SharedLoad} methods one at a time under its admission lock (which their lock-free ring
 * relies on: they must not be called concurrently), NATS threads deliver peers' frames, and one publisher thread of
 * its own publishes.
 *
 * <pre>{@code
 * NatsLoadSync sync = NatsLoadSync.newBuilder().servers("nats://nats:4222").replicaName("gateway-1").build();
 * Router router = Router.newBuilder().policy(RouterPolicy.approximate()).sharedLoad(sync).build();
 * ...
 * sync.close(); // says goodbye: peers drop this replica's load at once
 * }</pre>
 *
 * <p>Every replica publishes on one subject. Local deltas (booked with load keys, or with all block hashes in
 * approximate mode; first token; closed) go into a preallocated ring of primitive records, with no lock and no
 * allocation; the first delta after a quiet period wakes this sync's publisher thread, which encodes it into a
 * binary frame and publishes it at once, then collects a burst's further deltas for up to
 * {@link Builder#batchDelay} per frame: a selection never touches the network. A frame with
 * nothing new is still sent every {@link Builder#heartbeatInterval} as a heartbeat; a peer not heard from within
 * {@link Builder#replicaTtl} is dropped from the view with all its load. Frames carry a per-instance sequence
 * number: a peer that missed frames (a gap), a new peer and a peer that restarted are asked for a snapshot of their
 * open bookings, which replaces what was known of them, so nothing is double-counted. While the NATS connection is
 * down the view holds local load only; on reconnect every replica publishes a snapshot and asks for everyone's.
 * The layout of frames is on {@code FrameCodec}; see the module README.
 *
 * <p>Optionally ({@link Builder#warmupBucket}) each replica also keeps a bounded snapshot of its recent
 * approximate-mode predictions in a JetStream key-value bucket, from which a replica that starts later warms up its
 * prediction index ({@link #warmUp()}), so that its first requests go where its peers' prefixes already are.
 */
public final class NatsLoadSync implements SharedLoad, AutoCloseable {
  static final System.Logger LOGGER = System.getLogger(NatsLoadSync.class.getName());

  /** The default subject all replicas of one gateway publish on. */
  public static final String DEFAULT_SUBJECT = "kvroute.load";
  /**
   * By default a delta batched while the publisher is busy waits at most about this long: the first delta after a
   * quiet period is published at once (a peer learns of it one NATS delivery later, well under a millisecond on a
   * loopback or LAN), and during a burst the publisher polls at this interval instead of being woken per delta, so
   * that the selecting threads pay one wake-up per quiet period, not per request. The value is the scale of one
   * network round trip: waiting less would not make peers' views fresher than their own delivery latency does.
   */
  public static final Duration DEFAULT_BATCH_DELAY = Duration.ofNanos(100_000);
  /** A replica publishes at least this often by default. */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);
  /** A peer not heard from for this long is dropped by default: three missed heartbeats. */
  public static final Duration DEFAULT_REPLICA_TTL = Duration.ofSeconds(3);
  /** Each replica republishes its full state this often by default, as a safety net beyond gap detection. */
  public static final Duration DEFAULT_SNAPSHOT_INTERVAL = Duration.ofSeconds(30);
  /** The default bound on one frame's size (NATS servers accept 1 MiB by default). */
  public static final int DEFAULT_MAX_FRAME_BYTES = 256 * 1024;
  /** A replica rewrites its warm-up snapshot this often by default. */
  public static final Duration DEFAULT_WARMUP_INTERVAL = Duration.ofSeconds(5);
  /**
   * Predictions older than this are neither written to nor taken from warm-up snapshots by default: the default
   * prediction time to live of {@code RouterPolicy.approximate()}.
   */
  public static final Duration DEFAULT_WARMUP_MAX_AGE = Duration.ofSeconds(120);
  /** The default bound on one warm-up snapshot (NATS servers accept 1 MiB messages by default). */
  public static final int DEFAULT_WARMUP_MAX_BYTES = 512 * 1024;
  /** Warm-up predictions are handed to the router at most this many hashes at a time. */
  private static final int WARMUP_CHUNK = 4096;

  /** The default wait between reconnect attempts. */
  public static final Duration DEFAULT_RECONNECT_WAIT = Duration.ofMillis(250);

  /** After a publish the publisher polls this many batch delays before it parks until woken. */
  static final int LINGER_POLLS = 4;
  /**
   * The ring of local deltas holds this many records (about 470 KiB with their columns): a publisher that falls
   * this far behind (at 100,000 requests a second, 50 ms) makes the hooks drop bookings (counted), never wait.
   */
  static final int RING_RECORDS = 1 << 14;
  /**
   * The ring's hashes: 2 MiB, the block hashes of 2,048 predicted bookings of 128 blocks (2,048 tokens); the
   * publisher's copy buffer is as large.
   */
  static final int RING_HASHES = 1 << 18;
  private static final int MAX_OPEN_BOOKINGS = 1 << 20;
  private static final long TICK_NANOS_MAX = 5_000_000L;

  private final List<String> servers;
  private final String subject;
  private final String replica;
  private final long instance;
  private final long batchNanos;
  private final boolean manualFlush;
  private final boolean estimateUnseenPeerBookings;
  private final long viewDelayNanos;
  private final long heartbeatNanos;
  private final long ttlNanos;
  private final long snapshotNanos;
  private final int maxFrameBytes;
  private final Duration reconnectWait;
  private final SyncListener listener;
  private final UnaryOperator<Options.Builder> optionsCustomizer;
  private final @Nullable String warmupBucket;
  private final long warmupIntervalNanos;
  private final long warmupMaxAgeNanos;
  private final int warmupMaxBytes;
  private final @Nullable Warmup warmup;

  // The selecting threads' side: the ring they offer deltas to (one at a time, under the router's admission lock),
  // and their scratch for load keys.
  private final DeltaRing ring = new DeltaRing(RING_RECORDS, RING_HASHES);
  private long[] producerKeys = new long[64];
  private static final long[] NO_HASHES = new long[0];
  // First-token and close deltas the full ring refused (a booking refused is dropped: its peers never learn of it,
  // which a later release cannot corrupt; a release refused would leave peers counting it); guarded by
  // overflowLock, which the hooks take only when the ring is full, and applied after the ring's records.
  private final Object overflowLock = new Object();
  private long[] overflowIds = new long[64];
  private byte[] overflowKinds = new byte[64];
  private int overflowCount;
  private volatile boolean overflowed;

  // Snapshot and request flags; guarded by `this`.
  private boolean snapshotDue;
  private boolean requestAll;
  private final Set<String> requestTargets = new LinkedHashSet<>();

  // Publishing: the ring's consumer, this replica's open bookings (for snapshots) and the frame being batched;
  // guarded by publishLock.
  private final Object publishLock = new Object();
  private final FrameWriter writer = new FrameWriter();
  private final FrameWriter heartbeatWriter = new FrameWriter();
  private final FrameWriter snapshotWriter = new FrameWriter();
  // Sized so that it never shrinks (fastutil keeps the initial capacity), and its entries recycled: a booking costs
  // no allocation once the working set is reached.
  private final Long2ObjectOpenHashMap<Open> open = new Long2ObjectOpenHashMap<>(1024);
  private final ArrayDeque<Open> freeOpens = new ArrayDeque<>();
  private final long[] drainScratch = new long[RING_HASHES];
  private long[] keyScratch = new long[64];
  // Under publishLock: the approximate-mode prompts published lately, which peers' dictionaries mirror.
  private final PromptDictionary published = new PromptDictionary();
  private @Nullable Connection drainConnection; // where the deltas being drained go; null: disconnected
  private final DeltaRing.Sink localSink = this::applyLocal;
  private long seq;
  private volatile long lastSequence;
  private long lastPublishNanos;
  private long lastSnapshotNanos;

  private volatile boolean connected;
  private volatile boolean closed;
  private volatile @Nullable Connection connection;
  private volatile @Nullable Dispatcher dispatcher;
  private volatile @Nullable PeerTable peers;
  private @Nullable RemoteLoad view;
  private @Nullable Thread publisher;
  // Whether the publisher is parked with nothing batched: the hook that sees it wakes it (once per quiet period).
  private volatile boolean idle;
  private int blockSize;
  private Frame frame = new Frame();

  private final AtomicLong framesSent = new AtomicLong();
  private final AtomicLong bytesSent = new AtomicLong();
  private final AtomicLong framesReceived = new AtomicLong();
  private final AtomicLong bytesReceived = new AtomicLong();
  private final AtomicLong deltasDropped = new AtomicLong();
  private final AtomicLong snapshotsSent = new AtomicLong();
  private final AtomicLong warmupBlocksApplied = new AtomicLong();
  private final AtomicLong warmupSnapshotsWritten = new AtomicLong();
  // The warm-up bucket's handle; guarded by warmupLock, as are the KV requests.
  private final Object warmupLock = new Object();
  private @Nullable KeyValue warmupStore;
  private long warmupWrittenVersion = -1;
  private @Nullable Thread warmupThread;
  // Whether warmUp() ran (by the warm-up thread on the first connection, or called by the gateway).
  private volatile boolean warmedUp;

  /** One of this replica's open bookings, kept for snapshots. */
  private static final class Open {
    WorkerId worker;
    long prefill;
    int blocks;
    long[] keys = new long[16];
    int keyCount;
  }

  private NatsLoadSync(Builder b) {
    this.servers = List.copyOf(b.servers);
    this.subject = b.subject;
    this.replica = b.replicaName != null ? b.replicaName : defaultReplicaName();
    this.instance = ThreadLocalRandom.current().nextLong();
    this.batchNanos = b.batchDelay.toNanos();
    this.viewDelayNanos = (b.viewDelay != null ? b.viewDelay : b.batchDelay).toNanos();
    this.manualFlush = b.manualFlush;
    this.estimateUnseenPeerBookings = b.estimateUnseenPeerBookings;
    this.heartbeatNanos = b.heartbeatInterval.toNanos();
    this.ttlNanos = b.replicaTtl.toNanos();
    this.snapshotNanos = b.snapshotInterval.toNanos();
    this.maxFrameBytes = b.maxFrameBytes;
    this.reconnectWait = b.reconnectWait;
    this.listener = b.listener;
    this.optionsCustomizer = b.optionsCustomizer;
    this.warmupBucket = b.warmupBucket;
    this.warmupIntervalNanos = b.warmupInterval.toNanos();
    this.warmupMaxAgeNanos = b.warmupMaxAge.toNanos();
    this.warmupMaxBytes = b.warmupMaxBytes;
    this.warmup = b.warmupBucket == null ? null : new Warmup(Warmup.blocksFor(b.warmupMaxBytes));
  }

  /**
   * A builder; {@link Builder#servers} is required.
   *
   * @return a new builder with the defaults documented on each setter
   */
  public static Builder newBuilder() {
    return new Builder();
  }

  /**
   * This replica's name, unique among the replicas sharing the subject.
   *
   * @return the name this replica publishes under, as given to {@link Builder#replicaName} or generated
   */
  public String replicaName() {
    return replica;
  }

  /**
   * The peer replicas currently in the view.
   *
   * @return the names of the peers in the view (heard from within the replica TTL), not this replica; empty until
   *     started and while alone
   */
  public List<String> peers() {
    PeerTable p = peers;
    return p == null ? List.of() : p.peerNames();
  }

  /**
   * Whether the NATS connection is up.
   *
   * @return true while the NATS connection is established; false before start, while reconnecting and after close
   */
  public boolean isConnected() {
    return connected;
  }

  /**
   * The current counters.
   *
   * @return a new snapshot of the counters (each call allocates one; cheap enough for a metrics scrape)
   */
  public SyncStats stats() {
    PeerTable p = peers;
    return SyncStats.of(lastSequence, framesSent.get(), bytesSent.get(), framesReceived.get(), bytesReceived.get(),
        p == null ? 0 : p.framesRejected(), deltasDropped.get(), snapshotsSent.get(), connected,
        p == null ? java.util.Map.of() : p.peerSequences(), warmupSnapshotsWritten.get(), warmupBlocksApplied.get());
  }

  @Override
  public void start(RemoteLoad view) {
    Objects.requireNonNull(view, "view");
    synchronized (this) {
      if (this.view != null) {
        throw new IllegalStateException("this NatsLoadSync is already bound to a router");
      }
      if (closed) {
        throw new IllegalStateException("this NatsLoadSync is closed");
      }
      this.view = view;
      this.blockSize = view.blockSize();
    }
    peers = new PeerTable(replica, view, listener, new PeerTable.Outbox() {
      @Override
      public void snapshotRequested(String by) {
        synchronized (NatsLoadSync.this) {
          snapshotDue = true;
        }
      }

      @Override
      public void requestSnapshotOf(String peer) {
        synchronized (NatsLoadSync.this) {
          requestTargets.add(peer);
        }
      }
    });
    Thread t = new Thread(this::publishLoop, "kvroute-sync-nats-" + replica);
    t.setDaemon(true);
    publisher = t;
    t.start();
    if (warmup != null) {
      Thread w = new Thread(this::warmupLoop, "kvroute-sync-nats-warmup-" + replica);
      w.setDaemon(true);
      warmupThread = w;
      w.start();
    }
    Options.Builder options = new Options.Builder()
        .servers(servers.toArray(String[]::new))
        .connectionName("kvroute-sync-" + replica)
        .maxReconnects(-1)
        .reconnectWait(reconnectWait)
        .connectionTimeout(Duration.ofSeconds(2))
        .pingInterval(Duration.ofSeconds(2))
        .maxPingsOut(2)
        .reconnectBufferSize(0); // stale deltas are never replayed: a snapshot follows every reconnect
    options = optionsCustomizer.apply(options);
    options.noEcho()
        .connectionListener(this::connectionEvent)
        .errorListener(new ErrorListener() {
          @Override
          public void slowConsumerDetected(Connection conn, Consumer consumer) {
            LOGGER.log(System.Logger.Level.WARNING, "sync replica " + replica + " is a slow consumer: frames were "
                + "dropped; peers will be asked for snapshots");
          }

          @Override
          public void exceptionOccurred(Connection conn, Exception exp) {
            LOGGER.log(System.Logger.Level.DEBUG, "NATS connection exception", exp);
          }
        });
    try {
      Nats.connectAsynchronously(options.build(), true);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting the NATS connection", e);
    }
  }

  @Override
  public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
      boolean predicted) {
    booked(bookingId, worker, prefillTokens, hashes, blocks, predicted, DeltaRing.NO_NOTE, 0);
  }

  /**
   * Also shares what the router's policy learned from the choice (the warm prefix it counted and whether it placed
   * a new prefix), which peers feed to their own policy: about 10 bytes more per booking.
   */
  @Override
  public void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
      boolean predicted, int warmBlocks, boolean newPrefix) {
    booked(bookingId, worker, prefillTokens, hashes, blocks, predicted,
        newPrefix ? DeltaRing.NOTED_NEW_PREFIX : DeltaRing.NOTED, warmBlocks);
  }

  private void booked(long bookingId, WorkerId worker, long prefillTokens, long[] hashes, int blocks,
      boolean predicted, byte note, int warmBlocks) {
    int warm = warmBlocks < 0 || warmBlocks > blocks ? 0 : warmBlocks;
    long warmKey = warm > 0 ? hashes[warm - 1] : 0;
    boolean offered;
    if (blocks < 0 || blocks > FrameCodec.MAX_BLOCKS) {
      offered = false;
    } else if (predicted) {
      offered = blocks <= RING_HASHES
          && ring.offer(DeltaRing.BOOK_PREDICTED, bookingId, worker, prefillTokens, blocks, hashes, blocks, note,
              warm, warmKey);
    } else {
      int n = RemoteLoad.loadKeyCount(blocks);
      if (producerKeys.length < n) {
        producerKeys = new long[Math.max(n, 2 * producerKeys.length)];
      }
      RemoteLoad.loadKeys(hashes, blocks, producerKeys);
      offered = ring.offer(DeltaRing.BOOK, bookingId, worker, prefillTokens, blocks, producerKeys, n, note, warm,
          warmKey);
    }
    if (offered) {
      wake();
    } else {
      deltasDropped.incrementAndGet();
    }
  }

  @Override
  public void firstToken(long bookingId) {
    release(DeltaRing.FIRST_TOKEN, bookingId);
  }

  /**
   * The peers in the view now (see {@link SharedLoad#peerCount}); zero while alone or disconnected.
   *
   * @return the peers heard from within the replica TTL
   */
  @Override
  public int peerCount() {
    PeerTable p = peers;
    return p == null ? 0 : p.peerCount();
  }

  /**
   * With {@link Builder#estimateUnseenPeerBookings} on, the {@link Builder#batchDelay}: a booking made during a
   * burst waits up to that long for its frame (NATS's own delivery, tens of microseconds on a LAN, comes on top);
   * otherwise zero, so the router counts no booking as unseen. See {@link SharedLoad#deliveryWindowNanos}.
   *
   * @return the batch delay in nanoseconds, or zero when the estimate is off (the default)
   */
  @Override
  public long deliveryWindowNanos() {
    return estimateUnseenPeerBookings ? batchNanos : 0;
  }

  /**
   * The {@link Builder#viewDelay}: how long a booking here typically takes to reach the peers' views, for the
   * policies' estimate of the peers' selections this view cannot show yet (see {@link SharedLoad#viewDelayNanos}).
   *
   * @return nanoseconds, zero or more
   */
  @Override
  public long viewDelayNanos() {
    return viewDelayNanos;
  }

  @Override
  public void closed(long bookingId) {
    release(DeltaRing.CLOSE, bookingId);
  }

  private void release(byte kind, long bookingId) {
    if (!ring.offer(kind, bookingId, null, 0, 0, NO_HASHES, 0)) {
      synchronized (overflowLock) {
        if (overflowCount == overflowIds.length) {
          overflowIds = Arrays.copyOf(overflowIds, 2 * overflowCount);
          overflowKinds = Arrays.copyOf(overflowKinds, 2 * overflowCount);
        }
        overflowIds[overflowCount] = bookingId;
        overflowKinds[overflowCount++] = kind;
        overflowed = true;
      }
    }
    wake();
  }

  /** After a delta was offered: wakes an idle publisher (one unpark per quiet period, not per delta). */
  private void wake() {
    if (idle && !manualFlush) {
      idle = false;
      LockSupport.unpark(publisher);
    }
  }

  /**
   * Under publishLock: takes every delta the hooks offered so far into this replica's open bookings and, while
   * connected ({@code c} not null), into the frame being batched, publishing it whenever it reaches
   * {@code maxFrameBytes}.
   */
  private void drainLocal(@Nullable Connection c) {
    drainConnection = c;
    try {
      ring.drain(localSink, drainScratch);
      if (overflowed) {
        synchronized (overflowLock) {
          // The ring again first: whatever the hooks offered before a refused release is published by now.
          ring.drain(localSink, drainScratch);
          for (int i = 0; i < overflowCount; i++) {
            applyLocal(overflowKinds[i], overflowIds[i], null, 0, 0, NO_HASHES, 0, DeltaRing.NO_NOTE, 0, 0);
          }
          overflowCount = 0;
          overflowed = false;
        }
      }
    } finally {
      drainConnection = null;
    }
  }

  /** Under publishLock: one local delta. */
  private void applyLocal(byte kind, long id, @Nullable WorkerId worker, long prefill, int blocks, long[] hashes,
      int count, byte note, int warmBlocks, long warmKey) {
    switch (kind) {
      case DeltaRing.BOOK, DeltaRing.BOOK_PREDICTED -> {
        if (open.size() >= MAX_OPEN_BOOKINGS || worker == null) {
          deltasDropped.incrementAndGet();
          return;
        }
        long[] keys = hashes;
        int n = count;
        if (kind == DeltaRing.BOOK_PREDICTED) {
          n = RemoteLoad.loadKeyCount(blocks);
          if (keyScratch.length < n) {
            keyScratch = new long[Math.max(n, keyScratch.length * 2)];
          }
          RemoteLoad.loadKeys(hashes, blocks, keyScratch);
          keys = keyScratch;
        }
        Open o = freeOpens.pollFirst();
        if (o == null) {
          o = new Open();
        }
        if (o.keys.length < n) {
          o.keys = new long[Math.max(n, 2 * o.keys.length)];
        }
        System.arraycopy(keys, 0, o.keys, 0, n);
        o.worker = worker;
        o.prefill = prefill;
        o.blocks = blocks;
        o.keyCount = n;
        Open replaced = open.put(id, o);
        if (replaced != null) {
          recycle(replaced);
        }
        if (drainConnection == null) {
          deltasDropped.incrementAndGet();
        } else if (kind == DeltaRing.BOOK_PREDICTED) {
          if (warmup != null) {
            warmup.record(worker, hashes, 0, count, System.nanoTime());
          }
          // A prefix peers hold from earlier frames is sent by reference, the rest in full (see PromptDictionary).
          int ref = published.longestPrefix(hashes, count);
          if (ref > 0) {
            writer.renew(id, worker, prefill, hashes, count, ref, note, warmBlocks, warmKey);
          } else {
            writer.bookPredicted(id, worker, prefill, hashes, count, note, warmBlocks, warmKey);
          }
          published.register(hashes, count);
        } else {
          writer.book(id, worker, prefill, blocks, keys, n, note, warmBlocks, warmKey);
        }
      }
      case DeltaRing.FIRST_TOKEN -> {
        Open o = open.get(id);
        if (o == null || o.prefill == 0) {
          return;
        }
        o.prefill = 0;
        if (drainConnection == null) {
          deltasDropped.incrementAndGet();
        } else {
          writer.firstToken(id);
        }
      }
      case DeltaRing.CLOSE -> {
        Open o = open.remove(id);
        if (o == null) {
          return;
        }
        recycle(o);
        if (drainConnection == null) {
          deltasDropped.incrementAndGet();
        } else {
          writer.close(id);
        }
      }
      default -> throw new IllegalStateException("unknown delta kind " + kind);
    }
    Connection c = drainConnection;
    if (c != null && writer.pendingBytes() >= maxFrameBytes) {
      publish(c, writer.finish(Frame.DELTAS, replica, instance, ++seq, blockSize, 0, 0, false));
    }
  }

  /** Under publishLock. */
  private void recycle(Open o) {
    o.worker = null;
    if (freeOpens.size() < 4096) {
      freeOpens.addFirst(o);
    }
  }

  /**
   * Publishes the deltas batched so far now, on the calling thread; for {@link Builder#manualFlush} (as a simulation
   * on a virtual clock needs), and harmless otherwise.
   *
   * @return whether anything was published (false while disconnected or with nothing batched)
   */
  public boolean flush() {
    return publishDeltas(false);
  }

  /**
   * The publisher thread: parked while nothing is batched (a hook wakes it, once per quiet period); woken, it
   * publishes what is batched at once, then lingers four polls of the batch delay, publishing what
   * came meanwhile, before it parks again, so that a burst's further deltas cost the selecting threads no wake-up.
   * Between batches it sends snapshots, snapshot requests and heartbeats, and expires silent peers.
   */
  private void publishLoop() {
    long tick = Math.max(1_000_000L, Math.min(TICK_NANOS_MAX, heartbeatNanos / 4));
    int polls = 0;
    while (!closed) {
      try {
        boolean batched = hasBatch();
        if (!batched) {
          if (polls == 0) {
            // Idle: a hook's first delta wakes it. Set, then checked again (a hook offers, then reads the flag).
            idle = true;
            batched = hasBatch();
          }
          if (!batched) {
            // Lingering after a publish, the hooks do not wake it: it polls.
            LockSupport.parkNanos(polls > 0 ? batchNanos : tick);
            batched = hasBatch();
          }
          idle = false;
        }
        if (closed) {
          return;
        }
        duties(System.nanoTime());
        polls = batched && batchNanos > 0 ? LINGER_POLLS : Math.max(0, polls - 1);
      } catch (Throwable t) {
        LOGGER.log(System.Logger.Level.WARNING, "sync publisher failed; continuing", t);
      }
    }
  }

  /** Whether deltas wait for the publisher. */
  private boolean hasBatch() {
    return !manualFlush && (!ring.isEmpty() || overflowed);
  }

  private void duties(long now) {
    if (connected) {
      boolean snapshot;
      synchronized (this) {
        if (snapshotNanos > 0 && now - lastSnapshotNanos >= snapshotNanos) {
          snapshotDue = true;
        }
        snapshot = snapshotDue;
      }
      if (snapshot) {
        publishSnapshot();
      } else if (!manualFlush) {
        publishDeltas(false);
      }
      sendRequests();
      if (now - lastPublishNanos() >= heartbeatNanos) {
        publishDeltas(true);
      }
    } else if (!manualFlush) {
      synchronized (publishLock) {
        drainLocal(null); // keeps the open bookings current for the snapshot sent on reconnect
      }
    }
    PeerTable p = peers;
    if (p != null) {
      p.expire(now, ttlNanos);
    }
  }

  private long lastPublishNanos() {
    synchronized (publishLock) {
      return lastPublishNanos;
    }
  }

  /**
   * Publishes the deltas offered so far; with {@code heartbeat}, publishes an empty frame if nothing else was (in
   * manual mode the deltas stay for the next {@link #flush}).
   */
  private boolean publishDeltas(boolean heartbeat) {
    synchronized (publishLock) {
      Connection c = connection;
      boolean up = connected && c != null;
      long framesBefore = framesSent.get();
      if (!manualFlush || !heartbeat) {
        drainLocal(up ? c : null);
      }
      if (!up) {
        if (writer.records() > 0) {
          deltasDropped.addAndGet(writer.records());
          writer.reset();
        }
        return false;
      }
      if (writer.records() > 0) {
        publish(c, writer.finish(Frame.DELTAS, replica, instance, ++seq, blockSize, 0, 0, false));
      } else if (heartbeat && framesSent.get() == framesBefore) {
        publish(c, heartbeatWriter.finish(Frame.DELTAS, replica, instance, ++seq, blockSize, 0, 0, false));
        return true;
      }
      return framesSent.get() != framesBefore;
    }
  }

  private void publishSnapshot() {
    synchronized (publishLock) {
      Connection c = connection;
      if (!connected || c == null) {
        return;
      }
      synchronized (this) {
        snapshotDue = false;
      }
      // Deltas offered so far go first: the snapshot supersedes their bookings, but not the predictions they carry.
      drainLocal(c);
      if (writer.records() > 0) {
        publish(c, writer.finish(Frame.DELTAS, replica, instance, ++seq, blockSize, 0, 0, false));
      }
      // Receivers clear this replica's dictionary at the snapshot's first part, which follows at once: a peer that
      // asked may lack prefixes, and from here on both sides hold the same again.
      published.clear();
      long snapshotId = seq + 1;
      int part = 0;
      FrameWriter w = snapshotWriter;
      int left = open.size();
      for (Long2ObjectMap.Entry<Open> e : open.long2ObjectEntrySet()) {
        Open o = e.getValue();
        w.book(e.getLongKey(), o.worker, o.prefill, o.blocks, o.keys, o.keyCount);
        left--;
        if (w.pendingBytes() >= maxFrameBytes && left > 0) {
          publish(c, w.finish(Frame.SNAPSHOT, replica, instance, ++seq, blockSize, snapshotId, part++, false));
        }
      }
      publish(c, w.finish(Frame.SNAPSHOT, replica, instance, ++seq, blockSize, snapshotId, part, true));
      snapshotsSent.incrementAndGet();
      lastSnapshotNanos = System.nanoTime();
    }
  }

  private void sendRequests() {
    List<String> targets;
    boolean all;
    synchronized (this) {
      if (requestTargets.isEmpty() && !requestAll) {
        return;
      }
      all = requestAll;
      requestAll = false;
      targets = all ? List.of("") : List.copyOf(requestTargets);
      requestTargets.clear();
    }
    synchronized (publishLock) {
      Connection c = connection;
      if (!connected || c == null) {
        return;
      }
      for (String target : targets) {
        publish(c, FrameCodec.control(Frame.SNAPSHOT_REQUEST, replica, instance, ++seq, target));
      }
    }
  }

  /** Under publishLock. */
  private void publish(Connection c, byte[] bytes) {
    lastSequence = seq;
    try {
      c.publish(subject, bytes);
      framesSent.incrementAndGet();
      bytesSent.addAndGet(bytes.length);
    } catch (RuntimeException e) {
      // Disconnected between the check and the publish: peers see a sequence gap and ask for a snapshot.
      synchronized (this) {
        snapshotDue = true;
      }
      LOGGER.log(System.Logger.Level.DEBUG, "publish failed", e);
    }
    lastPublishNanos = System.nanoTime();
  }

  /**
   * The warm-up thread: once connected, warms the router's prediction index from the peers' snapshots (once per
   * instance), then rewrites this replica's snapshot every warm-up interval when it changed. JetStream requests
   * block, so they never run on the publisher or a selecting thread.
   */
  private void warmupLoop() {
    boolean warmed = false;
    long nextWrite = System.nanoTime() + warmupIntervalNanos;
    long tick = Math.max(1_000_000L, Math.min(100_000_000L, warmupIntervalNanos / 4));
    while (!closed) {
      LockSupport.parkNanos(tick);
      if (closed || !connected) {
        continue;
      }
      try {
        if (!warmed && !warmedUp) {
          warmUp();
        }
        warmed = true;
        if (System.nanoTime() - nextWrite >= 0) {
          writeWarmup();
          nextWrite = System.nanoTime() + warmupIntervalNanos;
        }
      } catch (Throwable t) {
        LOGGER.log(System.Logger.Level.DEBUG, "sync warm-up failed; retrying", t);
      }
    }
  }

  /**
   * Reads every peer's warm-up snapshot from the JetStream bucket and enters their predictions into the router's
   * prediction index now. Predictions for workers the router does not know are dropped, so a gateway should call
   * this once after adding its workers (before taking traffic); if it has not by the time the connection first
   * comes up, this sync's warm-up thread calls it then (applying a snapshot twice only renews its predictions).
   * Blocks on JetStream requests: never call it on a selecting thread.
   *
   * @return the predicted blocks handed to the router (0 while disconnected)
   * @throws IllegalStateException if no {@link Builder#warmupBucket} is set or the router is not built yet
   */
  public int warmUp() {
    if (warmup == null) {
      throw new IllegalStateException("no warmupBucket is configured");
    }
    RemoteLoad v;
    synchronized (this) {
      v = view;
    }
    if (v == null) {
      throw new IllegalStateException("this NatsLoadSync is not bound to a router yet");
    }
    int applied = 0;
    synchronized (warmupLock) {
      KeyValue kv = warmupStore();
      if (kv == null) {
        return 0;
      }
      List<String> keys;
      try {
        keys = kv.keys();
      } catch (IOException | JetStreamApiException e) {
        warmupStore = null;
        LOGGER.log(System.Logger.Level.DEBUG, "listing warm-up snapshots failed", e);
        return 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 0;
      }
      String own = warmupKey(replica);
      long nowMillis = System.currentTimeMillis();
      for (String key : keys) {
        if (key.equals(own)) {
          continue;
        }
        try {
          KeyValueEntry entry = kv.get(key);
          byte[] value = entry == null ? null : entry.getValue();
          if (value == null) {
            continue;
          }
          Warmup.Snapshot snapshot = Warmup.decode(value);
          if (snapshot.blockSize() != v.blockSize()
              || nowMillis - snapshot.writtenAtMillis() > warmupMaxAgeNanos / 1_000_000) {
            continue;
          }
          for (int w = 0; w < snapshot.workers().size(); w++) {
            long[] hashes = snapshot.hashes().get(w);
            for (int from = 0; from < hashes.length; from += WARMUP_CHUNK) {
              int n = Math.min(WARMUP_CHUNK, hashes.length - from);
              v.predicted(snapshot.workers().get(w), Arrays.copyOfRange(hashes, from, from + n), n);
              applied += n;
            }
          }
        } catch (SyncFormatException e) {
          PeerTable p = peers;
          if (p != null) {
            p.rejected("malformed warm-up snapshot " + key + " in bucket " + warmupBucket + ": " + e.getMessage());
          }
        } catch (IOException | JetStreamApiException e) {
          LOGGER.log(System.Logger.Level.DEBUG, "reading warm-up snapshot " + key + " failed", e);
        }
      }
    }
    warmedUp = true;
    warmupBlocksApplied.addAndGet(applied);
    return applied;
  }

  /**
   * Writes this replica's warm-up snapshot (its predictions of the last {@link Builder#warmupMaxAge}, at most
   * {@link Builder#warmupMaxBytes}) to the JetStream bucket now, if it changed since the last write; this sync does
   * so every {@link Builder#warmupInterval} and when closed. Blocks on a JetStream request: never call it on a
   * selecting thread.
   *
   * @return whether a snapshot was written
   * @throws IllegalStateException if no {@link Builder#warmupBucket} is set
   */
  public boolean writeWarmup() {
    if (warmup == null) {
      throw new IllegalStateException("no warmupBucket is configured");
    }
    synchronized (warmupLock) {
      long version = warmup.version();
      if (version == warmupWrittenVersion || blockSize == 0) {
        return false;
      }
      KeyValue kv = warmupStore();
      if (kv == null) {
        return false;
      }
      byte[] bytes = warmup.encode(blockSize, System.nanoTime(), warmupMaxAgeNanos, System.currentTimeMillis());
      try {
        kv.put(warmupKey(replica), bytes);
      } catch (IOException | JetStreamApiException e) {
        warmupStore = null;
        LOGGER.log(System.Logger.Level.DEBUG, "writing the warm-up snapshot failed", e);
        return false;
      }
      warmupWrittenVersion = version;
      warmupSnapshotsWritten.incrementAndGet();
      return true;
    }
  }

  /** Under warmupLock: the bucket, created if missing; null while disconnected or without JetStream. */
  private @Nullable KeyValue warmupStore() {
    Connection c = connection;
    if (!connected || c == null) {
      return null;
    }
    if (warmupStore != null) {
      return warmupStore;
    }
    try {
      KeyValueManagement kvm = c.keyValueManagement();
      try {
        kvm.getStatus(warmupBucket);
      } catch (JetStreamApiException missing) {
        try {
          kvm.create(KeyValueConfiguration.builder().name(warmupBucket).maxHistoryPerKey(1)
              .ttl(Duration.ofNanos(warmupMaxAgeNanos)).maximumValueSize(warmupMaxBytes)
              .storageType(StorageType.File).build());
        } catch (JetStreamApiException raced) {
          kvm.getStatus(warmupBucket); // another replica created it meanwhile
        }
      }
      warmupStore = c.keyValue(warmupBucket);
      return warmupStore;
    } catch (IOException | JetStreamApiException e) {
      LOGGER.log(System.Logger.Level.WARNING, "warm-up bucket " + warmupBucket + " is unavailable (is JetStream "
          + "enabled on the server, nats-server -js?): " + e.getMessage());
      return null;
    }
  }

  /** A JetStream key for a replica name: its characters outside {@code [A-Za-z0-9_-]} replaced, plus a hash. */
  static String warmupKey(String replica) {
    StringBuilder key = new StringBuilder(replica.length() + 9);
    boolean replaced = false;
    for (int i = 0; i < replica.length(); i++) {
      char ch = replica.charAt(i);
      boolean ok = ch == '-' || ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
          || (ch >= '0' && ch <= '9');
      key.append(ok ? ch : '_');
      replaced |= !ok;
    }
    if (replaced) {
      key.append('.').append(Integer.toHexString(replica.hashCode()));
    }
    return key.toString();
  }

  private void connectionEvent(Connection conn, ConnectionListener.Events event) {
    try {
      // Every event carries the connection, even a failed first attempt's: close() must be able to stop it.
      connection = conn;
      if (closed) {
        if (event != ConnectionListener.Events.CLOSED) {
          // Closed before the connection first reported: stop its reconnect loop (not on the callback thread).
          Thread closer = new Thread(() -> {
            try {
              conn.close();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }, "kvroute-sync-nats-close");
          closer.setDaemon(true);
          closer.start();
        }
        return;
      }
      switch (event) {
        case CONNECTED, RECONNECTED, RESUBSCRIBED -> {
          if (dispatcher == null) {
            synchronized (this) {
              if (dispatcher == null && !closed) {
                dispatcher = conn.createDispatcher(this::onMessage).subscribe(subject);
              }
            }
          }
          boolean wasConnected = connected;
          synchronized (this) {
            connected = true;
            snapshotDue = true;
            requestAll = true;
          }
          if (!wasConnected) {
            notify(SyncListener::onConnected);
          }
        }
        case DISCONNECTED, CLOSED -> {
          boolean wasConnected;
          synchronized (this) {
            wasConnected = connected;
            connected = false; // the publisher drops what is batched (and counts it) when it next runs
          }
          PeerTable p = peers;
          if (p != null) {
            p.dropAll("disconnected");
          }
          if (wasConnected) {
            notify(SyncListener::onDisconnected);
          }
        }
        default -> { }
      }
    } catch (Throwable t) {
      LOGGER.log(System.Logger.Level.WARNING, "sync connection event " + event + " failed", t);
    }
  }

  private void onMessage(Message message) {
    byte[] data = message.getData();
    try {
      PeerTable p = peers;
      if (p == null || data == null) {
        return;
      }
      bytesReceived.addAndGet(data.length);
      if (!connected) {
        return; // delivered after the connection dropped: peers' state is rebuilt by snapshots on reconnect
      }
      try {
        FrameCodec.decode(data, frame);
      } catch (SyncFormatException e) {
        p.rejected("malformed frame on " + subject + ": " + e.getMessage());
        return;
      }
      if (p.receive(frame, System.nanoTime()) == PeerTable.Disposition.STAGED) {
        frame = new Frame();
      }
    } catch (Throwable t) {
      LOGGER.log(System.Logger.Level.WARNING, "sync frame handling failed; continuing", t);
    } finally {
      framesReceived.incrementAndGet();
    }
  }

  private void notify(java.util.function.Consumer<SyncListener> event) {
    try {
      event.accept(listener);
    } catch (RuntimeException e) {
      LOGGER.log(System.Logger.Level.WARNING, "sync listener threw", e);
    }
  }

  /**
   * Says goodbye to the peers (they drop this replica's load at once), closes the NATS connection and stops the
   * publisher; the router goes on with local load only. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    Thread t = publisher;
    if (t != null) {
      LockSupport.unpark(t);
      try {
        t.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    Thread w = warmupThread;
    if (w != null) {
      LockSupport.unpark(w);
      try {
        w.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      try {
        publishDeltas(false); // what is still batched, so its predictions reach the table
        writeWarmup(); // the last predictions, for whoever starts next
      } catch (RuntimeException e) {
        LOGGER.log(System.Logger.Level.DEBUG, "final warm-up write failed", e);
      }
    }
    Connection c = connection;
    if (c != null) {
      synchronized (publishLock) {
        if (connected) {
          publish(c, FrameCodec.control(Frame.GOODBYE, replica, instance, ++seq, ""));
          try {
            c.flush(Duration.ofSeconds(1));
          } catch (Exception e) {
            LOGGER.log(System.Logger.Level.DEBUG, "flush before close failed", e);
          }
        }
      }
      try {
        c.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    connected = false;
    PeerTable p = peers;
    if (p != null) {
      p.dropAll("closed");
    }
  }

  @Override
  public String toString() {
    return "NatsLoadSync{replica=" + replica + ", subject=" + subject + ", servers=" + servers
        + (connected ? ", connected" : ", disconnected") + ", peers=" + peers() + "}";
  }

  private static String defaultReplicaName() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = "host";
    }
    return host + "-" + ProcessHandle.current().pid() + "-" + Integer.toHexString(ThreadLocalRandom.current()
        .nextInt(1 << 16));
  }

  /** Configures a {@link NatsLoadSync}; not thread-safe. */
  public static final class Builder {
    private final List<String> servers = new ArrayList<>();
    private String subject = DEFAULT_SUBJECT;
    private @Nullable String replicaName;
    private Duration batchDelay = DEFAULT_BATCH_DELAY;
    private boolean manualFlush;
    private boolean estimateUnseenPeerBookings;
    private @Nullable Duration viewDelay;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration replicaTtl = DEFAULT_REPLICA_TTL;
    private Duration snapshotInterval = DEFAULT_SNAPSHOT_INTERVAL;
    private int maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
    private Duration reconnectWait = DEFAULT_RECONNECT_WAIT;
    private SyncListener listener = SyncListener.NONE;
    private UnaryOperator<Options.Builder> optionsCustomizer = UnaryOperator.identity();
    private @Nullable String warmupBucket;
    private Duration warmupInterval = DEFAULT_WARMUP_INTERVAL;
    private Duration warmupMaxAge = DEFAULT_WARMUP_MAX_AGE;
    private int warmupMaxBytes = DEFAULT_WARMUP_MAX_BYTES;

    private Builder() {}

    /**
     * The NATS servers to connect to, such as {@code nats://10.0.0.9:4222}; required.
     *
     * @param urls one or more NATS server URLs; the client fails over between them
     * @return this builder
     * @throws IllegalArgumentException if none is given or one is blank
     */
    public Builder servers(String... urls) {
      Objects.requireNonNull(urls, "urls");
      if (urls.length == 0) {
        throw new IllegalArgumentException("servers must name at least one NATS URL");
      }
      for (String url : urls) {
        Objects.requireNonNull(url, "url");
        if (url.isBlank()) {
          throw new IllegalArgumentException("servers must not contain a blank URL");
        }
      }
      servers.clear();
      servers.addAll(List.of(urls));
      return this;
    }

    /**
     * The subject the replicas of one gateway share (default {@value #DEFAULT_SUBJECT}); replicas on different
     * subjects do not see each other.
     *
     * @param subject a NATS subject without whitespace or wildcards ({@code *}, {@code >})
     * @return this builder
     * @throws IllegalArgumentException if blank or containing whitespace or wildcards
     */
    public Builder subject(String subject) {
      Objects.requireNonNull(subject, "subject");
      if (subject.isBlank() || subject.chars().anyMatch(c -> Character.isWhitespace(c) || c == '*' || c == '>')) {
        throw new IllegalArgumentException("subject must be a plain NATS subject but was '" + subject + "'");
      }
      this.subject = subject;
      return this;
    }

    /**
     * This replica's name, unique among the replicas (default: host name, process id and a random suffix).
     *
     * @param name the replica's name, at most 255 UTF-8 bytes
     * @return this builder
     * @throws IllegalArgumentException if blank or longer than 255 UTF-8 bytes
     */
    public Builder replicaName(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isBlank() || name.getBytes(StandardCharsets.UTF_8).length > FrameCodec.MAX_NAME_BYTES) {
        throw new IllegalArgumentException("replicaName must be non-blank and at most " + FrameCodec.MAX_NAME_BYTES
            + " UTF-8 bytes but was '" + name + "'");
      }
      this.replicaName = name;
      return this;
    }

    /**
     * The longest a delta waits for the publisher during a burst (default 100 µs): the first delta after a quiet
     * period is published at once, and for four batch delays after each publish the publisher
     * polls at this interval rather than being woken by each delta; zero wakes it for every quiet-to-busy change and
     * a batch is then what accumulated while the previous one was sent.
     *
     * @param delay the poll interval while lingering, in [0, 1 s]
     * @return this builder
     * @throws IllegalArgumentException if negative or above one second
     */
    public Builder batchDelay(Duration delay) {
      this.batchDelay = Checks.inRange("batchDelay", delay, Duration.ZERO, Duration.ofSeconds(1));
      return this;
    }

    /**
     * How long a booking made here typically takes to reach the peers' views (default: the {@link #batchDelay}, 100
     * µs unless changed): a delta after a quiet period is published at once and arrives one NATS hop later (tens of
     * microseconds on one host or LAN, more across zones), one made during a burst waits up to the batch delay. The
     * router's {@code kvAware} and {@code approximate} policies use it to estimate how many selections the peers
     * made that this replica's view cannot show yet, and place a request where one router would have placed it in
     * that burst (see {@link SharedLoad#viewDelayNanos}); zero turns the estimate off. Set it to the delay you
     * measure between your replicas.
     *
     * @param delay zero to one second
     * @return this builder
     * @throws IllegalArgumentException if negative or over a second
     */
    public Builder viewDelay(Duration delay) {
      this.viewDelay = Checks.inRange("viewDelay", delay, Duration.ZERO, Duration.ofSeconds(1));
      return this;
    }

    /**
     * Publishes deltas only when {@link NatsLoadSync#flush()} is called, never on the publisher thread (which still
     * sends heartbeats while nothing is batched, snapshots and requests); for simulations on a virtual clock.
     *
     * @return this builder
     */
    public Builder manualFlush() {
      this.manualFlush = true;
      return this;
    }

    /**
     * Whether the router counts its own bookings younger than the batch delay once more per peer in view, as an
     * estimate of the peers' bookings no frame has delivered yet (default off; see
     * {@link SharedLoad#peerCount}). Off by default because it is not shown to help: in the replica experiment
     * (4 replicas, concurrency 24, seeds 1-30, {@code predictedTtft}) its effect on the warm TTFT p99 measured
     * -3 % [-9, +3] and later +8 % [-3, +20], and it cost {@code kvAware} a quarter point of hit rate;
     * sync-nats/README.md gives the runs.
     *
     * @param on true to report the batch delay as the delivery window
     * @return this builder
     */
    public Builder estimateUnseenPeerBookings(boolean on) {
      this.estimateUnseenPeerBookings = on;
      return this;
    }

    /**
     * The longest silence before an empty frame is published as a heartbeat (default 1 s).
     *
     * @param interval the heartbeat interval, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatInterval = Checks.positive("heartbeatInterval", interval);
      return this;
    }

    /**
     * How long a silent peer stays in the view (default 3 s); must exceed the heartbeat interval, checked in
     * {@link #build()}.
     *
     * @param ttl the peer time-to-live, positive and above the heartbeat interval
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder replicaTtl(Duration ttl) {
      this.replicaTtl = Checks.positive("replicaTtl", ttl);
      return this;
    }

    /**
     * How often the full state is republished regardless of gaps (default 30 s); zero means only on connect and on
     * request.
     *
     * @param interval the snapshot interval, zero or positive
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder snapshotInterval(Duration interval) {
      this.snapshotInterval = Checks.notNegative("snapshotInterval", interval);
      return this;
    }

    /**
     * The bound on a frame's payload (default 256 KiB); keep it below the server's {@code max_payload}.
     *
     * @param bytes the largest frame payload in bytes, from 4096 to 64 MiB
     * @return this builder
     * @throws IllegalArgumentException if below 4 KiB or above 64 MiB
     */
    public Builder maxFrameBytes(int bytes) {
      this.maxFrameBytes = Checks.inRange("maxFrameBytes", bytes, 4096, 64 << 20);
      return this;
    }

    /**
     * The wait between reconnect attempts (default 250 ms): the view recovers about this soon after the server
     * returns.
     *
     * @param wait the reconnect wait, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder reconnectWait(Duration wait) {
      this.reconnectWait = Checks.positive("reconnectWait", wait);
      return this;
    }

    /**
     * Receives the sync's events (peers joining and leaving, gaps, snapshots, rejected frames, connection changes); the
     * default ignores them. Called on the NATS dispatcher and publisher threads; a listener that throws is logged and
     * never stops the sync.
     *
     * @param listener the listener, not null
     * @return this builder
     */
    public Builder listener(SyncListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Keeps this replica's recent approximate-mode predictions in the JetStream key-value bucket {@code bucket}
     * (created if missing, one key per replica, entries expiring after {@link #warmupMaxAge}; the server must run
     * JetStream, {@code nats-server -js}), and warms the router's prediction index from its peers' entries when it
     * first connects, so that a new replica routes its first requests to the workers its peers already filled.
     * Off by default (nothing is persisted).
     *
     * @param bucket the bucket's name, shared by the replicas of one gateway
     * @return this builder
     * @throws IllegalArgumentException if the name is blank, longer than 64 characters or has characters outside
     *     {@code [A-Za-z0-9_-]}
     */
    public Builder warmupBucket(String bucket) {
      Objects.requireNonNull(bucket, "bucket");
      if (bucket.isEmpty() || bucket.length() > 64 || !bucket.chars().allMatch(ch -> ch == '-' || ch == '_'
          || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))) {
        throw new IllegalArgumentException("warmupBucket must be 1 to 64 characters of [A-Za-z0-9_-] but was '"
            + bucket + "'");
      }
      this.warmupBucket = bucket;
      return this;
    }

    /**
     * How often this replica rewrites its warm-up snapshot when its predictions changed (default 5 s); it also
     * writes one when closed.
     *
     * @param interval positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder warmupInterval(Duration interval) {
      this.warmupInterval = Checks.positive("warmupInterval", interval);
      return this;
    }

    /**
     * Predictions older than this are left out of warm-up snapshots, and snapshots written longer ago than this are
     * not applied (default 120 s, {@code RouterPolicy.approximate()}'s prediction time to live; set it to the TTL
     * of the router's approximate policy). Applied predictions live for the router's own TTL from then.
     *
     * @param maxAge positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder warmupMaxAge(Duration maxAge) {
      this.warmupMaxAge = Checks.positive("warmupMaxAge", maxAge);
      return this;
    }

    /**
     * The bound on one warm-up snapshot (default 512 KiB, about 65,000 block hashes; the least recently predicted
     * are left out beyond it); keep it below the server's {@code max_payload}.
     *
     * @param bytes in [8 KiB, 64 MiB]
     * @return this builder
     * @throws IllegalArgumentException if outside that range
     */
    public Builder warmupMaxBytes(int bytes) {
      this.warmupMaxBytes = Checks.inRange("warmupMaxBytes", bytes, 8192, 64 << 20);
      return this;
    }

    /**
     * Adjusts the NATS client options (credentials, TLS, timeouts) after this builder's defaults; echo is always
     * off and the connection listener always this sync's.
     *
     * @param customizer applied to the NATS {@code Options.Builder} this builder prepared; returns the builder to use
     * @return this builder
     */
    public Builder natsOptions(UnaryOperator<Options.Builder> customizer) {
      this.optionsCustomizer = Objects.requireNonNull(customizer, "customizer");
      return this;
    }

    /**
     * Builds the sync.
     *
     * @return a new sync, not yet connected: it connects when the router it is given to
     *     ({@link io.kvroute.Router.Builder#sharedLoad}) starts it
     * @throws IllegalStateException if no server is set, or the TTL is not above the heartbeat interval
     */
    public NatsLoadSync build() {
      if (servers.isEmpty()) {
        throw new IllegalStateException("servers are required");
      }
      if (replicaTtl.compareTo(heartbeatInterval) <= 0) {
        throw new IllegalStateException("replicaTtl (" + replicaTtl + ") must exceed heartbeatInterval ("
            + heartbeatInterval + ")");
      }
      return new NatsLoadSync(this);
    }
  }
}
