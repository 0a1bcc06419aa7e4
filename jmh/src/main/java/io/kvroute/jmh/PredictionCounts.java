package io.kvroute.jmh;

import io.kvroute.Router;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * A router's approximate-mode counters (how its selections recorded their predictions, and the prediction index's
 * size), read by reflection for {@code -Dbench.counts=true}: the benchmarks run on the class path, where core's
 * package-private members are reachable. Diagnostic only; not thread-safe (racy reads of plain fields).
 */
final class PredictionCounts {
  private PredictionCounts() {}

  static String of(Router router) {
    try {
      Method m = Router.class.getDeclaredMethod("predictions");
      m.setAccessible(true);
      Object p = m.invoke(router);
      Method index = p.getClass().getDeclaredMethod("index");
      index.setAccessible(true);
      Object idx = index.invoke(p);
      Method size = idx.getClass().getDeclaredMethod("size");
      size.setAccessible(true);
      StringBuilder b = new StringBuilder();
      for (String f : new String[] {"renewed", "renewedRemote", "extended", "storedWhole", "remoteRenewed",
          "remoteStored", "remoteRenewedOwn", "blocks", "remoteBlocks"}) {
        b.append(f).append('=').append(field(p, f)).append(' ');
      }
      b.append("nodes=").append(((java.util.Map<?, ?>) field(p, "byEnd")).size());
      b.append(" remoteNodes=").append(((java.util.Map<?, ?>) field(p, "remoteByEnd")).size());
      b.append(" indexEntries=").append(size.invoke(idx));
      return b.toString();
    } catch (ReflectiveOperationException | RuntimeException e) {
      return "counts unavailable: " + e;
    }
  }

  private static Object field(Object o, String name) throws ReflectiveOperationException {
    Field f;
    try {
      f = o.getClass().getDeclaredField(name);
    } catch (NoSuchFieldException e) {
      return "-";
    }
    f.setAccessible(true);
    return f.get(o);
  }
}
