package io.kvroute.sync.nats;

import io.kvroute.internal.Checks;
import java.util.Map;
import java.util.Objects;

/**
 * A point-in-time reading of a {@link NatsLoadSync}'s counters; an immutable value, thread-safe.
 *
 * <p>A value class with a factory, as Caffeine's {@code CacheStats}: {@link NatsLoadSync#stats()} returns one, and
 * {@link #of} builds one for tests; it checks its arguments and copies the map.
 */
public final class SyncStats {
  private final long sequence;
  private final long framesSent;
  private final long bytesSent;
  private final long framesReceived;
  private final long bytesReceived;
  private final long framesRejected;
  private final long deltasDropped;
  private final long snapshotsSent;
  private final boolean connected;
  private final Map<String, Long> peers;
  private final long warmupSnapshotsWritten;
  private final long warmupBlocksApplied;

  private SyncStats(long sequence, long framesSent, long bytesSent, long framesReceived, long bytesReceived,
      long framesRejected, long deltasDropped, long snapshotsSent, boolean connected, Map<String, Long> peers,
      long warmupSnapshotsWritten, long warmupBlocksApplied) {
    this.sequence = sequence;
    this.framesSent = framesSent;
    this.bytesSent = bytesSent;
    this.framesReceived = framesReceived;
    this.bytesReceived = bytesReceived;
    this.framesRejected = framesRejected;
    this.deltasDropped = deltasDropped;
    this.snapshotsSent = snapshotsSent;
    this.connected = connected;
    this.peers = peers;
    this.warmupSnapshotsWritten = warmupSnapshotsWritten;
    this.warmupBlocksApplied = warmupBlocksApplied;
  }

  /**
   * A reading with these values; maps are copied. Counts must not be negative.
   *
   * @param sequence the sequence number of the last frame this replica published
   * @param framesSent frames published (deltas, snapshot parts, heartbeats and control frames)
   * @param bytesSent payload bytes of the frames published (NATS adds about 20 bytes of protocol per message)
   * @param framesReceived frames delivered by NATS from peers, including rejected and duplicate ones
   * @param bytesReceived payload bytes of the frames received
   * @param framesRejected received frames dropped as malformed or incompatible
   * @param deltasDropped local deltas not sent because the connection was down or the send queue overflowed (a snapshot
   *     replaces them once connected)
   * @param snapshotsSent snapshots published
   * @param connected whether the NATS connection is up
   * @param peers the peer replicas in the view, each with the sequence number of its last frame received here (a peer's
   *     {@code sequence} minus this is how many of its frames are still on their way)
   * @param warmupSnapshotsWritten warm-up snapshots written to the JetStream bucket (0 without one)
   * @param warmupBlocksApplied predicted blocks taken from peers' warm-up snapshots into the router's index
   * @return the reading
   * @throws NullPointerException if {@code peers} is null
   * @throws IllegalArgumentException if a count is negative, naming it
   */
  public static SyncStats of(long sequence, long framesSent, long bytesSent, long framesReceived, long bytesReceived,
      long framesRejected, long deltasDropped, long snapshotsSent, boolean connected, Map<String, Long> peers,
      long warmupSnapshotsWritten, long warmupBlocksApplied) {
    Checks.notNegative("sequence", sequence);
    Checks.notNegative("framesSent", framesSent);
    Checks.notNegative("bytesSent", bytesSent);
    Checks.notNegative("framesReceived", framesReceived);
    Checks.notNegative("bytesReceived", bytesReceived);
    Checks.notNegative("framesRejected", framesRejected);
    Checks.notNegative("deltasDropped", deltasDropped);
    Checks.notNegative("snapshotsSent", snapshotsSent);
    Checks.notNegative("warmupSnapshotsWritten", warmupSnapshotsWritten);
    Checks.notNegative("warmupBlocksApplied", warmupBlocksApplied);
    return new SyncStats(sequence, framesSent, bytesSent, framesReceived, bytesReceived, framesRejected, deltasDropped,
        snapshotsSent, connected, Map.copyOf(Objects.requireNonNull(peers, "peers")), warmupSnapshotsWritten,
        warmupBlocksApplied);
  }

