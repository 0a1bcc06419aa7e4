package io.kvroute.sync.nats;

import io.kvroute.WorkerId;
import java.util.Arrays;

/**
 * One decoded sync frame: a header and, for delta and snapshot frames, records in parallel primitive arrays; not
 * thread-safe (a decoder fills one per received message).
 *
 * <p>The wire layout is documented on {@link FrameCodec}.
 */
final class Frame {
  static final int DELTAS = 0;
  static final int SNAPSHOT = 1;
  static final int SNAPSHOT_REQUEST = 2;
  static final int GOODBYE = 3;

  static final byte BOOK = 1;
  static final byte BOOK_PREDICTED = 2;
  static final byte FIRST_TOKEN = 3;
  static final byte CLOSE = 4;
  /**
   * (Version 3.) An approximate-mode booking whose prompt begins with a prefix the sender published whole lately:
   * that prefix's length and last hash, then only the hashes after it (see {@link FrameCodec} and
   * {@link PromptDictionary}); the receiver rebuilds the whole prompt and applies it as a {@code BOOK_PREDICTED}.
   */
  static final byte RENEW = 5;
  /**
   * Set on a {@code BOOK}, {@code BOOK_PREDICTED} (version 2) or {@code RENEW} tag: the record ends with its policy's
   * note.
   */
  static final byte NOTE = 0x10;

  int kind;
  String replica = "";
  long instance;
  long seq;
  // DELTAS and SNAPSHOT only: the sender's block size.
  int blockSize;
  // SNAPSHOT only: the snapshot's id (the seq of its first part), this part's index, and whether it is the last.
  long snapshotId;
  int part;
  boolean lastPart;
  // SNAPSHOT_REQUEST only: the replica asked for a snapshot, or "" for every replica.
  String target = "";

  WorkerId[] workers = new WorkerId[0];
  int recordCount;
  byte[] tags = new byte[16];
  long[] ids = new long[16];
  int[] workerIndex = new int[16];
  long[] prefill = new long[16];
  int[] blocks = new int[16];
  int[] keyOffset = new int[16];
  int[] keyCount = new int[16];
  // A booking's note: whether it has one, whether the peer's policy placed a new prefix, and its warm prefix.
  boolean[] noted = new boolean[16];
  boolean[] newPrefix = new boolean[16];
  int[] warmBlocks = new int[16];
  long[] warmKey = new long[16];
  // A RENEW's prefix: its length in blocks and the hash of its last block (its other hashes are in keys).
  int[] refBlocks = new int[16];
  long[] refHash = new long[16];
  long[] keys = new long[64];
  int keysUsed;

  void clearRecords() {
    recordCount = 0;
    keysUsed = 0;
  }

  /** Reserves room for one more record and returns its index. */
  int addRecord() {
    if (recordCount == tags.length) {
      int n = recordCount * 2;
      tags = Arrays.copyOf(tags, n);
      ids = Arrays.copyOf(ids, n);
      workerIndex = Arrays.copyOf(workerIndex, n);
      prefill = Arrays.copyOf(prefill, n);
      blocks = Arrays.copyOf(blocks, n);
      keyOffset = Arrays.copyOf(keyOffset, n);
      keyCount = Arrays.copyOf(keyCount, n);
      noted = Arrays.copyOf(noted, n);
      newPrefix = Arrays.copyOf(newPrefix, n);
      warmBlocks = Arrays.copyOf(warmBlocks, n);
      warmKey = Arrays.copyOf(warmKey, n);
      refBlocks = Arrays.copyOf(refBlocks, n);
      refHash = Arrays.copyOf(refHash, n);
    }
    return recordCount++;
  }

  /** Reserves {@code n} key slots and returns the offset of the first. */
  int addKeys(int n) {
    if (keysUsed + n > keys.length) {
      keys = Arrays.copyOf(keys, Math.max(keysUsed + n, keys.length * 2));
    }
    int offset = keysUsed;
    keysUsed += n;
    return offset;
  }

  WorkerId worker(int record) {
    return workers[workerIndex[record]];
  }

  @Override
  public String toString() {
    return "Frame{kind=" + kind + ", replica=" + replica + ", instance=" + Long.toHexString(instance) + ", seq=" + seq
        + ", records=" + recordCount + ", workers=" + workers.length + "}";
  }
}
