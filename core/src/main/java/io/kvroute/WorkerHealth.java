package io.kvroute;

import org.jspecify.annotations.Nullable;

/**
 * One registered worker's health: consecutive failures, ejection with exponential backoff, the half-open probe and
 * draining; thread-safe: transitions are serialized on this object, and selections read only the volatile
 * {@link #state} (plus {@link #probeDue} for an ejected worker), so that checking health adds one volatile read per
 * candidate to {@code select}.
 *
 * <p>Transitions return a {@link Change} for the router to report to its listener after every lock is released.
 */
final class WorkerHealth {
  private final HealthConfig config;
  // The visible state: DRAINING overlays whatever the failures say.
  private volatile HealthState state = HealthState.HEALTHY;
  // Nothing to clear: HEALTHY, no failure counted, no ejection remembered. Lets reportSuccess skip the monitor.
  private volatile boolean clean = true;
  private volatile long probeAtNanos;
  private volatile boolean probing;
  // Guarded by this.
  private HealthState byFailures = HealthState.HEALTHY;
  private @Nullable Object probe; // the request let through as the probe, while `probing`
  private boolean draining;
  private int consecutiveFailures;
  private int ejections;
  private long healthySinceNanos;
  private @Nullable String lastReason;

  WorkerHealth(HealthConfig config) {
    this.config = config;
  }

  /** A visible state change, to be reported to the listener outside any lock. */
  record Change(HealthState from, HealthState to, String reason) {}

  HealthState state() {
    return state;
  }

  /** Whether an ejected worker's backoff has passed and no probe is in flight: one request may be let through. */
  boolean probeDue(long nowNanos) {
    return !probing && nowNanos - probeAtNanos >= 0;
  }

  /** Whether a selection may route to this worker now (routable, or ejected with a probe due). */
  boolean admits(long nowNanos) {
    HealthState s = state;
    return s.routable() || (s == HealthState.EJECTED && probeDue(nowNanos));
  }

  /**
   * Claims the half-open probe for a request routed to this ejected worker; the router calls it under its
   * admission lock, so two selections never both claim it.
   *
   * @return whether this request is the probe (false: the worker is no longer ejected)
   */
  synchronized boolean beginProbe(Object request) {
    if (byFailures != HealthState.EJECTED) {
      return false;
    }
    probing = true;
    probe = request;
    return true;
  }

  /**
   * The request ended; if it is still the probe (no success or failure was reported for it), let another one
   * through. A late end of an earlier probe never frees a later one.
   */
  synchronized void probeEnded(Object request) {
    if (probe == request) {
      probing = false;
      probe = null;
    }
  }

  @Nullable Change success(long nowNanos) {
    return clean ? null : recovered(nowNanos); // the common case, a healthy worker, takes no monitor
  }

  private synchronized @Nullable Change recovered(long nowNanos) {
    HealthState before = state;
    if (byFailures == HealthState.EJECTED) {
      if (!probing && nowNanos - probeAtNanos < 0) {
        return null; // a request begun before the ejection: no evidence the worker recovered
      }
      probing = false;
      probe = null;
      healthySinceNanos = nowNanos;
    } else if (ejections > 0 && nowNanos - healthySinceNanos >= config.maxBackoffNanos) {
      ejections = 0; // healthy for a full maximum backoff: the next ejection starts from the initial backoff
    }
    byFailures = HealthState.HEALTHY;
    consecutiveFailures = 0;
    lastReason = "success";
    return publish(before, "success reported");
  }

  synchronized @Nullable Change failure(FailureKind kind, long nowNanos) {
    HealthState before = state;
    String reason;
    if (!kind.countsTowardEjection()) {
      if (byFailures != HealthState.HEALTHY) {
        return null;
      }
      byFailures = HealthState.SUSPECT;
      reason = kind.name();
    } else if (byFailures == HealthState.EJECTED) {
      if (!probing && nowNanos - probeAtNanos < 0) {
        return null; // a late failure of a request begun before the ejection: the backoff already covers it
      }
      consecutiveFailures++;
      reason = eject(kind, nowNanos, "probe failed: ");
    } else {
      consecutiveFailures++;
      if (consecutiveFailures >= config.failureThreshold) {
        reason = eject(kind, nowNanos, consecutiveFailures + " consecutive failures, last ");
      } else {
        byFailures = HealthState.SUSPECT;
        reason = kind.name() + " (" + consecutiveFailures + " of " + config.failureThreshold + ")";
      }
    }
    lastReason = reason;
    return publish(before, reason);
  }

  private String eject(FailureKind kind, long nowNanos, String why) {
    ejections = Math.min(ejections + 1, 62);
    long backoff = config.backoffNanos(ejections);
    byFailures = HealthState.EJECTED;
    probing = false;
    probe = null;
    probeAtNanos = nowNanos + backoff;
    return why + kind.name() + "; ejected for " + (backoff / 1_000_000) + " ms";
  }

  synchronized @Nullable Change drain(boolean on) {
    if (draining == on) {
      return null;
    }
    HealthState before = state;
    draining = on;
    return publish(before, on ? "drain requested" : "undrain requested");
  }

  /** The last transition's reason, for explanations and toString. */
  synchronized @Nullable String lastReason() {
    return lastReason;
  }

  synchronized int consecutiveFailures() {
    return consecutiveFailures;
  }

  private @Nullable Change publish(HealthState before, String reason) {
    HealthState after = draining ? HealthState.DRAINING : byFailures;
    state = after;
    clean = after == HealthState.HEALTHY && consecutiveFailures == 0 && ejections == 0;
    return before == after ? null : new Change(before, after, reason);
  }

  @Override
  public String toString() {
    return state.toString();
  }
}
