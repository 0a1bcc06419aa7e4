package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.WorkerId;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Encodes seeded random frames, decodes them and compares with the generating model; corrupts valid frames and
 * checks that the decoder rejects them with {@link SyncFormatException} and nothing else. Hand-built byte strings
 * (written with an independent encoder below, not with {@link FrameWriter}) pin the layout.
 */
class FrameCodecPropertyTest {
  /** One generated record: the model the decoded frame must match. */
  record Rec(byte tag, long id, WorkerId worker, long prefill, int blocks, long[] keys, byte note, int warm,
      long warmKey, int ref) {
    Rec(byte tag, long id, WorkerId worker, long prefill, int blocks, long[] keys, byte note, int warm,
        long warmKey) {
      this(tag, id, worker, prefill, blocks, keys, note, warm, warmKey, 0);
    }

    Rec(byte tag, long id, WorkerId worker, long prefill, int blocks, long[] keys) {
      this(tag, id, worker, prefill, blocks, keys, DeltaRing.NO_NOTE, 0, 0);
    }
  }

  /** Appends {@code r} to {@code writer}, a booking with its note. */
  static void write(FrameWriter writer, Rec r) {
    switch (r.tag) {
      case Frame.BOOK -> writer.book(r.id, r.worker, r.prefill, r.blocks, r.keys, r.keys.length, r.note, r.warm,
          r.warmKey);
      case Frame.RENEW -> writer.renew(r.id, r.worker, r.prefill, r.keys, r.keys.length, r.ref, r.note, r.warm,
          r.warmKey);
      case Frame.BOOK_PREDICTED -> writer.bookPredicted(r.id, r.worker, r.prefill, r.keys, r.keys.length, r.note,
          r.warm, r.warmKey);
      case Frame.FIRST_TOKEN -> writer.firstToken(r.id);
      default -> writer.close(r.id);
    }
  }

