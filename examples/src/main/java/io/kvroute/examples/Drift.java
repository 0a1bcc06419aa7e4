package io.kvroute.examples;

import io.kvroute.RouterListener;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * {@code ReplicaExperiment --drift true}: how far apart the replicas' {@code predictedTtft} policies' learned state
 * is, sampled after each warm routing (the simulation is quiescent then: every delivered frame applied); not
 * thread-safe (the simulation's only thread calls it).
 *
 * <p>A diagnosis, read by reflection so that nothing is added to the policy or its hot path: per learned quantity
 * (per worker, or the policy's own), the spread across replicas, {@code (max - min) / mean of |value|} for numbers
 * and the share of samples where the replicas disagree for flags, averaged over the samples and workers. Quantities
 * every replica learns from the same signals stay near zero; those learned from each replica's own selections or
 * observations drift.
 */
final class Drift implements RouterListener {
  private static final String[] MODEL_FIELDS = {"a", "b", "d", "serviceNanos", "footprint", "memoryBound",
      "maxCached", "filled", "routedShare", "servedShare", "lastStepEndAt", "prefillStartedAt", "queueSeen",
      "warmBlocks"};
  private static final String[] POLICY_FIELDS = {"meanArrivalGapNanos", "meanPromptBlocks", "selections",
      "stepNanos"};

  private final Object[] policies;
  private final int skip;
  private int routed;
  private final Map<String, double[]> sums = new LinkedHashMap<>(); // name -> {sum of spreads, count}

  Drift(int replicas, int skip) {
    this.policies = new Object[replicas];
    this.skip = skip;
  }

  /** Replica {@code r}'s policy (only {@code predictedTtft}'s state is read; others are left out). */
  void policy(int r, RouterPolicy policy) {
    policies[r] = policy.getClass().getSimpleName().equals("PredictedTtftPolicy") ? policy : null;
  }

  @Override
  public void onRouted(Routing routing) {
    if (routed++ < skip) {
      return;
    }
    for (Object p : policies) {
      if (p == null) {
        return;
      }
    }
    try {
      sample();
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("drift: " + e, e);
    }
  }

  private void sample() throws ReflectiveOperationException {
    int n = policies.length;
    for (String f : POLICY_FIELDS) {
      double[] v = new double[n];
      for (int r = 0; r < n; r++) {
        v[r] = number(field(policies[r], f));
      }
      add(f, spread(v), mean(v));
    }
    @SuppressWarnings("unchecked")
    Map<Object, Object> first = (Map<Object, Object>) field(policies[0], "models");
    for (Object worker : first.keySet()) {
      Object[] models = new Object[n];
      boolean all = true;
      for (int r = 0; r < n; r++) {
        models[r] = ((Map<?, ?>) field(policies[r], "models")).get(worker);
        all &= models[r] != null;
      }
      if (!all) {
        continue;
      }
      for (String f : MODEL_FIELDS) {
        double[] v = new double[n];
        boolean flag = false;
        for (int r = 0; r < n; r++) {
          Object o = field(models[r], f);
          flag = o instanceof Boolean;
          v[r] = number(o);
        }
        add("worker." + f, flag ? disagree(v) : spread(v), mean(v));
      }
      add("worker.warm.size", spread(sizes(models)));
    }
  }

  private static double[] sizes(Object[] models) throws ReflectiveOperationException {
    double[] v = new double[models.length];
    for (int r = 0; r < models.length; r++) {
      v[r] = ((Map<?, ?>) field(models[r], "warm")).size();
    }
    return v;
  }

  private void add(String name, double spread) {
    add(name, spread, Double.NaN);
  }

  private void add(String name, double spread, double mean) {
    if (Double.isNaN(spread)) {
      return;
    }
    double[] s = sums.computeIfAbsent(name, k -> new double[4]);
    s[0] += spread;
    s[1]++;
    if (!Double.isNaN(mean)) {
      s[2] += mean;
      s[3]++;
    }
  }

  private static double mean(double[] v) {
    double sum = 0;
    for (double x : v) {
      sum += x;
    }
    return sum / v.length;
  }

  /** {@code (max - min) / mean |v|}; 0 if all equal; NaN if any is NaN or unset (Long.MIN_VALUE). */
  static double spread(double[] v) {
    double min = Double.POSITIVE_INFINITY;
    double max = Double.NEGATIVE_INFINITY;
    double abs = 0;
    for (double x : v) {
      if (Double.isNaN(x) || x == Long.MIN_VALUE) {
        return Double.NaN;
      }
      min = Math.min(min, x);
      max = Math.max(max, x);
      abs += Math.abs(x);
    }
    if (max == min) {
      return 0;
    }
    return abs == 0 ? 0 : (max - min) / (abs / v.length);
  }

  /** 1 if the flags differ, else 0. */
  static double disagree(double[] v) {
    for (double x : v) {
      if (x != v[0]) {
        return 1;
      }
    }
    return 0;
  }

  private static double number(Object o) {
    if (o instanceof Boolean b) {
      return b ? 1 : 0;
    }
    return ((Number) o).doubleValue();
  }

  private static Object field(Object o, String name) throws ReflectiveOperationException {
    Field f = o.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(o);
  }

  /** Adds this run's mean spreads to {@code totals}. */
  void addTo(Map<String, double[]> totals) {
    sums.forEach((k, s) -> {
      double[] t = totals.computeIfAbsent(k, x -> new double[4]);
      t[0] += s[0] / s[1];
      t[1]++;
      if (s[3] > 0) {
        t[2] += s[2] / s[3];
        t[3]++;
      }
    });
  }

  /** Prints the mean over runs of each quantity's mean spread. */
  static void print(Map<String, double[]> totals, PrintStream out, String label) {
    out.printf(Locale.ROOT, "drift %s (mean spread across replicas, (max-min)/mean, flags: 0/1 disagreement):%n",
        label);
    totals.forEach((k, t) -> out.printf(Locale.ROOT, "  %-26s %.4f  (mean value %.4g)%n", k, t[0] / t[1],
        t[3] > 0 ? t[2] / t[3] : Double.NaN));
  }
}
