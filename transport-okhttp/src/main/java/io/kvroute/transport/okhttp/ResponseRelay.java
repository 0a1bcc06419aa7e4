package io.kvroute.transport.okhttp;

import io.kvroute.openai.internal.Json;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import okhttp3.MediaType;
import okio.Buffer;
import okio.BufferedSource;
import org.jspecify.annotations.Nullable;

/**
 * Copies a {@link ForwardedResponse}'s body to a client's {@link OutputStream}, as a gateway relays it; stateless,
 * thread-safe (each call relays one response on the calling thread).
 *
 * <p>A server-sent event stream ({@code text/event-stream}) is passed through event by event: each complete event
 * (ended by a blank line) is written and flushed as soon as it arrives, so the client sees tokens when the worker
 * sends them, and never a partial event (an event over {@value #MAX_PENDING_EVENT_BYTES} bytes is passed on in
 * pieces rather than held). If the upstream fails mid-stream, the partial event is dropped and an
 * OpenAI-style error event is written instead, {@code data: {"error":{"message":…,"type":"upstream_error",
 * "param":null,"code":502}}}, which OpenAI's clients raise as an API error. Any other body is copied as it
 * arrives, flushed at the end; an upstream failure then leaves it short, and the caller must abort the client's
 * connection (or, if nothing was written, answer with an error). If writing to the client fails (it disconnected),
 * the upstream call is cancelled at once, so the worker stops generating and the routing handle is released.
 *
 * <p>The upstream response is always closed when this returns. Status and headers are the caller's to send first;
 * {@link HttpServerRelay} does all of it for the JDK's HTTP server.
 */
public final class ResponseRelay {
  /** An event longer than this is passed on in pieces, so a stream without blank lines cannot grow the buffer. */
  static final long MAX_PENDING_EVENT_BYTES = 1 << 20;

  private ResponseRelay() {}

  /** How a relay ended; immutable (an enum), thread-safe. */
  public enum Outcome {
    /** The whole upstream body reached the client. */
    COMPLETED,
    /** Reading the upstream body failed; for an event stream, an error event was sent. */
    UPSTREAM_FAILED,
    /** Writing to the client failed; the upstream call was cancelled. */
    CLIENT_DISCONNECTED
  }

  /**
   * What a relay did; an immutable value, thread-safe.
   *
   * @param outcome how it ended
   * @param bytes bytes of the upstream body written to the client (the error event excluded)
   * @param failure the upstream or client error, or null when completed
   */
  public record Result(Outcome outcome, long bytes, @Nullable IOException failure) {
    /**
     * @param outcome how the relay ended, not null
     * @param bytes upstream body bytes written to the client, zero or more
     * @param failure the error that ended the relay, or null when it completed
     * @throws NullPointerException if {@code outcome} is null
     */
    public Result {
      Objects.requireNonNull(outcome, "outcome");
    }
  }

  /**
   * Whether a content type is a server-sent event stream.
   *
   * @param contentType the content type, or null
   * @return whether it is {@code text/event-stream}
   */
  public static boolean isEventStream(@Nullable MediaType contentType) {
    return contentType != null && "text".equalsIgnoreCase(contentType.type())
        && "event-stream".equalsIgnoreCase(contentType.subtype());
  }

  /**
   * Relays the upstream body to {@code out}, as described above, and closes the upstream response.
   *
   * @param upstream the forwarded response
   * @param out the client's body stream; flushed, not closed
   * @return how it ended
   */
  public static Result relay(ForwardedResponse upstream, OutputStream out) {
    Objects.requireNonNull(upstream, "upstream");
    Objects.requireNonNull(out, "out");
    try {
      return isEventStream(upstream.body().contentType()) ? relayEvents(upstream, out) : relayBytes(upstream, out);
    } finally {
      upstream.close();
    }
  }

  private static Result relayBytes(ForwardedResponse upstream, OutputStream out) {
    BufferedSource source = upstream.body().source();
    Buffer buffer = new Buffer();
    long written = 0;
    while (true) {
      long read;
      try {
        read = source.read(buffer, 8192);
      } catch (IOException e) {
        flushQuietly(out);
        return new Result(Outcome.UPSTREAM_FAILED, written, e);
      }
      try {
        if (read == -1) {
          out.flush();
          return new Result(Outcome.COMPLETED, written, null);
        }
        written += buffer.size();
        buffer.writeTo(out);
      } catch (IOException e) {
        upstream.cancel();
        return new Result(Outcome.CLIENT_DISCONNECTED, written, e);
      }
    }
  }

  private static Result relayEvents(ForwardedResponse upstream, OutputStream out) {
    BufferedSource source = upstream.body().source();
    Buffer pending = new Buffer(); // bytes of the event not yet complete
    long written = 0;
    while (true) {
      long read;
      try {
        read = source.read(pending, 8192);
      } catch (IOException e) {
        try {
          out.write(errorEvent(upstream, e));
          out.flush();
        } catch (IOException ignored) {
          // the client is gone too
        }
        return new Result(Outcome.UPSTREAM_FAILED, written, e);
      }
      try {
        if (read == -1) {
          written += pending.size(); // a last event without its blank line: passed on as it came
          pending.writeTo(out);
          out.flush();
          return new Result(Outcome.COMPLETED, written, null);
        }
        long end = completeEventsEnd(pending);
        if (end == 0 && pending.size() > MAX_PENDING_EVENT_BYTES) {
          end = pending.size(); // not an event stream worth the name: pass it through as it comes
        }
        if (end > 0) {
          written += end;
          pending.writeTo(out, end);
          out.flush();
        }
      } catch (IOException e) {
        upstream.cancel();
        return new Result(Outcome.CLIENT_DISCONNECTED, written, e);
      }
    }
  }

  /** The length of the leading run of complete events: up to and including the last blank line, or 0. */
  static long completeEventsEnd(Buffer buffer) {
    long size = buffer.size();
    for (long i = size - 1; i >= 1; i--) {
      byte b = buffer.getByte(i);
      if (b != '\n' && b != '\r') {
        continue;
      }
      byte prev = buffer.getByte(i - 1);
      if (b == '\n' && prev == '\n') {
        return i + 1; // "\n\n"
      }
      if (b == '\r' && prev == '\r') {
        return i + 1; // "\r\r"
      }
      if (b == '\n' && prev == '\r' && i >= 3 && buffer.getByte(i - 2) == '\n' && buffer.getByte(i - 3) == '\r') {
        return i + 1; // "\r\n\r\n"
      }
    }
    return 0;
  }

  /**
   * The error event sent when the upstream fails mid-stream.
   *
   * @param upstream the response that failed
   * @param cause why
   * @return the event's bytes, blank line included
   */
  static byte[] errorEvent(ForwardedResponse upstream, IOException cause) {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", "The upstream worker " + upstream.workerId() + " failed mid-stream: " + cause);
    error.put("type", "upstream_error");
    error.put("param", null);
    error.put("code", 502);
    return ("data: " + Json.write(Map.of("error", error)) + "\n\n").getBytes(StandardCharsets.UTF_8);
  }

  private static void flushQuietly(OutputStream out) {
    try {
      out.flush();
    } catch (IOException ignored) {
      // the client is gone too
    }
  }
}
