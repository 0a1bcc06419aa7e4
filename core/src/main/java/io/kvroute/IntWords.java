package io.kvroute;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.nio.ByteOrder;
import org.jspecify.annotations.Nullable;

/**
 * Reads two adjacent ints of an {@code int[]} as one little-endian long, {@code (t[i] & 0xFFFFFFFFL) | ((long)
 * t[i + 1] << 32)}, with one 8-byte load; stateless and thread-safe.
 *
 * <p>Java 17 has no view of an {@code int[]} as longs other than {@code sun.misc.Unsafe#getLong(Object, long)}
 * (module {@code jdk.unsupported}; zero-allocation-hashing's own {@code hashInts} reads arrays through it too). It is
 * looked up reflectively, so nothing here names the class at compile time, and held as a constant method handle,
 * which the JIT compiles to the plain load. The XXH3 loop uses it only when {@link #AVAILABLE}: the platform is
 * little-endian (so the load equals the packed value, checked on a probe), the runtime is older than Java 24 (which
 * warns about Unsafe's memory access, and will refuse it), and {@code -Dkvroute.hash.unsafe=false} is not set.
 * Otherwise the portable loop runs; the hashes are the same either way. Callers check the bounds: {@link #get}
 * checks nothing.
 */
final class IntWords {
  /** Whether {@link #get} may be called. */
  static final boolean AVAILABLE;
  /** The byte offset of element 0 of an {@code int[]}. */
  static final long BASE;
  // Unsafe.getLong(Object, long), bound to the Unsafe instance: (Object, long) -> long.
  private static final @Nullable MethodHandle GET_LONG;

  static {
    MethodHandle getLong = null;
    long base = 0;
    boolean available = false;
    if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN && Runtime.version().feature() < 24
        && !"false".equalsIgnoreCase(System.getProperty("kvroute.hash.unsafe"))) {
      try {
        Class<?> type = Class.forName("sun.misc.Unsafe");
        Field field = type.getDeclaredField("theUnsafe");
        field.setAccessible(true);
        Object unsafe = field.get(null);
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        getLong = lookup.findVirtual(type, "getLong", MethodType.methodType(long.class, Object.class, long.class))
            .bindTo(unsafe);
        base = (int) lookup.findVirtual(type, "arrayBaseOffset", MethodType.methodType(int.class, Class.class))
            .invoke(unsafe, int[].class);
        int scale = (int) lookup.findVirtual(type, "arrayIndexScale", MethodType.methodType(int.class, Class.class))
            .invoke(unsafe, int[].class);
        int[] probe = {0x11223344, 0x55667788};
        available = scale == 4 && (long) getLong.invokeExact((Object) probe, base) == 0x5566778811223344L;
      } catch (Throwable e) { // any failure (absent, inaccessible, refused) leaves the portable path
        available = false;
      }
    }
    GET_LONG = available ? getLong : null;
    BASE = available ? base : 0;
    AVAILABLE = available;
  }

  private IntWords() {}

  /**
   * The long at byte offset {@code at} of {@code t} ({@link #BASE} {@code + 4 * i} for the pair {@code i, i + 1});
   * only when {@link #AVAILABLE}, and only within the array (unchecked).
   */
  static long get(int[] t, long at) {
    try {
      return (long) GET_LONG.invokeExact((Object) t, at);
    } catch (Throwable e) { // Unsafe.getLong declares nothing; this cannot happen
      throw new AssertionError(e);
    }
  }
}
