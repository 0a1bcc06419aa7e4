package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link MsgpackReader#readUint32OrMinusOne}, the token loop's fast path, against the general {@link
 * MsgpackReader#readLong}: the same value and position for every unsigned integer below 2^32 in any of its
 * unsigned encodings (minimal or not), and -1 with nothing consumed for everything else, truncated input included.
 */
class MsgpackReaderTest {
  static Stream<Arguments> seeds() {
    return IntStream.range(0, 20).mapToObj(i -> Arguments.of("seed " + (300 + i), 300L + i));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void agreesWithReadLongOnEveryEncoding(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int n = 0; n < 2_000; n++) {
      byte[] value = randomValue(random);
      // Random bytes before the value (the reader starts after them) and 1 to 8 after it: the fast path must stop
      // at the value's end whatever follows, with fewer than 4 bytes after the head as well as more.
      int before = random.nextInt(4);
      int after = 1 + random.nextInt(8);
      byte[] payload = new byte[before + value.length + after];
      for (int i = 0; i < payload.length; i++) {
        payload[i] = (byte) random.nextInt(256);
      }
      System.arraycopy(value, 0, payload, before, value.length);
      MsgpackReader fast = new MsgpackReader(payload, before, payload.length - before);
      long v = fast.readUint32OrMinusOne();
      MsgpackReader general = new MsgpackReader(payload, before, payload.length - before);
      int head = value[0] & 0xFF;
      boolean plain = head <= 0x7F || head == 0xCC || head == 0xCD || head == 0xCE;
      String what = name + ": " + Hex.of(value) + " then " + after + " bytes";
      if (plain) {
        assertEquals(general.readLong(), v, what);
        assertEquals(general.position(), fast.position(), what);
        assertEquals(before + value.length, fast.position(), what);
      } else {
        assertEquals(-1, v, what);
        assertEquals(before, fast.position(), what + ": nothing consumed");
      }
    }
  }

