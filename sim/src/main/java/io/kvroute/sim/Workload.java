package io.kvroute.sim;

/**
 * A deterministic sequence of requests, indexed from 0; implementations must be thread-safe and return equal
 * requests for equal indexes, so that every routing policy sees the same requests in the same order.
 */
@FunctionalInterface
public interface Workload {
  /**
   * The request issued {@code index}-th.
   *
   * @param index the request's position in issue order, from 0
   * @return the request; the same index always gives the same request
   */
  SimRequest request(int index);
}
