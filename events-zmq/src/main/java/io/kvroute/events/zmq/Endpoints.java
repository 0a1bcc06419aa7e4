package io.kvroute.events.zmq;

import java.util.Objects;

/** Helpers for ZeroMQ endpoint strings; stateless and thread-safe. */
final class Endpoints {
  private Endpoints() {}

  /**
   * The endpoint of data-parallel rank {@code rank}, as vLLM's {@code offset_endpoint_port} computes it:
   * {@code tcp://host:PORT} becomes {@code tcp://host:PORT+rank}, {@code inproc://x} becomes {@code inproc://x_dp<rank>};
   * rank 0, port 0 and the wildcard port {@code *} are unchanged.
   *
   * @throws IllegalArgumentException if the endpoint is neither tcp nor inproc while {@code rank > 0}, or the port
   *     is not a number
   */
  static String offset(String endpoint, int rank) {
    Objects.requireNonNull(endpoint, "endpoint");
    if (rank == 0) {
      return endpoint;
    }
    if (endpoint.startsWith("inproc://")) {
      return endpoint + "_dp" + rank;
    }
    if (!endpoint.startsWith("tcp://")) {
      throw new IllegalArgumentException("only tcp:// and inproc:// endpoints can be offset by a data-parallel rank: "
          + endpoint);
    }
    int colon = endpoint.lastIndexOf(':');
    String port = endpoint.substring(colon + 1);
    if (colon < "tcp://".length() || port.equals("*") || port.equals("0")) {
      return endpoint;
    }
    int base;
    try {
      base = Integer.parseInt(port);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("endpoint has no numeric port: " + endpoint, e);
    }
    if (base <= 0 || base + rank > 65_535) {
      throw new IllegalArgumentException("port " + base + " + rank " + rank + " is not a valid port: " + endpoint);
    }
    return endpoint.substring(0, colon + 1) + (base + rank);
  }

  /** The address to bind: {@code tcp://host:0} asks for an ephemeral port, which JeroMQ spells {@code *}. */
  static String bindable(String endpoint) {
    if (endpoint.startsWith("tcp://") && endpoint.endsWith(":0")) {
      return endpoint.substring(0, endpoint.length() - 1) + "*";
    }
    return endpoint;
  }

  /** Validates an endpoint given to a builder. */
  static String check(String endpoint, String name) {
    Objects.requireNonNull(endpoint, name);
    if (!endpoint.startsWith("tcp://") && !endpoint.startsWith("ipc://") && !endpoint.startsWith("inproc://")) {
      throw new IllegalArgumentException(name + " must start with tcp://, ipc:// or inproc:// but was " + endpoint);
    }
    return endpoint;
  }

  /** Validates an endpoint to connect to: a wildcard host such as vLLM's {@code tcp://*:5557} names no peer. */
  static String checkConnectable(String endpoint, String name) {
    check(endpoint, name);
    if (endpoint.startsWith("tcp://*:") || endpoint.startsWith("tcp://0.0.0.0:")) {
      throw new IllegalArgumentException(name + " must name the engine's host, not a wildcard, but was " + endpoint);
    }
    return endpoint;
  }
}