  /** Whether a record of this tag books load (and names a worker). */
  static boolean books(byte tag) {
    return tag == Frame.BOOK || tag == Frame.BOOK_PREDICTED || tag == Frame.RENEW;
  }

  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 40).mapToObj(seed -> Arguments.of(seed));
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void randomFramesRoundTrip(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    FrameWriter writer = new FrameWriter();
    Frame frame = new Frame();
    for (int round = 0; round < 5; round++) { // the writer is reused across frames
      List<Rec> model = randomRecords(random);
      for (Rec r : model) {
        write(writer, r);
      }
      boolean snapshot = random.nextBoolean();
      String replica = "gw-" + random.nextInt(1000) + (random.nextBoolean() ? "-é" : "");
      long instance = random.nextLong();
      long seq = random.nextLong(0, Long.MAX_VALUE);
      long snapshotId = random.nextLong(0, 1L << 40);
      int part = random.nextInt(0, 100);
      boolean last = random.nextBoolean();
      int blockSize = 1 + random.nextInt(64);
      byte[] bytes = writer.finish(snapshot ? Frame.SNAPSHOT : Frame.DELTAS, replica, instance, seq, blockSize,
          snapshotId, part, last);
      assertEquals(0, writer.records(), "finish resets the writer");

      FrameCodec.decode(bytes, frame);
      assertEquals(snapshot ? Frame.SNAPSHOT : Frame.DELTAS, frame.kind);
      assertEquals(replica, frame.replica);
      assertEquals(instance, frame.instance);
      assertEquals(seq, frame.seq);
      assertEquals(blockSize, frame.blockSize);
      if (snapshot) {
        assertEquals(snapshotId, frame.snapshotId);
        assertEquals(part, frame.part);
        assertEquals(last, frame.lastPart);
      }
      assertEquals(model.size(), frame.recordCount, "records");
      for (int i = 0; i < model.size(); i++) {
        Rec r = model.get(i);
        String at = "seed " + seed + " round " + round + " record " + i;
        assertEquals(r.tag, frame.tags[i], at);
        assertEquals(r.id, frame.ids[i], at);
        if (books(r.tag)) {
          assertEquals(r.worker, frame.worker(i), at);
          assertEquals(r.prefill, frame.prefill[i], at);
          assertEquals(r.blocks, frame.blocks[i], at);
          // A renewal carries its prefix's length and last hash, then the hashes after it.
          long[] sent = r.tag == Frame.RENEW ? Arrays.copyOfRange(r.keys, r.ref, r.keys.length) : r.keys;
          assertArrayEquals(sent, Arrays.copyOfRange(frame.keys, frame.keyOffset[i],
              frame.keyOffset[i] + frame.keyCount[i]), at);
          assertEquals(r.tag == Frame.RENEW ? r.ref : 0, frame.refBlocks[i], at + " prefix blocks");
          assertEquals(r.tag == Frame.RENEW ? r.keys[r.ref - 1] : 0, frame.refHash[i], at + " prefix hash");
          assertEquals(r.note != DeltaRing.NO_NOTE, frame.noted[i], at + " noted");
          assertEquals(r.note == DeltaRing.NOTED_NEW_PREFIX, frame.newPrefix[i], at + " new prefix");
          int warm = r.note == DeltaRing.NO_NOTE ? 0 : r.warm; // without a note nothing of it is sent
          assertEquals(warm, frame.warmBlocks[i], at + " warm blocks");
          assertEquals(warm > 0 ? r.warmKey : 0, frame.warmKey[i], at + " warm key");
        } else {
          assertFalse(frame.noted[i], at + " a release has no note");
        }
      }
      // Each distinct worker named once per frame: the table is no larger than the distinct workers booked.
      long distinct = model.stream().filter(r -> books(r.tag)).map(Rec::worker).distinct().count();
      assertEquals(distinct, frame.workers.length);
    }
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void everyTruncationIsRejected(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    byte[] bytes = randomFrame(random);
    Frame frame = new Frame();
    // Every prefix of a short frame; for a long one the first and last 64 and 200 random lengths in between.
    int[] lengths = bytes.length <= 512 ? java.util.stream.IntStream.range(0, bytes.length).toArray()
        : java.util.stream.IntStream.concat(java.util.stream.IntStream.concat(
            java.util.stream.IntStream.range(0, 64), java.util.stream.IntStream.range(bytes.length - 64, bytes.length)),
            random.ints(200, 64, bytes.length - 64)).toArray();
    for (int len : lengths) {
      byte[] cut = Arrays.copyOf(bytes, len);
      assertThrows(SyncFormatException.class, () -> FrameCodec.decode(cut, frame), "prefix of " + len + " bytes");
    }
    byte[] longer = Arrays.copyOf(bytes, bytes.length + 1 + random.nextInt(8));
    SyncFormatException e = assertThrows(SyncFormatException.class, () -> FrameCodec.decode(longer, frame));
    assertTrue(e.getMessage().contains("trailing"), e.getMessage());
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void corruptedFramesFailOnlyWithTheFormatException(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    Frame frame = new Frame();
    for (int trial = 0; trial < 200; trial++) {
      byte[] bytes = randomFrame(random);
      int flips = 1 + random.nextInt(4);
      for (int f = 0; f < flips; f++) {
        bytes[random.nextInt(bytes.length)] ^= (byte) (1 + random.nextInt(255));
      }
      try {
        FrameCodec.decode(bytes, frame);
        // Accepted: then it must be internally consistent.
        assertTrue(frame.recordCount <= bytes.length / 2, "records bounded by the frame length");
        for (int i = 0; i < frame.recordCount; i++) {
          assertTrue(frame.ids[i] >= 0, "ids are never negative");
          if (books(frame.tags[i])) {
            assertTrue(frame.workerIndex[i] >= 0 && frame.workerIndex[i] < frame.workers.length);
            assertTrue(frame.keyCount[i] <= frame.blocks[i]);
            assertTrue(frame.tags[i] != Frame.RENEW
                || frame.refBlocks[i] >= 1 && frame.refBlocks[i] + frame.keyCount[i] == frame.blocks[i]);
          }
        }
      } catch (SyncFormatException expected) {
        // rejected as a whole
      } catch (RuntimeException e) {
        fail("seed " + seed + " trial " + trial + ": decoder threw " + e, e);
      }
    }
  }

  @Test
  void layoutMatchesAnIndependentEncoding() {
    // DELTAS from "a", instance 0x0102030405060708, seq 300, one worker "w" rank 2, base id 1000, three records:
    // BOOK id 1000 on w, 37 prefill tokens, 9 blocks, keys {7, -1}; FIRST_TOKEN id 998; CLOSE id 1001.
    Bytes x = new Bytes().raw('k', 'l', 3, 0).str("a").raw(1, 2, 3, 4, 5, 6, 7, 8).raw(0xAC, 0x02) // seq 300
        .raw(16) // block size
        .raw(1).str("w").raw(2) // workers
        .raw(0xE8, 0x07) // base 1000
        .raw(3) // records
        .raw(1, 0, 0, 37, 9, 2).fixed(7).fixed(-1)
        .raw(3, 3) // zigzag(-2) = 3
        .raw(4, 2); // zigzag(1) = 2
    FrameWriter writer = new FrameWriter();
    WorkerId w = new WorkerId("w", 2);
    writer.book(1000, w, 37, 9, new long[] {7, -1}, 2);
    writer.firstToken(998);
    writer.close(1001);
    assertArrayEquals(x.toArray(), writer.finish(Frame.DELTAS, "a", 0x0102030405060708L, 300, 16, 0, 0, false));

    // A noted BOOK (tag 0x11): the same record, then new prefix 1, 3 warm blocks, warm key 5; a noted BOOK_PREDICTED
    // (0x12) of 1 block with no warm prefix: flag 0, 0 blocks, no key.
    Bytes noted = new Bytes().raw('k', 'l', 3, 0).str("a").fixed(9).raw(1).raw(16).raw(1).str("w").raw(2).raw(10)
        .raw(2)
        .raw(0x11, 0, 0, 37, 9, 2).fixed(7).fixed(-1).raw(1, 3).fixed(5)
        .raw(0x12, 2, 0, 4, 1).fixed(8).raw(0, 0);
    writer.book(10, w, 37, 9, new long[] {7, -1}, 2, DeltaRing.NOTED_NEW_PREFIX, 3, 5);
    writer.bookPredicted(11, w, 4, new long[] {8}, 1, DeltaRing.NOTED, 0, 99);
    assertArrayEquals(noted.toArray(), writer.finish(Frame.DELTAS, "a", 9, 1, 16, 0, 0, false));

    // A RENEW (tag 5) of 4 hashes {1, 2, 3, 4} whose first 2 are a prefix peers hold: id 20, w, 37 prefill
    // tokens, 4 blocks, prefix 2 blocks ending at hash 2, then hashes 3 and 4; a noted one (0x15) of the same whole
    // (prefix 4 blocks, nothing after it) ends with the note as a noted BOOK does.
    Bytes renew = new Bytes().raw('k', 'l', 3, 0).str("a").fixed(9).raw(2).raw(16).raw(1).str("w").raw(2).raw(20)
        .raw(2)
        .raw(5, 0, 0, 37, 4, 2).fixed(2).fixed(3).fixed(4)
        .raw(0x15, 2, 0, 37, 4, 4).fixed(4).raw(0, 1).fixed(6);
    long[] four = {1, 2, 3, 4};
    writer.renew(20, w, 37, four, 4, 2, DeltaRing.NO_NOTE, 0, 0);
    writer.renew(21, w, 37, four, 4, 4, DeltaRing.NOTED, 1, 6);
    byte[] renewals = writer.finish(Frame.DELTAS, "a", 9, 2, 16, 0, 0, false);
    assertArrayEquals(renew.toArray(), renewals);
    Frame renewed = new Frame();
    FrameCodec.decode(renewals, renewed);
    assertEquals(Frame.RENEW, renewed.tags[0]);
    assertFalse(renewed.noted[0]);
    assertEquals(2, renewed.refBlocks[0]);
    assertEquals(2, renewed.refHash[0]);
    assertEquals(2, renewed.keyCount[0]);
    assertEquals(Frame.RENEW, renewed.tags[1]);
    assertTrue(renewed.noted[1]);
    assertEquals(4, renewed.refBlocks[1]);
    assertEquals(0, renewed.keyCount[1]);
    assertEquals(1, renewed.warmBlocks[1]);
    assertEquals(6, renewed.warmKey[1]);
    // A prefix longer than the booking, or empty, is refused.
    assertThrows(IllegalArgumentException.class, () -> writer.renew(22, w, 0, four, 4, 5, DeltaRing.NO_NOTE, 0, 0));
    assertThrows(IllegalArgumentException.class, () -> writer.renew(22, w, 0, four, 4, 0, DeltaRing.NO_NOTE, 0, 0));
    writer.reset();

    // A version 2 frame (notes, no renewals) is still read.
    Bytes v2 = new Bytes().raw('k', 'l', 2, 0).str("a").fixed(9).raw(1).raw(16).raw(1).str("w").raw(2).raw(10)
        .raw(1).raw(0x11, 0, 0, 37, 9, 2).fixed(7).fixed(-1).raw(1, 3).fixed(5);
    Frame second = new Frame();
    FrameCodec.decode(v2.toArray(), second);
    assertEquals(1, second.recordCount);
    assertEquals(Frame.BOOK, second.tags[0]);
    assertTrue(second.noted[0]);
    assertTrue(second.newPrefix[0]);
    assertEquals(3, second.warmBlocks[0]);

    // A version 1 frame (no notes) is still read.
    Bytes v1 = new Bytes().raw('k', 'l', 1, 0).str("a").fixed(9).raw(1).raw(16).raw(1).str("w").raw(2).raw(10)
        .raw(1).raw(1, 0, 0, 37, 9, 2).fixed(7).fixed(-1);
    Frame old = new Frame();
    FrameCodec.decode(v1.toArray(), old);
    assertEquals(1, old.recordCount);
    assertEquals(Frame.BOOK, old.tags[0]);
    assertFalse(old.noted[0]);
    assertEquals(9, old.blocks[0]);

    byte[] request = FrameCodec.control(Frame.SNAPSHOT_REQUEST, "b", -1, 5, "a");
    assertArrayEquals(new Bytes().raw('k', 'l', 3, 2).str("b").fixed(-1).raw(5).str("a").toArray(), request);
    Frame frame = new Frame();
    FrameCodec.decode(request, frame);
    assertEquals("a", frame.target);
    assertEquals(Frame.SNAPSHOT_REQUEST, frame.kind);
  }

  @Test
  void malformedFramesNameTheirFault() {
    Frame f = new Frame();
    assertFault(new Bytes().raw('x', 'l', 1, 0), "magic", f);
    assertFault(new Bytes().raw('k', 'l', 9, 0), "version", f);
    assertFault(new Bytes().raw('k', 'l', 1, 7).str("a").fixed(0).raw(0), "kind", f);
    assertFault(new Bytes().raw('k', 'l', 1, 3).raw(0).fixed(0).raw(0), "empty replica", f);
    assertFault(new Bytes().raw('k', 'l', 1, 3).raw(2, 0xC3, 0x28).fixed(0).raw(0), "UTF-8", f);
    Bytes overlong = new Bytes().raw('k', 'l', 1, 3).str("a").fixed(0);
    for (int i = 0; i < 10; i++) {
      overlong.raw(0xFF);
    }
    assertFault(overlong.raw(1), "varint", f);
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(0), "block size 0", f);
    // A worker index outside the table.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(1, 0, 1, 0, 0, 0), "names worker 1", f);
    // A note in a version 1 frame: an unknown tag there.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(0x11, 0, 0, 0, 0, 0).raw(0, 0), "tag 17", f);
    // A renewal in a version 1 or 2 frame: an unknown tag there, with a message saying when renewals came.
    for (int version = 1; version <= 2; version++) {
      assertFault(new Bytes().raw('k', 'l', version, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0)
          .raw(0).raw(1).raw(5, 0, 0, 0, 1, 1).fixed(1), "renewals came with version 3", f);
    }
    // A renewal of an empty prefix, and one whose prefix is longer than the booking.
    assertFault(new Bytes().raw('k', 'l', 3, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(5, 0, 0, 0, 1, 0).fixed(1), "empty prefix", f);
    assertFault(new Bytes().raw('k', 'l', 3, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(5, 0, 0, 0, 1, 2).fixed(1), "prefix blocks", f);
    // A note's flag other than 0 or 1, and more warm blocks than the booking has.
    assertFault(new Bytes().raw('k', 'l', 2, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(0x11, 0, 0, 0, 0, 0).raw(2, 0), "new-prefix flag", f);
    assertFault(new Bytes().raw('k', 'l', 2, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(0x11, 0, 0, 0, 2, 0).raw(0, 3).fixed(1), "warm blocks", f);
    // An unknown record tag.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(0).raw(0).raw(1).raw(9, 0),
        "tag 9", f);
    // A record claiming a million hashes in a few bytes: rejected before any allocation of that size.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(2, 0, 0, 0).raw(0x80, 0x80, 0x40), "declares", f);
    // More keys than blocks.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(1).str("w").raw(0).raw(0).raw(1)
        .raw(1, 0, 0, 0, 1, 2).fixed(1).fixed(2), "key count", f);
    // A record count the frame cannot hold.
    assertFault(new Bytes().raw('k', 'l', 1, 0).str("a").fixed(0).raw(1).raw(16).raw(0).raw(0).raw(100), "record count", f);
  }

  @Test
  void writerRejectsBadArguments() {
    FrameWriter w = new FrameWriter();
    WorkerId id = WorkerId.of("w");
    assertThrows(IllegalArgumentException.class, () -> w.book(-1, id, 0, 1, new long[1], 1));
    assertThrows(IllegalArgumentException.class, () -> w.book(1, id, -5, 1, new long[1], 1));
    assertThrows(IllegalArgumentException.class, () -> w.book(1, id, 0, 1, new long[2], 2));
    assertThrows(IllegalArgumentException.class, () -> w.bookPredicted(1, id, 0, new long[1], FrameCodec.MAX_BLOCKS + 1));
    assertThrows(IllegalArgumentException.class, () -> w.close(-2));
    assertThrows(IllegalArgumentException.class,
        () -> w.book(1, WorkerId.of("x".repeat(FrameCodec.MAX_NAME_BYTES + 1)), 0, 0, new long[0], 0));
  }

  private static void assertFault(Bytes bytes, String expected, Frame frame) {
    SyncFormatException e = assertThrows(SyncFormatException.class, () -> FrameCodec.decode(bytes.toArray(), frame));
    assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
  }

  static byte[] randomFrame(SplittableRandom random) {
    FrameWriter writer = new FrameWriter();
    for (Rec r : randomRecords(random)) {
      write(writer, r);
    }
    return writer.finish(random.nextBoolean() ? Frame.SNAPSHOT : Frame.DELTAS, "r" + random.nextInt(100),
        random.nextLong(), random.nextLong(0, 1L << 50), 16, random.nextLong(0, 1000), random.nextInt(5),
        random.nextBoolean());
  }

  static List<Rec> randomRecords(SplittableRandom random) {
    int n = random.nextInt(0, 40);
    List<WorkerId> workers = new ArrayList<>();
    int workerCount = 1 + random.nextInt(8);
    for (int i = 0; i < workerCount; i++) {
      workers.add(new WorkerId("worker-" + i + (random.nextInt(4) == 0 ? "-\u00fc" : ""), random.nextInt(3)));
    }
    long nextId = random.nextLong(0, 1L << (1 + random.nextInt(60)));
    List<Rec> records = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int kind = random.nextInt(5);
      WorkerId w = workers.get(random.nextInt(workers.size()));
      if (kind == 4) {
        int blocks = random.nextInt(1, 200);
        records.add(new Rec(Frame.RENEW, nextId++, w, random.nextLong(0, 100_000), blocks,
            random.longs(blocks).toArray(), randomNote(random), random.nextInt(blocks + 1), random.nextLong(),
            1 + random.nextInt(blocks)));
      } else if (kind == 0) {
        int blocks = random.nextInt(0, 300);
        long[] keys = random.longs(random.nextInt(0, blocks + 1)).toArray();
        records.add(new Rec(Frame.BOOK, nextId++, w, random.nextLong(0, 1L << 40), blocks, keys,
            randomNote(random), random.nextInt(blocks + 1), random.nextLong()));
      } else if (kind == 1) {
        int blocks = random.nextInt(0, 200);
        records.add(new Rec(Frame.BOOK_PREDICTED, nextId++, w, random.nextLong(0, 100_000), blocks,
            random.longs(blocks).toArray(), randomNote(random), random.nextInt(blocks + 1), random.nextLong()));
      } else {
        long id = Math.max(0, nextId - 1 - random.nextInt(500));
        records.add(new Rec(kind == 2 ? Frame.FIRST_TOKEN : Frame.CLOSE, id, w, 0, 0, new long[0]));
      }
    }
    return records;
  }

  private static byte randomNote(SplittableRandom random) {
    return new byte[] {DeltaRing.NO_NOTE, DeltaRing.NOTED, DeltaRing.NOTED_NEW_PREFIX}[random.nextInt(3)];
  }

  /** An independent little byte-string builder for hand-written frames. */
  static final class Bytes {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    Bytes raw(int... values) {
      for (int v : values) {
        out.write(v);
      }
      return this;
    }

    Bytes str(String s) {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      out.write(b.length);
      out.writeBytes(b);
      return this;
    }

    Bytes fixed(long v) {
      for (int shift = 56; shift >= 0; shift -= 8) {
        out.write((int) (v >>> shift) & 0xFF);
      }
      return this;
    }

    byte[] toArray() {
      return out.toByteArray();
    }
  }
}