  /**
   * Returns the sequence number of the last frame this replica published.
   *
   * @return the sequence number of the last frame this replica published
   */
  public long sequence() {
    return sequence;
  }

  /**
   * Returns frames published (deltas, snapshot parts, heartbeats and control frames).
   *
   * @return frames published (deltas, snapshot parts, heartbeats and control frames)
   */
  public long framesSent() {
    return framesSent;
  }

  /**
   * Returns payload bytes of the frames published (NATS adds about 20 bytes of protocol per message).
   *
   * @return payload bytes of the frames published (NATS adds about 20 bytes of protocol per message)
   */
  public long bytesSent() {
    return bytesSent;
  }

  /**
   * Returns frames delivered by NATS from peers, including rejected and duplicate ones.
   *
   * @return frames delivered by NATS from peers, including rejected and duplicate ones
   */
  public long framesReceived() {
    return framesReceived;
  }

  /**
   * Returns payload bytes of the frames received.
   *
   * @return payload bytes of the frames received
   */
  public long bytesReceived() {
    return bytesReceived;
  }

  /**
   * Returns received frames dropped as malformed or incompatible.
   *
   * @return received frames dropped as malformed or incompatible
   */
  public long framesRejected() {
    return framesRejected;
  }

  /**
   * Returns local deltas not sent because the connection was down or the send queue overflowed (a snapshot replaces
   * them once connected).
   *
   * @return local deltas not sent because the connection was down or the send queue overflowed (a snapshot replaces
   *     them once connected)
   */
  public long deltasDropped() {
    return deltasDropped;
  }

  /**
   * Returns snapshots published.
   *
   * @return snapshots published
   */
  public long snapshotsSent() {
    return snapshotsSent;
  }

  /**
   * Returns whether the NATS connection is up.
   *
   * @return whether the NATS connection is up
   */
  public boolean connected() {
    return connected;
  }

  /**
   * Returns the peer replicas in the view, each with the sequence number of its last frame received here (a peer's
   * {@code sequence} minus this is how many of its frames are still on their way).
   *
   * @return the peer replicas in the view, each with the sequence number of its last frame received here (a peer's
   *     {@code sequence} minus this is how many of its frames are still on their way)
   */
  public Map<String, Long> peers() {
    return peers;
  }

  /**
   * Returns warm-up snapshots written to the JetStream bucket (0 without one).
   *
   * @return warm-up snapshots written to the JetStream bucket (0 without one)
   */
  public long warmupSnapshotsWritten() {
    return warmupSnapshotsWritten;
  }

  /**
   * Returns predicted blocks taken from peers' warm-up snapshots into the router's index.
   *
   * @return predicted blocks taken from peers' warm-up snapshots into the router's index
   */
  public long warmupBlocksApplied() {
    return warmupBlocksApplied;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof SyncStats other)) {
      return false;
    }
    return sequence == other.sequence && framesSent == other.framesSent && bytesSent == other.bytesSent
        && framesReceived == other.framesReceived && bytesReceived == other.bytesReceived
        && framesRejected == other.framesRejected && deltasDropped == other.deltasDropped
        && snapshotsSent == other.snapshotsSent && connected == other.connected && peers.equals(other.peers)
        && warmupSnapshotsWritten == other.warmupSnapshotsWritten && warmupBlocksApplied == other.warmupBlocksApplied;
  }

  @Override
  public int hashCode() {
    return Objects.hash(sequence, framesSent, bytesSent, framesReceived, bytesReceived, framesRejected, deltasDropped,
        snapshotsSent, connected, peers, warmupSnapshotsWritten, warmupBlocksApplied);
  }

  @Override
  public String toString() {
    return "SyncStats[sequence=" + sequence + ", framesSent=" + framesSent + ", bytesSent=" + bytesSent
        + ", framesReceived=" + framesReceived + ", bytesReceived=" + bytesReceived + ", framesRejected="
        + framesRejected + ", deltasDropped=" + deltasDropped + ", snapshotsSent=" + snapshotsSent + ", connected="
        + connected + ", peers=" + peers + ", warmupSnapshotsWritten=" + warmupSnapshotsWritten
        + ", warmupBlocksApplied=" + warmupBlocksApplied + "]";
  }
}
