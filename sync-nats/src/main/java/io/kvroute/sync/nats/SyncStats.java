package io.kvroute.sync.nats;

import java.util.Map;

/**
 * A point-in-time reading of a {@link NatsLoadSync}'s counters; an immutable value, thread-safe.
 *
 * @param sequence the sequence number of the last frame this replica published
 * @param framesSent frames published (deltas, snapshot parts, heartbeats and control frames)
 * @param bytesSent payload bytes of the frames published (NATS adds about 20 bytes of protocol per message)
 * @param framesReceived frames delivered by NATS from peers, including rejected and duplicate ones
 * @param bytesReceived payload bytes of the frames received
 * @param framesRejected received frames dropped as malformed or incompatible
 * @param deltasDropped local deltas not sent because the connection was down or the send queue overflowed (a
 *     snapshot replaces them once connected)
 * @param snapshotsSent snapshots published
 * @param connected whether the NATS connection is up
 * @param peers the peer replicas in the view, each with the sequence number of its last frame received here (a
 *     peer's {@code sequence} minus this is how many of its frames are still on their way)
 * @param warmupSnapshotsWritten warm-up snapshots written to the JetStream bucket (0 without one)
 * @param warmupBlocksApplied predicted blocks taken from peers' warm-up snapshots into the router's index
 */
public record SyncStats(long sequence, long framesSent, long bytesSent, long framesReceived, long bytesReceived,
    long framesRejected, long deltasDropped, long snapshotsSent, boolean connected, Map<String, Long> peers,
    long warmupSnapshotsWritten, long warmupBlocksApplied) {
  /**
   * A reading; {@code peers} is copied. The components are those of the record.
   *
   * @param sequence the last frame's sequence number
   * @param framesSent frames published
   * @param bytesSent payload bytes published
   * @param framesReceived frames received
   * @param bytesReceived payload bytes received
   * @param framesRejected received frames dropped
   * @param deltasDropped local deltas not sent
   * @param snapshotsSent snapshots published
   * @param connected whether the connection is up
   * @param peers each peer's last sequence number received
   * @param warmupSnapshotsWritten warm-up snapshots written
   * @param warmupBlocksApplied warm-up blocks handed to the router
   * @throws NullPointerException if {@code peers} is null
   */
  public SyncStats {
    peers = Map.copyOf(peers);
  }
}
