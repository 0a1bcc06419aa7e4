package io.kvroute;

import java.time.Duration;

/**
 * The router's health thresholds; an immutable value, thread-safe. See {@link Router.Builder#ejectAfterFailures}
 * and {@link Router.Builder#ejectionBackoff} for what each default is and why.
 */
final class HealthConfig {
  final int failureThreshold;
  final long initialBackoffNanos;
  final long maxBackoffNanos;

  HealthConfig(int failureThreshold, Duration initialBackoff, Duration maxBackoff) {
    this.failureThreshold = failureThreshold;
    this.initialBackoffNanos = initialBackoff.toNanos();
    this.maxBackoffNanos = maxBackoff.toNanos();
  }

  /** The backoff after the {@code ejections}th ejection in a row: the initial one doubled each time, capped. */
  long backoffNanos(int ejections) {
    long b = initialBackoffNanos;
    for (int i = 1; i < ejections && b < maxBackoffNanos; i++) {
      b = b > Long.MAX_VALUE / 2 ? Long.MAX_VALUE : b * 2;
    }
    return Math.min(b, maxBackoffNanos);
  }
}
