package io.kvroute.transport.okhttp;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import io.kvroute.openai.internal.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import okhttp3.Response;
import okio.Buffer;
import okio.BufferedSource;
import org.jspecify.annotations.Nullable;

/**
 * Relays a {@link ForwardedResponse} to a client of the JDK's HTTP server ({@code com.sun.net.httpserver}):
 * status, end-to-end headers, and the body through {@link ResponseRelay}; stateless, thread-safe (each call relays
 * one exchange on the calling thread).
 *
 * <pre>{@code
 * try {
 *   ForwardedResponse upstream = forwarder.forward(request);
 *   HttpServerRelay.relay(upstream, exchange);      // closes upstream and the exchange
 * } catch (NoWorkerAvailableException e) {
 *   HttpServerRelay.sendError(exchange, 503, e.getMessage(), "service_unavailable");
 * }
 * }</pre>
 *
 * <p>Framing: an event stream is sent chunked and passed through event by event (an error event if the upstream
 * dies mid-stream); a body of known length is sent with that length, so an upstream failure mid-body leaves the
 * client with a short body and a closed connection, never a complete-looking one; a body of unknown length is
 * buffered (up to {@value #MAX_BUFFERED_BYTES} bytes, then streamed chunked) so that an upstream failure before its
 * end is answered with a 502 error instead. If the client disconnects, the upstream call is cancelled.
 * Hop-by-hop headers, {@code Content-Length} and {@code Date} are not copied; headers the caller set on the
 * exchange before the call are kept.
 *
 * <p>Loading this class sets {@code sun.net.httpserver.nodelay=true} unless it is set: the JDK server otherwise
 * sends headers and body in separate packets, and Nagle's algorithm with delayed ACKs then holds every
 * non-streamed response back by about 40 ms. The JDK reads the property once, when the first server is created:
 * a gateway that creates its server before touching this class must set it itself (or pass
 * {@code -Dsun.net.httpserver.nodelay=true}).
 */
public final class HttpServerRelay {
  /** Bodies of unknown length are buffered up to this many bytes before being streamed. */
  public static final int MAX_BUFFERED_BYTES = 16 << 20;

  private static final Set<String> NOT_COPIED = Set.of("connection", "keep-alive", "proxy-authenticate",
      "proxy-authorization", "proxy-connection", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
      "content-length", "date");

  static {
    enableNoDelay();
  }

  private HttpServerRelay() {}

  /**
   * Sets {@code sun.net.httpserver.nodelay=true} unless it is set; call before creating the first JDK HTTP server.
   */
  public static void enableNoDelay() {
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
  }

  /**
   * Sends the upstream status, headers and body to the exchange's client, then closes the upstream response and
   * the exchange.
   *
   * @param upstream the forwarded response
   * @param exchange the client's exchange; its response headers must not have been sent
   * @return how the body relay ended
   */
  public static ResponseRelay.Result relay(ForwardedResponse upstream, HttpExchange exchange) {
    Objects.requireNonNull(upstream, "upstream");
    Objects.requireNonNull(exchange, "exchange");
    try {
      copyHeaders(upstream.response(), exchange.getResponseHeaders());
      int code = upstream.code();
      boolean events = ResponseRelay.isEventStream(upstream.body().contentType());
      long length = upstream.body().contentLength();
      if (events || length > 0) {
        try {
          exchange.sendResponseHeaders(code, events ? 0 : length);
        } catch (IOException e) {
          upstream.cancel();
          upstream.close();
          return new ResponseRelay.Result(ResponseRelay.Outcome.CLIENT_DISCONNECTED, 0, e);
        }
        return ResponseRelay.relay(upstream, exchange.getResponseBody());
      }
      return relayBuffered(upstream, exchange, code);
    } finally {
      closeQuietly(exchange);
    }
  }

