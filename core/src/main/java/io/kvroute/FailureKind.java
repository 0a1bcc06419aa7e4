package io.kvroute;

/**
 * What went wrong in one failed interaction with a worker, as reported to {@link Router#reportFailure}; an immutable
 * enum, thread-safe.
 */
public enum FailureKind {
  /** The connection was refused or could not be established: the request provably never reached the engine. */
  CONNECT_FAILED(true),
  /** No byte (or no next byte) within the attempt's budget: the worker may be hung or overloaded. */
  TIMEOUT(true),
  /** The worker answered with a 5xx status. */
  SERVER_ERROR(true),
  /** A streamed response ended before completion (connection reset, EOF mid-stream). */
  STREAM_CUT(true),
  /** An active health probe ({@code /health} or similar) failed. */
  PROBE_FAILED(true),
  /**
   * Scraping the worker's metrics failed. It makes the worker {@link HealthState#SUSPECT} and forgets its last
   * reported load, but never ejects it on its own: a metrics endpoint can fail while the engine serves.
   */
  SCRAPE_FAILED(false);

  private final boolean countsTowardEjection;

  FailureKind(boolean countsTowardEjection) {
    this.countsTowardEjection = countsTowardEjection;
  }

  /**
   * Whether consecutive failures of this kind eject the worker.
   *
   * @return true for every kind but {@link #SCRAPE_FAILED}
   */
  public boolean countsTowardEjection() {
    return countsTowardEjection;
  }
}
