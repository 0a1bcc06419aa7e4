package io.kvroute.sync.nats;

import io.kvroute.WorkerId;
import it.unimi.dsi.fastutil.objects.Object2IntOpenHashMap;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Accumulates the records of one delta or snapshot frame and encodes it in the layout of {@link FrameCodec}; not
 * thread-safe (its owner serializes access).
 *
 * <p>Records are written into a reusable body buffer as they come, so appending one costs a few array stores and no
 * allocation once the buffers have grown; the worker table and header are prepended by {@link #finish}.
 */
final class FrameWriter {
  private byte[] body = new byte[4096];
  private int bodySize;
  private int records;
  private long baseId = -1;
  // Open addressing: clearing and refilling it per frame allocates nothing (a HashMap would allocate a node per
  // worker per frame, which with frames of a few records is bytes per booking on the selecting thread).
  private final Object2IntOpenHashMap<WorkerId> workerIndex = newWorkerIndex();
  private final List<WorkerId> workers = new ArrayList<>();
  private int workerTableBytes;

  /** Records appended since the last {@link #finish} or {@link #reset}. */
  int records() {
    return records;
  }

  /** An upper bound of the encoded frame's size if it were finished now, header excluded. */
  int pendingBytes() {
    return bodySize + workerTableBytes + 2 * FrameCodec.MAX_VARINT;
  }

  /** A request booked on {@code worker}, carrying its load keys (a digest of its block hashes). */
  void book(long id, WorkerId worker, long prefillTokens, int blocks, long[] keys, int keyCount) {
    book(id, worker, prefillTokens, blocks, keys, keyCount, DeltaRing.NO_NOTE, 0, 0);
  }

  /** The same, with its policy's note ({@link DeltaRing#NO_NOTE} for none): see {@link FrameCodec}'s layout. */
  void book(long id, WorkerId worker, long prefillTokens, int blocks, long[] keys, int keyCount, byte note,
      int warmBlocks, long warmKey) {
    checkRecord(id, prefillTokens, blocks);
    checkNote(note, warmBlocks, blocks);
    if (keyCount < 0 || keyCount > blocks) {
      throw new IllegalArgumentException("keyCount must be in [0, blocks=" + blocks + "] but was " + keyCount);
    }
    int w = workerIndex(worker);
    ensure(1 + 4 * FrameCodec.MAX_VARINT + 8 * keyCount + NOTE_BYTES);
    body[bodySize++] = note == DeltaRing.NO_NOTE ? Frame.BOOK : (byte) (Frame.BOOK | Frame.NOTE);
    putId(id);
    putVarint(w);
    putVarint(prefillTokens);
    putVarint(blocks);
    putVarint(keyCount);
    for (int i = 0; i < keyCount; i++) {
      putLong(keys[i]);
    }
    putNote(note, warmBlocks, warmKey);
    records++;
  }

  /** A request booked on {@code worker} in approximate mode: all its block hashes, which peers also predict. */
  void bookPredicted(long id, WorkerId worker, long prefillTokens, long[] hashes, int count) {
    bookPredicted(id, worker, prefillTokens, hashes, count, DeltaRing.NO_NOTE, 0, 0);
  }

  /** The same, with its policy's note ({@link DeltaRing#NO_NOTE} for none). */
  void bookPredicted(long id, WorkerId worker, long prefillTokens, long[] hashes, int count, byte note,
      int warmBlocks, long warmKey) {
    checkRecord(id, prefillTokens, count);
    checkNote(note, warmBlocks, count);
    int w = workerIndex(worker);
    ensure(1 + 3 * FrameCodec.MAX_VARINT + 8 * count + NOTE_BYTES);
    body[bodySize++] = note == DeltaRing.NO_NOTE ? Frame.BOOK_PREDICTED
        : (byte) (Frame.BOOK_PREDICTED | Frame.NOTE);
    putId(id);
    putVarint(w);
    putVarint(prefillTokens);
    putVarint(count);
    for (int i = 0; i < count; i++) {
      putLong(hashes[i]);
    }
    putNote(note, warmBlocks, warmKey);
    records++;
  }

  /**
   * An approximate-mode booking of {@code count} hashes whose first {@code refBlocks} (1 to {@code count}) are a
   * prefix every peer holds from this replica's earlier frames ({@link PromptDictionary}): a {@link Frame#RENEW}
   * record with the prefix's length and last hash and the hashes after it, with its policy's note
   * ({@link DeltaRing#NO_NOTE} for none).
   */
  void renew(long id, WorkerId worker, long prefillTokens, long[] hashes, int count, int refBlocks, byte note,
      int warmBlocks, long warmKey) {
    checkRecord(id, prefillTokens, count);
    checkNote(note, warmBlocks, count);
    if (refBlocks < 1 || refBlocks > count) {
      throw new IllegalArgumentException("refBlocks must be in [1, count=" + count + "] but was " + refBlocks);
    }
    int w = workerIndex(worker);
    ensure(1 + 4 * FrameCodec.MAX_VARINT + 8 + 8 * (count - refBlocks) + NOTE_BYTES);
    body[bodySize++] = note == DeltaRing.NO_NOTE ? Frame.RENEW : (byte) (Frame.RENEW | Frame.NOTE);
    putId(id);
    putVarint(w);
    putVarint(prefillTokens);
    putVarint(count);
    putVarint(refBlocks);
    putLong(hashes[refBlocks - 1]);
    for (int i = refBlocks; i < count; i++) {
      putLong(hashes[i]);
    }
    putNote(note, warmBlocks, warmKey);
    records++;
  }

  /** The most bytes a note takes: its new-prefix flag, warm blocks and warm key. */
  private static final int NOTE_BYTES = 1 + FrameCodec.MAX_VARINT + 8;

  private static void checkNote(byte note, int warmBlocks, int blocks) {
    if (note != DeltaRing.NO_NOTE && note != DeltaRing.NOTED && note != DeltaRing.NOTED_NEW_PREFIX) {
      throw new IllegalArgumentException("note must be NO_NOTE, NOTED or NOTED_NEW_PREFIX but was " + note);
    }
    if (warmBlocks < 0 || warmBlocks > blocks) {
      throw new IllegalArgumentException("warmBlocks must be in [0, blocks=" + blocks + "] but was " + warmBlocks);
    }
  }

  private void putNote(byte note, int warmBlocks, long warmKey) {
    if (note == DeltaRing.NO_NOTE) {
      return;
    }
    body[bodySize++] = (byte) (note == DeltaRing.NOTED_NEW_PREFIX ? 1 : 0);
    putVarint(warmBlocks);
    if (warmBlocks > 0) {
      putLong(warmKey);
    }
  }

  /** The booked request produced its first token: its pending prefill tokens are released. */
  void firstToken(long id) {
    phase(Frame.FIRST_TOKEN, id);
  }

  /** The booked request closed: all its load is released. */
  void close(long id) {
    phase(Frame.CLOSE, id);
  }

  private void phase(byte tag, long id) {
    if (id < 0) {
      throw new IllegalArgumentException("id must not be negative but was " + id);
    }
    ensure(1 + FrameCodec.MAX_VARINT);
    body[bodySize++] = tag;
    putId(id);
    records++;
  }

  /**
   * Encodes a {@link Frame#DELTAS} or {@link Frame#SNAPSHOT} frame with the records appended so far, then resets.
   */
  byte[] finish(int kind, String replica, long instance, long seq, int blockSize, long snapshotId, int part,
      boolean lastPart) {
    if (kind != Frame.DELTAS && kind != Frame.SNAPSHOT) {
      throw new IllegalArgumentException("kind must be DELTAS or SNAPSHOT but was " + kind);
    }
    ByteSink out = new ByteSink(pendingBytes() + 64 + replica.length() * 3);
    FrameCodec.writeHeader(out, kind, replica, instance, seq);
    if (blockSize <= 0) {
      throw new IllegalArgumentException("blockSize must be positive but was " + blockSize);
    }
    out.varint(blockSize);
    if (kind == Frame.SNAPSHOT) {
      out.varint(snapshotId);
      out.varint(part);
      out.put(lastPart ? 1 : 0);
    }
    out.varint(workers.size());
    for (WorkerId w : workers) {
      out.string(w.name());
      out.varint(w.dataParallelRank());
    }
    out.varint(Math.max(0, baseId));
    out.varint(records);
    out.put(body, 0, bodySize);
    reset();
    return out.toByteArray();
  }

  void reset() {
    bodySize = 0;
    records = 0;
    baseId = -1;
    workers.clear();
    workerIndex.clear();
    workerTableBytes = 0;
  }

  private static void checkRecord(long id, long prefillTokens, int blocks) {
    if (id < 0) {
      throw new IllegalArgumentException("id must not be negative but was " + id);
    }
    if (prefillTokens < 0) {
      throw new IllegalArgumentException("prefillTokens must not be negative but was " + prefillTokens);
    }
    if (blocks < 0 || blocks > FrameCodec.MAX_BLOCKS) {
      throw new IllegalArgumentException("blocks must be in [0, " + FrameCodec.MAX_BLOCKS + "] but was " + blocks);
    }
  }

  private int workerIndex(WorkerId worker) {
    int index = workerIndex.getInt(worker);
    if (index >= 0) {
      return index;
    }
    if (workers.size() >= FrameCodec.MAX_WORKERS) {
      throw new IllegalStateException("a frame names at most " + FrameCodec.MAX_WORKERS + " workers");
    }
    byte[] name = worker.name().getBytes(StandardCharsets.UTF_8);
    if (name.length > FrameCodec.MAX_NAME_BYTES) {
      throw new IllegalArgumentException("worker name " + worker.name() + " is longer than "
          + FrameCodec.MAX_NAME_BYTES + " UTF-8 bytes");
    }
    int i = workers.size();
    workers.add(worker);
    workerIndex.put(worker, i);
    workerTableBytes += name.length + 2 * FrameCodec.MAX_VARINT;
    return i;
  }

  private static Object2IntOpenHashMap<WorkerId> newWorkerIndex() {
    Object2IntOpenHashMap<WorkerId> map = new Object2IntOpenHashMap<>();
    map.defaultReturnValue(-1);
    return map;
  }

  private void putId(long id) {
    if (baseId < 0) {
      baseId = id;
    }
    putVarint(FrameCodec.zigzag(id - baseId));
  }

  private void ensure(int more) {
    if (bodySize + more > body.length) {
      body = Arrays.copyOf(body, Math.max(bodySize + more, body.length * 2));
    }
  }

  private void putVarint(long v) {
    bodySize = FrameCodec.putVarint(body, bodySize, v);
  }

  private void putLong(long v) {
    FrameCodec.putLong(body, bodySize, v);
    bodySize += 8;
  }

  /** A growable output buffer for frame assembly. */
  static final class ByteSink {
    private byte[] bytes;
    private int size;

    ByteSink(int capacity) {
      bytes = new byte[Math.max(16, capacity)];
    }

    void put(int b) {
      ensure(1);
      bytes[size++] = (byte) b;
    }

    void put(byte[] src, int off, int len) {
      ensure(len);
      System.arraycopy(src, off, bytes, size, len);
      size += len;
    }

    void varint(long v) {
      ensure(FrameCodec.MAX_VARINT);
      size = FrameCodec.putVarint(bytes, size, v);
    }

    void putLong(long v) {
      ensure(8);
      FrameCodec.putLong(bytes, size, v);
      size += 8;
    }

    void string(String s) {
      byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
      if (utf8.length > FrameCodec.MAX_NAME_BYTES) {
        throw new IllegalArgumentException("name " + s + " is longer than " + FrameCodec.MAX_NAME_BYTES
            + " UTF-8 bytes");
      }
      varint(utf8.length);
      put(utf8, 0, utf8.length);
    }

    private void ensure(int more) {
      if (size + more > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(size + more, bytes.length * 2));
      }
    }

    byte[] toByteArray() {
      return Arrays.copyOf(bytes, size);
    }
  }
}
