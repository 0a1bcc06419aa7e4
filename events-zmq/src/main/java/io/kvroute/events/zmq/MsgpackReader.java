package io.kvroute.events.zmq;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A minimal msgpack reader over a byte array; not thread-safe (one instance per payload).
 *
 * <p>Every declared length is checked against the bytes that remain before anything is allocated, so a header that
 * claims a huge array or string fails fast instead of allocating: an array of {@code n} elements needs at least
 * {@code n} bytes, a map of {@code n} entries at least {@code 2n}. Skipping is iterative, so deeply nested input
 * cannot overflow the stack.
 */
final class MsgpackReader {
  static final int NIL = 0;
  static final int BOOLEAN = 1;
  static final int INTEGER = 2;
  static final int FLOAT = 3;
  static final int STRING = 4;
  static final int BINARY = 5;
  static final int ARRAY = 6;
  static final int MAP = 7;
  static final int EXTENSION = 8;
  static final int NEVER_USED = 9;

  private static final VarHandle BIG_ENDIAN_INT = MethodHandles.byteArrayViewVarHandle(int[].class,
      ByteOrder.BIG_ENDIAN);
  private static final VarHandle BIG_ENDIAN_LONG = MethodHandles.byteArrayViewVarHandle(long[].class,
      ByteOrder.BIG_ENDIAN);
  private static final VarHandle LITTLE_ENDIAN_LONG = MethodHandles.byteArrayViewVarHandle(long[].class,
      ByteOrder.LITTLE_ENDIAN);
  // Per head byte, how readUint32OrMinusOne decodes the value it starts from the four bytes after it: bytes taken
  // (bits 40-43; 0 when the head starts no such value), the right shift (bits 32-37), the mask (bits 0-31) and, for
  // a positive fixint, the value itself (bits 48-55).
  private static final long[] UINT32_DECODE = new long[256];

  static {
    for (int head = 0; head <= 0x7F; head++) {
      UINT32_DECODE[head] = (1L << 40) | ((long) head << 48);
    }
    UINT32_DECODE[0xCC] = (2L << 40) | (24L << 32) | 0xFFL;
    UINT32_DECODE[0xCD] = (3L << 40) | (16L << 32) | 0xFFFFL;
    UINT32_DECODE[0xCE] = (5L << 40) | 0xFFFFFFFFL;
  }

  private final byte[] buf;
  private final int limit;
  private int pos;

  MsgpackReader(byte[] buf, int offset, int length) {
    if (offset < 0 || length < 0 || offset > buf.length - length) {
      throw new IndexOutOfBoundsException("offset " + offset + " length " + length + " buffer " + buf.length);
    }
    this.buf = buf;
    this.pos = offset;
    this.limit = offset + length;
  }

  int position() {
    return pos;
  }

  void position(int position) {
    this.pos = position;
  }

  int remaining() {
    return limit - pos;
  }

  static KvEventFormatException error(String message) {
    return new KvEventFormatException(message);
  }

  private void require(long bytes) {
    if (bytes > limit - pos) {
      throw error("truncated payload: need " + bytes + " bytes at offset " + pos + " but " + (limit - pos)
          + " remain");
    }
  }

  private int u8() {
    require(1);
    return buf[pos++] & 0xFF;
  }

  private int u16() {
    require(2);
    int v = ((buf[pos] & 0xFF) << 8) | (buf[pos + 1] & 0xFF);
    pos += 2;
    return v;
  }

  private long u32() {
    require(4);
    long v = ((buf[pos] & 0xFFL) << 24) | ((buf[pos + 1] & 0xFFL) << 16) | ((buf[pos + 2] & 0xFFL) << 8)
        | (buf[pos + 3] & 0xFFL);
    pos += 4;
    return v;
  }

  private long u64() {
    require(8);
    long v = (long) BIG_ENDIAN_LONG.get(buf, pos);
    pos += 8;
    return v;
  }

  /** The type of the next value, without consuming it. */
  int peekType() {
    require(1);
    return typeOf(buf[pos] & 0xFF);
  }

  private static int typeOf(int b) {
    if (b <= 0x7F || b >= 0xE0) {
      return INTEGER;
    }
    if (b <= 0x8F) {
      return MAP;
    }
    if (b <= 0x9F) {
      return ARRAY;
    }
    if (b <= 0xBF) {
      return STRING;
    }
    switch (b) {
      case 0xC0:
        return NIL;
      case 0xC1:
        return NEVER_USED;
      case 0xC2:
      case 0xC3:
        return BOOLEAN;
      case 0xC4:
      case 0xC5:
      case 0xC6:
        return BINARY;
      case 0xC7:
      case 0xC8:
      case 0xC9:
      case 0xD4:
      case 0xD5:
      case 0xD6:
      case 0xD7:
      case 0xD8:
        return EXTENSION;
      case 0xCA:
      case 0xCB:
        return FLOAT;
      case 0xCC:
      case 0xCD:
      case 0xCE:
      case 0xCF:
      case 0xD0:
      case 0xD1:
      case 0xD2:
      case 0xD3:
        return INTEGER;
      case 0xD9:
      case 0xDA:
      case 0xDB:
        return STRING;
      case 0xDC:
      case 0xDD:
        return ARRAY;
      default: // 0xDE, 0xDF
        return MAP;
    }
  }

