package io.kvroute.tokenizers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The classes the pre-tokenizer regex distinguishes ({@code \p{L}}, {@code \p{N}}, other, and unassigned), for
 * every code point as of Unicode 13.0, from a table shipped with the module rather than the JVM's own data, so that
 * the pure-Java encoder classifies the same on every JVM; immutable, thread-safe.
 *
 * <p>Code points unassigned in Unicode 13.0 are reported as {@link #UNASSIGNED}: newer Unicode versions may have
 * made them letters or numbers, and the Rust library's tables are newer, so text holding one is left to it.
 */
final class UnicodeClasses {
  static final String RESOURCE = "unicode-13.0-classes.txt";
  static final byte OTHER = 0;
  static final byte LETTER = 1;
  static final byte NUMBER = 2;
  static final byte UNASSIGNED = 3;

  private static final int[] STARTS;
  private static final byte[] CLASSES;

  static {
    int[] starts = new int[2048];
    byte[] classes = new byte[2048];
    int n = 0;
    try (InputStream in = UnicodeClasses.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException("the resource " + RESOURCE + " is missing from the class path");
      }
      BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.US_ASCII));
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        if (n == starts.length) {
          starts = Arrays.copyOf(starts, n * 2);
          classes = Arrays.copyOf(classes, n * 2);
        }
        int space = line.indexOf(' ');
        starts[n] = Integer.parseInt(line.substring(0, space), 16);
        classes[n] = switch (line.charAt(space + 1)) {
          case 'L' -> LETTER;
          case 'N' -> NUMBER;
          case 'O' -> OTHER;
          case 'U' -> UNASSIGNED;
          default -> throw new IllegalStateException(RESOURCE + ": bad line " + line);
        };
        n++;
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    STARTS = Arrays.copyOf(starts, n);
    CLASSES = Arrays.copyOf(classes, n);
  }

  private UnicodeClasses() {}

  /** The class of a code point. */
  static byte of(int cp) {
    int i = Arrays.binarySearch(STARTS, cp);
    return CLASSES[i >= 0 ? i : -i - 2];
  }
}
