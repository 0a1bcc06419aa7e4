package io.kvroute.events.zmq;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A minimal msgpack writer into a growable byte array, choosing encodings the way Python's msgspec does (minimal
 * width; the unsigned family for every non-negative integer); not thread-safe.
 */
final class MsgpackWriter {
  private byte[] buf;
  private int size;

  MsgpackWriter(int initialCapacity) {
    buf = new byte[Math.max(16, initialCapacity)];
  }

  byte[] toByteArray() {
    return Arrays.copyOf(buf, size);
  }

  private void ensure(int more) {
    if (size + more > buf.length) {
      buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
    }
  }

  private void put(int b) {
    ensure(1);
    buf[size++] = (byte) b;
  }

  private void putBE(long v, int bytes) {
    ensure(bytes);
    for (int i = bytes - 1; i >= 0; i--) {
      buf[size++] = (byte) (v >>> (8 * i));
    }
  }

  void writeNil() {
    put(0xC0);
  }

  void writeArrayHeader(int n) {
    if (n < 16) {
      put(0x90 | n);
    } else if (n < 65536) {
      put(0xDC);
      putBE(n, 2);
    } else {
      put(0xDD);
      putBE(n, 4);
    }
  }

  void writeMapHeader(int n) {
    if (n < 16) {
      put(0x80 | n);
    } else if (n < 65536) {
      put(0xDE);
      putBE(n, 2);
    } else {
      put(0xDF);
      putBE(n, 4);
    }
  }

  /** Writes a signed value: the unsigned family when non-negative, the signed family otherwise. */
  void writeInt(long v) {
    if (v >= 0) {
      writeUnsigned(v);
    } else if (v >= -32) {
      put((int) v & 0xFF);
    } else if (v >= Byte.MIN_VALUE) {
      put(0xD0);
      putBE(v, 1);
    } else if (v >= Short.MIN_VALUE) {
      put(0xD1);
      putBE(v, 2);
    } else if (v >= Integer.MIN_VALUE) {
      put(0xD2);
      putBE(v, 4);
    } else {
      put(0xD3);
      putBE(v, 8);
    }
  }

  /** Writes {@code v} read as an unsigned 64-bit value. */
  void writeUnsigned(long v) {
    if (v < 0) {
      put(0xCF);
      putBE(v, 8);
    } else if (v < 128) {
      put((int) v);
    } else if (v < 256) {
      put(0xCC);
      putBE(v, 1);
    } else if (v < 65536) {
      put(0xCD);
      putBE(v, 2);
    } else if (v < 4294967296L) {
      put(0xCE);
      putBE(v, 4);
    } else {
      put(0xCF);
      putBE(v, 8);
    }
  }

  void writeDouble(double v) {
    put(0xCB);
    putBE(Double.doubleToRawLongBits(v), 8);
  }

  void writeString(String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    int n = bytes.length;
    if (n < 32) {
      put(0xA0 | n);
    } else if (n < 256) {
      put(0xD9);
      putBE(n, 1);
    } else if (n < 65536) {
      put(0xDA);
      putBE(n, 2);
    } else {
      put(0xDB);
      putBE(n, 4);
    }
    ensure(n);
    System.arraycopy(bytes, 0, buf, size, n);
    size += n;
  }

  void writeBinary(byte[] bytes) {
    int n = bytes.length;
    if (n < 256) {
      put(0xC4);
      putBE(n, 1);
    } else if (n < 65536) {
      put(0xC5);
      putBE(n, 2);
    } else {
      put(0xC6);
      putBE(n, 4);
    }
    ensure(n);
    System.arraycopy(bytes, 0, buf, size, n);
    size += n;
  }
}