  /**
   * {@link MsgpackReader#readUint32Run}, the columns' token loop, against {@link MsgpackReader#readUint32OrMinusOne}
   * value by value: over a random sequence of values (mostly plain unsigned ones, in any width, now and then
   * something else) and a random bound, it appends exactly the plain values the value-by-value reader reads from
   * the start, stops before the first other value, at the bound or where fewer than 8 bytes remain after a value's
   * head, and leaves the position after the last value it appended.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void aRunReadsWhatValueByValueReads(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int n = 0; n < 500; n++) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      int before = random.nextInt(4);
      for (int i = 0; i < before; i++) {
        bytes.write(random.nextInt(256));
      }
      int values = random.nextInt(40);
      boolean rare = random.nextInt(4) == 0; // sequences with another value now and then
      for (int i = 0; i < values; i++) {
        byte[] value = rare && random.nextInt(10) == 0 ? randomValue(random) : randomValue(random, 4);
        bytes.write(value, 0, value.length);
      }
      for (int i = random.nextInt(10); i > 0; i--) {
        bytes.write(random.nextInt(256));
      }
      byte[] payload = bytes.toByteArray();
      int max = random.nextInt(3) == 0 ? random.nextInt(values + 1) : Integer.MAX_VALUE;
      io.kvroute.KvEventColumns run = new io.kvroute.KvEventColumns();
      MsgpackReader fast = new MsgpackReader(payload, before, payload.length - before);
      int read = fast.readUint32Run(max, run);
      MsgpackReader slow = new MsgpackReader(payload, before, payload.length - before);
      String what = name + ", case " + n + ": " + Hex.of(payload) + ", bound " + max;
      io.kvroute.KvEventColumns expected = new io.kvroute.KvEventColumns();
      int count = 0;
      while (count < max) {
        int at = slow.position();
        if (payload.length - at < Long.BYTES) {
          break;
        }
        long v = slow.readUint32OrMinusOne();
        if (v < 0) {
          break;
        }
        expected.appendToken((int) v);
        count++;
      }
      assertEquals(count, read, what);
      assertEquals(slow.position(), fast.position(), what);
      run.commitStored(false, 0, 1, io.kvroute.StorageTier.GPU, null, null, null, -1);
      expected.commitStored(false, 0, 1, io.kvroute.StorageTier.GPU, null, null, null, -1);
      assertEquals(expected.event(0), run.event(0), what);
    }
  }

  /**
   * {@link MsgpackReader#readInt64Run}, the columns' hash loop, against {@link MsgpackReader#readLong} value by
   * value: over random sequences of integers (mostly 8-byte ones, now and then shorter or something else) and a
   * random bound, it appends exactly the leading 8-byte integers (uint 64 or int 64) that fit, up to the bound,
   * with the values readLong reads, and leaves the position after the last.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void aHashRunReadsWhatValueByValueReads(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int n = 0; n < 500; n++) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      int before = random.nextInt(4);
      for (int i = 0; i < before; i++) {
        bytes.write(random.nextInt(256));
      }
      int values = random.nextInt(20);
      for (int i = 0; i < values; i++) {
        int form = random.nextInt(12);
        byte[] value = form == 0 ? randomValue(random) : be(form % 2 == 0 ? 0xCF : 0xD3, random.nextLong(), 8);
        bytes.write(value, 0, value.length);
      }
      byte[] payload = bytes.toByteArray();
      int cut = payload.length - random.nextInt(Math.min(payload.length - before, 4) + 1); // a truncated last, now and then
      payload = java.util.Arrays.copyOf(payload, cut);
      int max = random.nextInt(3) == 0 ? random.nextInt(values + 1) : Integer.MAX_VALUE;
      io.kvroute.KvEventColumns run = new io.kvroute.KvEventColumns();
      MsgpackReader fast = new MsgpackReader(payload, before, payload.length - before);
      int read = fast.readInt64Run(max, run);
      MsgpackReader slow = new MsgpackReader(payload, before, payload.length - before);
      String what = name + ", case " + n + ": " + Hex.of(payload) + ", bound " + max;
      io.kvroute.KvEventColumns expected = new io.kvroute.KvEventColumns();
      int count = 0;
      while (count < max && payload.length - slow.position() >= 9) {
        int head = payload[slow.position()] & 0xFF;
        if (head != 0xCF && head != 0xD3) {
          break;
        }
        expected.appendHash(slow.readLong());
        count++;
      }
      assertEquals(count, read, what);
      assertEquals(slow.position(), fast.position(), what);
      run.commitRemoved(io.kvroute.StorageTier.GPU, -1);
      expected.commitRemoved(io.kvroute.StorageTier.GPU, -1);
      assertEquals(expected.event(0), run.event(0), what);
    }
  }

  /** The map-key comparison: equal exactly when every byte is, whichever byte differs, at any length and offset. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void regionEqualsComparesEveryByte(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    for (int n = 0; n < 2_000; n++) {
      byte[] key = new byte[random.nextInt(24)];
      for (int i = 0; i < key.length; i++) {
        key[i] = (byte) ('a' + random.nextInt(3)); // a small alphabet: near misses are common
      }
      int before = random.nextInt(5);
      byte[] payload = new byte[before + key.length + random.nextInt(3)];
      System.arraycopy(key, 0, payload, before, key.length);
      boolean differ = key.length > 0 && random.nextBoolean();
      int at = differ ? random.nextInt(key.length) : -1;
      if (differ) {
        payload[before + at] ^= (byte) (1 << random.nextInt(8));
      }
      MsgpackReader r = new MsgpackReader(payload, 0, payload.length);
      assertEquals(!differ, r.regionEquals(before, key), name + ": key " + Hex.of(key) + ", byte " + at + " differs");
    }
  }

  @Test
  void truncatedValuesAreLeftToTheGeneralReader() {
    byte[][] values = {{(byte) 0xCC}, {(byte) 0xCD, 1}, {(byte) 0xCE, 1, 2, 3}, {}};
    for (byte[] value : values) {
      MsgpackReader r = new MsgpackReader(value, 0, value.length);
      assertEquals(-1, r.readUint32OrMinusOne(), Hex.of(value));
      assertEquals(0, r.position());
      assertThrows(KvEventFormatException.class, r::readLong, Hex.of(value));
    }
  }

  /** One msgpack value: an unsigned integer in a random encoding wide enough for it, or something else. */
  private static byte[] randomValue(SplittableRandom random) {
    return randomValue(random, 8);
  }

  /** {@link #randomValue(SplittableRandom)} of the first {@code kinds} kinds: 4 for plain unsigned integers only. */
  private static byte[] randomValue(SplittableRandom random, int kinds) {
    switch (random.nextInt(kinds)) {
      case 0:
        return new byte[] {(byte) random.nextInt(0x80)}; // positive fixint
      case 1:
        return new byte[] {(byte) 0xCC, (byte) random.nextInt(256)};
      case 2:
        return be(0xCD, random.nextInt(1 << 16), 2);
      case 3:
        return be(0xCE, random.nextLong(1L << 32), 4); // minimal or not: small values too
      case 4:
        return be(0xCF, random.nextLong(), 8); // uint 64: not the fast path, even when small
      case 5:
        int k = random.nextInt(4);
        return be(0xD0 + k, random.nextLong(), 1 << k); // int 8, 16, 32 or 64, any sign
      case 6:
        return new byte[] {(byte) (0xE0 + random.nextInt(32))}; // negative fixint
      default:
        int[] others = {0xC0, 0xC2, 0xC3, 0x90, 0x80, 0xA0, 0xCB}; // nil, booleans, array, map, str, float 64
        return new byte[] {(byte) others[random.nextInt(others.length)]};
    }
  }

  private static byte[] be(int head, long v, int bytes) {
    byte[] out = new byte[1 + bytes];
    out[0] = (byte) head;
    for (int i = 0; i < bytes; i++) {
      out[bytes - i] = (byte) (v >>> (8 * i));
    }
    return out;
  }
}
