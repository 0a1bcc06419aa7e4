package io.kvroute;

/**
 * A worker's health as the router sees it; an immutable enum, thread-safe.
 *
 * <p>Only {@link #HEALTHY} and {@link #SUSPECT} workers are candidates for new requests. An {@link #EJECTED} worker
 * is let back in for one request (a half-open probe) once its backoff has passed; a {@link #DRAINING} worker gets no
 * new requests until {@link Router#undrain} while its requests in flight finish.
 */
public enum HealthState {
  /** No recent failure: routed normally. */
  HEALTHY,
  /** At least one failure since the last success, fewer than the ejection threshold: still routed. */
  SUSPECT,
  /** Too many consecutive failures: out of the candidate set until a probe after its backoff succeeds. */
  EJECTED,
  /** Taken out of rotation by the operator ({@link Router#drain}): no new requests, in-flight ones finish. */
  DRAINING;

  /**
   * Whether a worker in this state is a candidate for new requests.
   *
   * @return true for {@link #HEALTHY} and {@link #SUSPECT}
   */
  public boolean routable() {
    return this == HEALTHY || this == SUSPECT;
  }
}
