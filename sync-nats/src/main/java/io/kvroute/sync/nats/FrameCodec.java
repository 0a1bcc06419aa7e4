package io.kvroute.sync.nats;

import io.kvroute.WorkerId;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The binary layout of load-sync frames, and their decoder; stateless and thread-safe.
 *
 * <p>One NATS message carries one frame. Integers are unsigned LEB128 varints unless noted; ids inside a frame are
 * zigzag varints relative to the frame's base id; hashes are 8-byte big-endian.
 * <pre>
 * frame    = magic 'k' 'l' | version 3 | kind (1 byte) | replica (string) | instance (8 bytes) | seq
 *            | body(kind)
 * DELTAS   : blockSize | workers | baseId | count | record*count
 * SNAPSHOT : blockSize | snapshotId | part | last (1 byte, 0 or 1) | workers | baseId | count | record*count
 * SNAPSHOT_REQUEST : target (string; empty = every replica)
 * GOODBYE  : (nothing)
 * workers  = n | (name (string) | dataParallelRank)*n
 * record   = 1 BOOK           id | worker | prefillTokens | blocks | keyCount | key*keyCount
 *          | 2 BOOK_PREDICTED id | worker | prefillTokens | blocks | hash*blocks
 *          | 5 RENEW          id | worker | prefillTokens | blocks | refBlocks | refHash (8 bytes)
 *                             | hash*(blocks - refBlocks)                                (version 3)
 *          | 0x11 BOOK, 0x12 BOOK_PREDICTED, 0x15 RENEW with a note: the same, then note
 *          | 3 FIRST_TOKEN    id
 *          | 4 CLOSE          id
 * note     = newPrefix (1 byte, 0 or 1) | warmBlocks (at most blocks) | warmKey (8 bytes, if warmBlocks &gt; 0)
 * string   = byteLength | UTF-8 bytes (at most 255)
 * </pre>
 * A note is what the sender's policy learned from its choice (see {@code SharedLoad.booked} with a note): peers'
 * policies learn it too. Version 2 added notes; a version 1 frame (no notes) is still read.
 * Version 3 added {@code RENEW}: an approximate-mode booking whose prompt begins with a prefix (of {@code refBlocks}
 * blocks, 1 to {@code blocks}, ending at the hash {@code refHash}) of a prompt the sender published lately (see
 * {@link PromptDictionary}): only the hashes after the prefix travel (28 instead of 148 for the article's 2,371-token
 * prompts sharing a 2,032-token prefix), and the receiver rebuilds the rest from its dictionary of that sender. A
 * version 2 frame is still read; a {@code RENEW} tag in a frame of version 1 or 2 is an unknown tag.
 * The block size travels with every delta and snapshot frame because block hashes only agree between routers with
 * the same block size: a receiver drops frames of another block size.
 * A frame is rejected as a whole ({@link SyncFormatException}) if it is truncated, has trailing bytes, an unknown
 * kind or tag, a worker index outside its table, more than {@value #MAX_BLOCKS} blocks in a record, or counts that
 * its length cannot hold; the decoder never allocates more than a small multiple of the frame's length.
 */
final class FrameCodec {
  static final byte MAGIC_0 = 'k';
  static final byte MAGIC_1 = 'l';
  static final byte VERSION = 3;
  /** The oldest version read: version 1 frames are version 2's without notes, version 2's are 3's without renewals. */
  static final byte MIN_VERSION = 1;
  static final int MAX_VARINT = 10;
  static final int MAX_NAME_BYTES = 255;
  static final int MAX_WORKERS = 65_536;
  static final int MAX_BLOCKS = 1 << 20;

  private FrameCodec() {}

  static void writeHeader(FrameWriter.ByteSink out, int kind, String replica, long instance, long seq) {
    if (seq < 0) {
      throw new IllegalArgumentException("seq must not be negative but was " + seq);
    }
    out.put(MAGIC_0);
    out.put(MAGIC_1);
    out.put(VERSION);
    out.put(kind);
    out.string(replica);
    out.putLong(instance);
    out.varint(seq);
  }

  /** Encodes a frame without records: a {@link Frame#SNAPSHOT_REQUEST} or a {@link Frame#GOODBYE}. */
  static byte[] control(int kind, String replica, long instance, long seq, String target) {
    if (kind != Frame.SNAPSHOT_REQUEST && kind != Frame.GOODBYE) {
      throw new IllegalArgumentException("kind must be SNAPSHOT_REQUEST or GOODBYE but was " + kind);
    }
    FrameWriter.ByteSink out = new FrameWriter.ByteSink(32 + replica.length() * 3 + target.length() * 3);
    writeHeader(out, kind, replica, instance, seq);
    if (kind == Frame.SNAPSHOT_REQUEST) {
      out.string(target);
    }
    return out.toByteArray();
  }

  /**
   * Decodes {@code bytes} into {@code frame}, replacing its contents.
   *
   * @throws SyncFormatException if the bytes are not a well-formed frame
   */
  static void decode(byte[] bytes, Frame frame) {
    new Reader(bytes).frame(frame);
  }

  static long zigzag(long v) {
    return (v << 1) ^ (v >> 63);
  }

  static long unzigzag(long v) {
    return (v >>> 1) ^ -(v & 1);
  }

  static int putVarint(byte[] dst, int pos, long v) {
    while ((v & ~0x7FL) != 0) {
      dst[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    dst[pos++] = (byte) v;
    return pos;
  }

  static void putLong(byte[] dst, int pos, long v) {
    for (int i = 7; i >= 0; i--) {
      dst[pos + i] = (byte) v;
      v >>>= 8;
    }
  }

  /** A bounds-checked cursor over one frame (or one warm-up snapshot, {@link Warmup}). */
  static final class Reader {
    private final byte[] b;
    private int pos;
    private int version = VERSION;

    Reader(byte[] bytes) {
      this.b = bytes;
    }

    void frame(Frame f) {
      f.clearRecords();
      f.workers = new WorkerId[0];
      f.snapshotId = 0;
      f.part = 0;
      f.lastPart = false;
      f.target = "";
      need(4, "header");
      if (b[0] != MAGIC_0 || b[1] != MAGIC_1) {
        throw new SyncFormatException("not a kvroute load-sync frame (magic " + hex(b[0]) + hex(b[1]) + ")");
      }
      if (b[2] < MIN_VERSION || b[2] > VERSION) {
        throw new SyncFormatException("unsupported frame version " + b[2] + " (this decoder reads " + MIN_VERSION
            + " to " + VERSION + ")");
      }
      version = b[2];
      int kind = b[3];
      pos = 4;
      if (kind < Frame.DELTAS || kind > Frame.GOODBYE) {
        throw new SyncFormatException("unknown frame kind " + kind);
      }
      f.kind = kind;
      f.replica = string("replica");
      if (f.replica.isEmpty()) {
        throw new SyncFormatException("empty replica name");
      }
      f.instance = fixedLong("instance");
      f.seq = varint("seq");
      switch (kind) {
        case Frame.SNAPSHOT_REQUEST -> f.target = string("target");
        case Frame.GOODBYE -> { }
        default -> {
          f.blockSize = count("block size", Integer.MAX_VALUE);
          if (f.blockSize == 0) {
            throw new SyncFormatException("block size 0");
          }
          if (kind == Frame.SNAPSHOT) {
            f.snapshotId = varint("snapshotId");
            f.part = count("part", Integer.MAX_VALUE);
            need(1, "last flag");
            int last = b[pos++];
            if (last != 0 && last != 1) {
              throw new SyncFormatException("last flag must be 0 or 1 but was " + last);
            }
            f.lastPart = last == 1;
          }
          records(f);
        }
      }
      if (pos != b.length) {
        throw new SyncFormatException((b.length - pos) + " trailing bytes after the frame");
      }
    }

    private void records(Frame f) {
      // Each table entry takes at least 2 bytes, each record at least 2: counts beyond that cannot be honest.
      int workers = count("worker count", Math.min(MAX_WORKERS, remaining() / 2));
      WorkerId[] table = new WorkerId[workers];
      for (int i = 0; i < workers; i++) {
        String name = string("worker name");
        int rank = count("data-parallel rank", Integer.MAX_VALUE);
        if (name.isBlank()) {
          throw new SyncFormatException("blank worker name at table index " + i);
        }
        table[i] = new WorkerId(name, rank);
      }
      f.workers = table;
      long base = varint("base id");
      if (base < 0) {
        throw new SyncFormatException("base id " + Long.toUnsignedString(base) + " exceeds " + Long.MAX_VALUE);
      }
      int count = count("record count", remaining() / 2);
      for (int r = 0; r < count; r++) {
        need(1, "record tag");
        byte tag = b[pos++];
        boolean noted = (tag == (Frame.BOOK | Frame.NOTE) || tag == (Frame.BOOK_PREDICTED | Frame.NOTE)
            || tag == (Frame.RENEW | Frame.NOTE)) && version >= 2;
        if (noted) {
          tag = (byte) (tag & ~Frame.NOTE);
        }
        int i = f.addRecord();
        f.tags[i] = tag;
        f.noted[i] = noted;
        f.newPrefix[i] = false;
        f.warmBlocks[i] = 0;
        f.warmKey[i] = 0;
        long delta = unzigzag(varint("record id"));
        long id = base + delta;
        if (id < 0) {
          throw new SyncFormatException("record " + r + " has a negative or overflowing id");
        }
        f.ids[i] = id;
        f.workerIndex[i] = -1;
        f.prefill[i] = 0;
        f.blocks[i] = 0;
        f.keyOffset[i] = 0;
        f.keyCount[i] = 0;
        f.refBlocks[i] = 0;
        f.refHash[i] = 0;
        if (tag == Frame.RENEW && version < 3) {
          throw new SyncFormatException("unknown record tag " + tag + " in record " + r + " of a version " + version
              + " frame (renewals came with version 3)");
        }
        switch (tag) {
          case Frame.BOOK, Frame.BOOK_PREDICTED, Frame.RENEW -> {
            int w = count("worker index", Integer.MAX_VALUE);
            if (w >= workers) {
              throw new SyncFormatException("record " + r + " names worker " + w + " of a " + workers
                  + "-entry table");
            }
            f.workerIndex[i] = w;
            f.prefill[i] = varint("prefill tokens");
            int blocks = count("blocks", MAX_BLOCKS);
            f.blocks[i] = blocks;
            int keys = blocks;
            if (tag == Frame.BOOK) {
              keys = count("key count", blocks);
            } else if (tag == Frame.RENEW) {
              int ref = count("prefix blocks", blocks);
              if (ref == 0) {
                throw new SyncFormatException("record " + r + " renews an empty prefix");
              }
              f.refBlocks[i] = ref;
              f.refHash[i] = fixedLong("prefix hash");
              keys = blocks - ref;
            }
            if ((long) keys * 8 > remaining()) {
              throw new SyncFormatException("record " + r + " declares " + keys + " hashes but only "
                  + remaining() + " bytes remain");
            }
            int offset = f.addKeys(keys);
            for (int k = 0; k < keys; k++) {
              f.keys[offset + k] = fixedLong("hash");
            }
            f.keyOffset[i] = offset;
            f.keyCount[i] = keys;
            if (noted) {
              need(1, "new-prefix flag");
              int flag = b[pos++];
              if (flag != 0 && flag != 1) {
                throw new SyncFormatException("record " + r + " has new-prefix flag " + flag + ", not 0 or 1");
              }
              f.newPrefix[i] = flag == 1;
              int warm = count("warm blocks", blocks);
              f.warmBlocks[i] = warm;
              if (warm > 0) {
                f.warmKey[i] = fixedLong("warm key");
              }
            }
          }
          case Frame.FIRST_TOKEN, Frame.CLOSE -> { }
          default -> throw new SyncFormatException("unknown record tag " + tag + " in record " + r);
        }
      }
    }

    int remaining() {
      return b.length - pos;
    }

    /** Skips {@code n} bytes already checked by {@link #need}. */
    void skip(int n) {
      need(n, "header");
      pos += n;
    }

    void need(int n, String what) {
      if (b.length - pos < n) {
        throw new SyncFormatException("frame truncated in " + what + " at byte " + pos + " of " + b.length);
      }
    }

    long varint(String what) {
      long v = 0;
      for (int shift = 0; shift < 64; shift += 7) {
        need(1, what);
        byte x = b[pos++];
        if (shift == 63 && (x & 0xFE) != 0) {
          throw new SyncFormatException("varint overflow in " + what);
        }
        v |= (long) (x & 0x7F) << shift;
        if (x >= 0) {
          return v;
        }
      }
      throw new SyncFormatException("varint longer than 10 bytes in " + what);
    }

    int count(String what, int max) {
      long v = varint(what);
      if (v < 0 || v > max) {
        throw new SyncFormatException(what + " " + Long.toUnsignedString(v) + " exceeds " + max);
      }
      return (int) v;
    }

    long fixedLong(String what) {
      need(8, what);
      long v = 0;
      for (int i = 0; i < 8; i++) {
        v = (v << 8) | (b[pos++] & 0xFF);
      }
      return v;
    }

    String string(String what) {
      int len = count(what + " length", MAX_NAME_BYTES);
      need(len, what);
      CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
      try {
        CharBuffer chars = decoder.decode(ByteBuffer.wrap(b, pos, len));
        pos += len;
        return chars.toString();
      } catch (CharacterCodingException e) {
        throw new SyncFormatException(what + " is not valid UTF-8");
      }
    }

    private static String hex(byte x) {
      return String.format("%02x", x & 0xFF);
    }
  }
}