  private static ResponseRelay.Result relayBuffered(ForwardedResponse upstream, HttpExchange exchange, int code) {
    Buffer buffer = new Buffer();
    BufferedSource source = upstream.body().source();
    try {
      while (buffer.size() <= MAX_BUFFERED_BYTES) {
        if (source.read(buffer, 8192) == -1) {
          upstream.close();
          return sendBuffered(exchange, code, buffer);
        }
      }
    } catch (IOException e) {
      upstream.close();
      sendErrorQuietly(exchange, 502, "The upstream worker " + upstream.workerId() + " failed: " + e,
          "upstream_error");
      return new ResponseRelay.Result(ResponseRelay.Outcome.UPSTREAM_FAILED, 0, e);
    }
    // Too large to buffer: stream the rest chunked.
    long buffered = buffer.size();
    try {
      exchange.sendResponseHeaders(code, 0);
      buffer.writeTo(exchange.getResponseBody());
    } catch (IOException e) {
      upstream.cancel();
      upstream.close();
      return new ResponseRelay.Result(ResponseRelay.Outcome.CLIENT_DISCONNECTED, 0, e);
    }
    ResponseRelay.Result rest = ResponseRelay.relay(upstream, exchange.getResponseBody());
    return new ResponseRelay.Result(rest.outcome(), buffered + rest.bytes(), rest.failure());
  }

  private static ResponseRelay.Result sendBuffered(HttpExchange exchange, int code, Buffer buffer) {
    long size = buffer.size();
    try {
      exchange.sendResponseHeaders(code, size == 0 ? -1 : size);
      if (size > 0) {
        OutputStream out = exchange.getResponseBody();
        buffer.writeTo(out);
        out.flush();
      }
      return new ResponseRelay.Result(ResponseRelay.Outcome.COMPLETED, size, null);
    } catch (IOException e) {
      return new ResponseRelay.Result(ResponseRelay.Outcome.CLIENT_DISCONNECTED, 0, e);
    }
  }

  private static void copyHeaders(Response response, Headers to) {
    for (String name : response.headers().names()) {
      if (NOT_COPIED.contains(name.toLowerCase(Locale.ROOT))) {
        continue;
      }
      for (String value : response.headers(name)) {
        to.add(name, value);
      }
    }
  }

  /**
   * Answers the exchange with an OpenAI-style JSON error, {@code {"error":{"message":…,"type":…,"param":…,
   * "code":status}}}, and closes it.
   *
   * @param exchange the client's exchange; its response headers must not have been sent
   * @param status the HTTP status
   * @param message the error message
   * @param type the error type, for example {@code invalid_request_error}
   * @throws IOException if the client cannot be written to
   */
  public static void sendError(HttpExchange exchange, int status, String message, String type) throws IOException {
    sendError(exchange, status, message, type, null);
  }

  /**
   * Answers the exchange with an OpenAI-style JSON error naming the offending parameter, and closes it.
   *
   * @param exchange the client's exchange; its response headers must not have been sent
   * @param status the HTTP status
   * @param message the error message
   * @param type the error type, for example {@code invalid_request_error}
   * @param param the request member at fault, or null
   * @throws IOException if the client cannot be written to
   */
  public static void sendError(HttpExchange exchange, int status, String message, String type,
      @Nullable String param) throws IOException {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", type);
    error.put("param", param);
    error.put("code", status);
    byte[] body = Json.write(Map.of("error", error)).getBytes(StandardCharsets.UTF_8);
    try {
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    } finally {
      exchange.close();
    }
  }

  private static void sendErrorQuietly(HttpExchange exchange, int status, String message, String type) {
    try {
      sendError(exchange, status, message, type);
    } catch (IOException ignored) {
      // the client is gone
    }
  }

  private static void closeQuietly(HttpExchange exchange) {
    try {
      exchange.close();
    } catch (RuntimeException ignored) {
      // a fixed-length body left short: the JDK closes the connection, which is what the client must see
    }
  }
}