  /** Consumes a nil and returns true, or returns false and consumes nothing. */
  boolean tryReadNil() {
    require(1);
    if ((buf[pos] & 0xFF) == 0xC0) {
      pos++;
      return true;
    }
    return false;
  }

  /**
   * Reads an integer of any width. Unsigned 64-bit values keep their bit pattern (values of 2^63 and above come back
   * negative); use {@link #lastIntegerWasLargeUnsigned()} to tell them from negative values.
   */
  long readLong() {
    int b = u8();
    largeUnsigned = false;
    if (b <= 0x7F) {
      return b;
    }
    if (b >= 0xE0) {
      return (byte) b;
    }
    switch (b) {
      case 0xCC:
        return u8();
      case 0xCD:
        return u16();
      case 0xCE:
        return u32();
      case 0xCF:
        long v = u64();
        largeUnsigned = v < 0;
        return v;
      case 0xD0:
        return (byte) u8();
      case 0xD1:
        return (short) u16();
      case 0xD2:
        return (int) u32();
      case 0xD3:
        return u64();
      default:
        pos--;
        throw error("expected an integer but found " + describe(b) + " at offset " + pos);
    }
  }

  private boolean largeUnsigned;

  boolean lastIntegerWasLargeUnsigned() {
    return largeUnsigned;
  }

  /**
   * The next value if it is an unsigned integer in one of msgpack's encodings up to 32 bits (positive fixint,
   * uint 8, 16 or 32), consumed; otherwise -1 and nothing consumed (any other value, or too few bytes left: the
   * general {@link #readLong} then reads it, or reports it). The token ids of a stored block are almost always
   * such values, so their loop takes this path: with at least 5 bytes left, one table lookup on the head byte and
   * one 4-byte read, whatever the encoding.
   */
  long readUint32OrMinusOne() {
    int p = pos;
    int left = limit - p;
    byte[] b = buf;
    if (left >= 5) {
      // Without a branch on the encoding (token ids mix uint 16 and uint 32 at random, so that branch would be
      // mispredicted about every other token): the four bytes after the head, shifted and masked as it says.
      long decode = UINT32_DECODE[b[p] & 0xFF];
      int taken = (int) (decode >>> 40) & 0xF;
      if (taken == 0) {
        return -1;
      }
      long word = ((int) BIG_ENDIAN_INT.get(b, p + 1)) & 0xFFFFFFFFL;
      pos = p + taken;
      return ((word >>> (decode >>> 32 & 63)) & (decode & 0xFFFFFFFFL)) | (decode >>> 48 & 0xFF);
    }
    if (left <= 0) {
      return -1;
    }
    int head = b[p] & 0xFF;
    if (head <= 0x7F) {
      pos = p + 1;
      return head;
    }
    if (head == 0xCE) {
      if (left < 5) {
        return -1;
      }
      pos = p + 5;
      return ((b[p + 1] & 0xFFL) << 24) | ((b[p + 2] & 0xFF) << 16) | ((b[p + 3] & 0xFF) << 8) | (b[p + 4] & 0xFF);
    }
    if (head == 0xCD) {
      if (left < 3) {
        return -1;
      }
      pos = p + 3;
      return ((b[p + 1] & 0xFF) << 8) | (b[p + 2] & 0xFF);
    }
    if (head == 0xCC) {
      if (left < 2) {
        return -1;
      }
      pos = p + 2;
      return b[p + 1] & 0xFF;
    }
    return -1;
  }

