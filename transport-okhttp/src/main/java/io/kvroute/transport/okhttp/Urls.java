package io.kvroute.transport.okhttp;

import java.net.URI;
import java.util.Locale;
import okhttp3.HttpUrl;

/** Joins a worker's base URI and an API path; stateless, thread-safe. */
final class Urls {
  private Urls() {}

  /**
   * {@code base} with {@code path} appended to its path: {@code http://h:8000} and {@code /metrics} give
   * {@code http://h:8000/metrics}; {@code http://h/vllm/} and {@code /v1/completions} give
   * {@code http://h/vllm/v1/completions}. The path may carry a query.
   *
   * <p>The result always has the base's scheme, host and port, and a path under the base's path: the path is
   * checked by {@link #checkPath} (no {@code //} authority, no backslash, no dot segment, even percent-encoded),
   * and the joined URL is checked again after OkHttp's parsing.
   *
   * @throws IllegalArgumentException if {@code base} is not an http or https URI, or {@code path} is not a plain
   *     absolute path
   */
  static HttpUrl resolve(URI base, String path) {
    HttpUrl url = HttpUrl.parse(base.toString());
    if (url == null) {
      throw new IllegalArgumentException("not an http(s) URI: " + base);
    }
    checkPath(path, "path");
    String basePath = url.encodedPath();
    if (basePath.endsWith("/")) {
      basePath = basePath.substring(0, basePath.length() - 1);
    }
    int q = path.indexOf('?');
    String pathOnly = q < 0 ? path : path.substring(0, q);
    HttpUrl.Builder builder = url.newBuilder().encodedPath(basePath + pathOnly).encodedQuery(null).fragment(null);
    if (q >= 0) {
      builder.encodedQuery(path.substring(q + 1));
    }
    HttpUrl resolved = builder.build();
    if (!resolved.scheme().equals(url.scheme()) || !resolved.host().equals(url.host())
        || resolved.port() != url.port() || !resolved.encodedPath().startsWith(basePath + "/")) {
      throw new IllegalArgumentException("path \"" + path + "\" leaves the endpoint " + base);
    }
    return resolved;
  }

  /**
   * Checks an API path: it must start with a single '/', and must not hold a backslash, a fragment, control
   * characters, or a segment that is, or decodes to, {@code .} or {@code ..}, nor an encoded {@code /} or
   * {@code \}. Such paths could leave the worker's base path or, as {@code //host/x} or {@code /\host/x}, name
   * another host, which would receive the request with the gateway's credentials.
   *
   * @throws IllegalArgumentException naming {@code name} and the path, if the path is not such a path
   */
  static String checkPath(String path, String name) {
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException(name + " must start with '/' but was \"" + path + "\"");
    }
    int q = path.indexOf('?');
    String pathOnly = q < 0 ? path : path.substring(0, q);
    if (pathOnly.startsWith("//")) {
      throw refused(name, path, "starts with '//', which names a host");
    }
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        throw refused(name, path, "holds a control character");
      }
      if (c == '#') {
        throw refused(name, path, "holds a fragment ('#')");
      }
      if (c == '\\' && i < pathOnly.length()) {
        throw refused(name, path, "holds a backslash, which browsers and some servers read as '/'");
      }
    }
    String lower = pathOnly.toLowerCase(Locale.ROOT);
    if (lower.contains("%2f") || lower.contains("%5c")) {
      throw refused(name, path, "holds an encoded '/' or '\\'");
    }
    for (String segment : pathOnly.substring(1).split("/", -1)) {
      String decoded = segment.toLowerCase(Locale.ROOT).replace("%2e", ".");
      if (decoded.equals(".") || decoded.equals("..")) {
        throw refused(name, path, "holds a dot segment ('" + segment + "'), which would leave the base path");
      }
    }
    return path;
  }

  private static IllegalArgumentException refused(String name, String path, String why) {
    return new IllegalArgumentException(name + " \"" + path + "\" is refused: it " + why);
  }
}
