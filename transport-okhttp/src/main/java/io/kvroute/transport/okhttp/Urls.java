package io.kvroute.transport.okhttp;

import java.net.URI;
import okhttp3.HttpUrl;

/** Joins a worker's base URI and an API path; stateless, thread-safe. */
final class Urls {
  private Urls() {}

  /**
   * {@code base} with {@code path} appended to its path: {@code http://h:8000} and {@code /metrics} give
   * {@code http://h:8000/metrics}; {@code http://h/vllm/} and {@code /v1/completions} give
   * {@code http://h/vllm/v1/completions}. The path may carry a query.
   *
   * @throws IllegalArgumentException if {@code base} is not an http or https URI
   */
  static HttpUrl resolve(URI base, String path) {
    HttpUrl url = HttpUrl.parse(base.toString());
    if (url == null) {
      throw new IllegalArgumentException("not an http(s) URI: " + base);
    }
    String basePath = url.encodedPath();
    if (basePath.endsWith("/")) {
      basePath = basePath.substring(0, basePath.length() - 1);
    }
    String joined = basePath + (path.startsWith("/") ? path : "/" + path);
    HttpUrl resolved = url.newBuilder().encodedPath("/").query(null).build().resolve(joined);
    if (resolved == null) {
      throw new IllegalArgumentException("cannot append " + path + " to " + base);
    }
    return resolved;
  }

  /** Checks an API path given to a builder. */
  static String checkPath(String path, String name) {
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException(name + " must start with '/' but was \"" + path + "\"");
    }
    return path;
  }
}