  /**
   * Appends to {@code into} the next values, at most {@code max}, while each is a plain unsigned integer below 2^32
   * (a positive fixint or uint 8, 16 or 32: how an engine writes token ids) and at least 8 bytes remain after it;
   * returns how many it appended. Stops before anything else, leaving it to the value-by-value path.
   *
   * <p>Why a loop of its own: the bytes a value takes follow from its head byte, so each value's position waits for
   * the one before it, a chain of dependent steps per token. Read through {@link #readUint32OrMinusOne} the chain
   * also goes through the {@code pos} field (a store and a load per token). Here the position stays in a local,
   * and the bytes taken are computed from the head ({@code 1 << (head & 3)}, plus 1: 2, 3 and 5 for 0xCC, 0xCD,
   * 0xCE) rather than looked up, so the chain is one byte load and a few register operations per token.
   */
  int readUint32Run(int max, io.kvroute.KvEventColumns into) {
    byte[] b = buf;
    int p = pos;
    int end = limit - Long.BYTES; // each step reads 8 bytes from its head: a value takes at most 5
    int count = 0;
    while (count < max && p <= end) {
      long word = (long) BIG_ENDIAN_LONG.get(b, p);
      int head = (int) (word >>> 56);
      int value;
      int taken;
      if (head <= 0x7F) {
        value = head;
        taken = 1;
      } else if (head - 0xCC <= 2 && head >= 0xCC) {
        taken = (1 << (head & 3)) + 1;
        value = (int) ((word << 8) >>> (72 - 8 * taken));
      } else {
        break;
      }
      into.appendToken(value);
      p += taken;
      count++;
    }
    pos = p;
    return count;
  }

  /**
   * Appends to {@code into} the next values, at most {@code max}, while each is written in 8 bytes (uint 64 or
   * int 64: how an engine writes most block hashes) and fits in the payload; returns how many it appended, its
   * position after the last. Stops before anything else, leaving it to the value-by-value path. The position stays
   * in a local, as in {@link #readUint32Run}.
   */
  int readInt64Run(int max, io.kvroute.KvEventColumns into) {
    byte[] b = buf;
    int p = pos;
    int end = limit - 9;
    int count = 0;
    while (count < max && p <= end) {
      int head = b[p] & 0xFF;
      if (head != 0xCF && head != 0xD3) {
        break;
      }
      into.appendHash((long) BIG_ENDIAN_LONG.get(b, p + 1));
      p += 9;
      count++;
    }
    pos = p;
    return count;
  }

  /** Reads an integer that must lie in {@code [min, max]}. */
  long readLong(long min, long max, String what) {
    int start = pos;
    long v = readLong();
    if (largeUnsigned || v < min || v > max) {
      throw error(what + " out of range at offset " + start + ": "
          + (largeUnsigned ? Long.toUnsignedString(v) : Long.toString(v)));
    }
    return v;
  }

  /** Reads a float or an integer as a double. */
  double readDouble() {
    require(1);
    int b = buf[pos] & 0xFF;
    if (b == 0xCB) {
      pos++;
      return Double.longBitsToDouble(u64());
    }
    if (b == 0xCA) {
      pos++;
      return Float.intBitsToFloat((int) u32());
    }
    if (typeOf(b) == INTEGER) {
      long v = readLong();
      return largeUnsigned ? (v >>> 1) * 2.0 + (v & 1) : (double) v;
    }
    throw error("expected a number but found " + describe(b) + " at offset " + pos);
  }

  /** Reads an array header; the count is guaranteed not to exceed the remaining bytes. */
  int readArrayHeader() {
    int b = u8();
    long n;
    if ((b & 0xF0) == 0x90) {
      n = b & 0x0F;
    } else if (b == 0xDC) {
      n = u16();
    } else if (b == 0xDD) {
      n = u32();
    } else {
      pos--;
      throw error("expected an array but found " + describe(b) + " at offset " + pos);
    }
    if (n > remaining()) {
      throw error("array of " + n + " elements at offset " + pos + " exceeds the " + remaining()
          + " remaining bytes");
    }
    return (int) n;
  }

  /** Reads a map header; the count is guaranteed not to exceed half the remaining bytes. */
  int readMapHeader() {
    int b = u8();
    long n;
    if ((b & 0xF0) == 0x80) {
      n = b & 0x0F;
    } else if (b == 0xDE) {
      n = u16();
    } else if (b == 0xDF) {
      n = u32();
    } else {
      pos--;
      throw error("expected a map but found " + describe(b) + " at offset " + pos);
    }
    if (2 * n > remaining()) {
      throw error("map of " + n + " entries at offset " + pos + " exceeds the " + remaining() + " remaining bytes");
    }
    return (int) n;
  }

  /** Reads a string header and returns its length; the bytes follow at {@link #position()}, all present. */
  int readStringHeader() {
    int b = u8();
    long n;
    if ((b & 0xE0) == 0xA0) {
      n = b & 0x1F;
    } else if (b == 0xD9) {
      n = u8();
    } else if (b == 0xDA) {
      n = u16();
    } else if (b == 0xDB) {
      n = u32();
    } else {
      pos--;
      throw error("expected a string but found " + describe(b) + " at offset " + pos);
    }
    require(n);
    return (int) n;
  }

  String readString() {
    int n = readStringHeader();
    String s = new String(buf, pos, n, StandardCharsets.UTF_8);
    pos += n;
    return s;
  }

