package io.kvroute;

import it.unimi.dsi.fastutil.objects.Object2LongOpenHashMap;
import it.unimi.dsi.fastutil.objects.ObjectIterator;
import java.util.HashMap;
import java.util.Map;

/**
 * Exponentially decayed counts of placements per worker, for live workers only; not thread-safe (its policy guards
 * it).
 *
 * <p>Decay is lazy: each entry keeps the placement clock at its last update, and its value is scaled by
 * {@code decay^(now - then)} when read, so a placement touches one entry instead of every worker ever seen. Workers
 * no longer among the candidates are forgotten by {@link #forgetAllBut}, which sweeps only when the map holds more
 * entries than twice the candidates, so the sweep costs amortised O(1) per placement and the map stays
 * O(live workers).
 */
final class PlacementCounts {
  private final double decay;
  private final Map<WorkerId, double[]> counts = new HashMap<>(); // {value, clock at value}
  private final Object2LongOpenHashMap<WorkerId> seen = new Object2LongOpenHashMap<>();
  private long clock;
  private long sweep;

  PlacementCounts(double decay) {
    this.decay = decay;
  }

  /** The decayed count of {@code worker}, 0 if unknown. */
  double get(WorkerId worker) {
    double[] e = counts.get(worker);
    return e == null ? 0 : e[0] * Math.pow(decay, clock - e[1]);
  }

  /** Counts one placement on {@code worker} and advances the clock (every other count decays by one step). */
  void record(WorkerId worker) {
    double value = get(worker);
    clock++;
    double[] e = counts.computeIfAbsent(worker, w -> new double[2]);
    e[0] = value * decay + 1;
    e[1] = clock;
  }

  /** Forgets workers that are not among {@code c}'s candidates once departed ones could make up half the map. */
  void forgetAllBut(Candidates c) {
    if (counts.size() <= 2 * c.size() + 8) {
      return;
    }
    sweep++;
    for (int i = 0; i < c.size(); i++) {
      seen.put(c.worker(i).id(), sweep);
    }
    counts.keySet().removeIf(w -> seen.getLong(w) != sweep);
    for (ObjectIterator<Object2LongOpenHashMap.Entry<WorkerId>> it = seen.object2LongEntrySet().fastIterator();
        it.hasNext(); ) {
      if (it.next().getLongValue() != sweep) {
        it.remove();
      }
    }
  }

  /** Entries held, for tests. */
  int size() {
    return counts.size();
  }
}