  /** Reads a string and returns whether its bytes equal {@code expected}. */
  boolean readStringEquals(byte[] expected) {
    int n = readStringHeader();
    boolean equal = n == expected.length && java.util.Arrays.equals(buf, pos, pos + n, expected, 0, n);
    pos += n;
    return equal;
  }

  /** Reads a binary header and returns its length; the bytes follow at {@link #position()}, all present. */
  int readBinaryHeader() {
    int b = u8();
    long n;
    if (b == 0xC4) {
      n = u8();
    } else if (b == 0xC5) {
      n = u16();
    } else if (b == 0xC6) {
      n = u32();
    } else {
      pos--;
      throw error("expected binary but found " + describe(b) + " at offset " + pos);
    }
    require(n);
    return (int) n;
  }

  /**
   * Whether the {@code key.length} bytes at {@code start} (within the payload) are {@code key}: for keys of 8 bytes
   * or more, 8-byte comparisons (the last one overlapping the one before) instead of a loop over its bytes.
   */
  boolean regionEquals(int start, byte[] key) {
    int len = key.length;
    if (len >= Long.BYTES) {
      byte[] b = buf;
      for (int i = 0; i < len - Long.BYTES; i += Long.BYTES) {
        if ((long) LITTLE_ENDIAN_LONG.get(b, start + i) != (long) LITTLE_ENDIAN_LONG.get(key, i)) {
          return false;
        }
      }
      return (long) LITTLE_ENDIAN_LONG.get(b, start + len - Long.BYTES)
          == (long) LITTLE_ENDIAN_LONG.get(key, len - Long.BYTES);
    }
    for (int i = 0; i < len; i++) {
      if (buf[start + i] != key[i]) {
        return false;
      }
    }
    return true;
  }

  /** The 8 bytes at {@code index} as a big-endian long, wherever the reader is (the caller checks the bounds). */
  long longAt(int index) {
    return (long) BIG_ENDIAN_LONG.get(buf, index);
  }

  byte byteAt(int index) {
    return buf[index];
  }

  void skipBytes(int n) {
    require(n);
    pos += n;
  }

  /** Skips one complete value, however deeply nested, without recursion and without allocating. */
  void skipValue() {
    long pending = 1;
    while (pending > 0) {
      pending--;
      int b = u8();
      if (b <= 0x7F || b >= 0xE0 || b == 0xC0 || b == 0xC2 || b == 0xC3) {
        continue;
      }
      if (b <= 0x8F) {
        pending += 2L * (b & 0x0F);
      } else if (b <= 0x9F) {
        pending += b & 0x0F;
      } else if (b <= 0xBF) {
        skipBytes(b & 0x1F);
      } else {
        switch (b) {
          case 0xC4:
          case 0xD9:
            skipBytes(u8());
            break;
          case 0xC5:
          case 0xDA:
            skipBytes(u16());
            break;
          case 0xC6:
          case 0xDB:
            skipBounded(u32());
            break;
          case 0xC7:
            skipBytes(u8() + 1);
            break;
          case 0xC8:
            skipBytes(u16() + 1);
            break;
          case 0xC9:
            skipBounded(u32() + 1);
            break;
          case 0xCA:
          case 0xCE:
          case 0xD2:
            skipBytes(4);
            break;
          case 0xCB:
          case 0xCF:
          case 0xD3:
            skipBytes(8);
            break;
          case 0xCC:
          case 0xD0:
            skipBytes(1);
            break;
          case 0xCD:
          case 0xD1:
            skipBytes(2);
            break;
          case 0xD4:
            skipBytes(2);
            break;
          case 0xD5:
            skipBytes(3);
            break;
          case 0xD6:
            skipBytes(5);
            break;
          case 0xD7:
            skipBytes(9);
            break;
          case 0xD8:
            skipBytes(17);
            break;
          case 0xDC:
            pending += u16();
            break;
          case 0xDD:
            pending += u32();
            break;
          case 0xDE:
            pending += 2L * u16();
            break;
          case 0xDF:
            pending += 2L * u32();
            break;
          default: // 0xC1
            throw error("invalid msgpack byte 0xc1 at offset " + (pos - 1));
        }
      }
      if (pending > remaining()) {
        throw error("nested values at offset " + pos + " exceed the " + remaining() + " remaining bytes");
      }
    }
  }

  private void skipBounded(long n) {
    require(n);
    pos += (int) n;
  }

  private static String describe(int b) {
    switch (typeOf(b)) {
      case NIL:
        return "nil";
      case BOOLEAN:
        return "a boolean";
      case INTEGER:
        return "an integer";
      case FLOAT:
        return "a float";
      case STRING:
        return "a string";
      case BINARY:
        return "binary";
      case ARRAY:
        return "an array";
      case MAP:
        return "a map";
      case EXTENSION:
        return "an extension";
      default:
        return "the invalid byte 0xc1";
    }
  }
}
