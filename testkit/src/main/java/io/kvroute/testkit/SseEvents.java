package io.kvroute.testkit;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Reads an OpenAI-style server-sent event stream as OpenAI's client libraries do: the payload of each
 * {@code data: } line, one at a time as it arrives, until {@code data: [DONE]} (then the rest of the body is read
 * and dropped) or the end of the stream; not
 * thread-safe (one reader per response, on the thread that reads it). Other lines (comments, {@code event:},
 * blank separators) are skipped. Reading incrementally lets a test check the server's state while a stream is
 * still running (for example, that the first token arrived before the engine finished).
 *
 * <pre>{@code
 * try (SseEvents events = new SseEvents(response.body())) {
 *   for (String data = events.next(); data != null; data = events.next()) {
 *     Map<?, ?> chunk = parse(data);
 *   }
 *   assertTrue(events.done(), "the stream ends in [DONE]");
 * }
 * }</pre>
 */
public final class SseEvents implements Closeable {
  private static final String DATA = "data: ";
  private static final String DONE = "[DONE]";

  private final BufferedReader reader;
  private boolean done;

  /**
   * Reads {@code body} as UTF-8.
   *
   * @param body the response body; closed by {@link #close}
   */
  public SseEvents(InputStream body) {
    this.reader = new BufferedReader(new InputStreamReader(Objects.requireNonNull(body, "body"),
        StandardCharsets.UTF_8));
  }

  /**
   * The next event's data, blocking until it arrives.
   *
   * @return the payload after {@code "data: "}, or null once {@code [DONE]} was read or the stream ended
   * @throws IOException if reading fails
   */
  public @Nullable String next() throws IOException {
    if (done) {
      return null;
    }
    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
      if (!line.startsWith(DATA)) {
        continue;
      }
      String data = line.substring(DATA.length());
      if (data.equals(DONE)) {
        done = true;
        while (reader.readLine() != null) {
          // read to the end of the body, as a client does before it reuses the connection
        }
        return null;
      }
      return data;
    }
    return null;
  }

  /**
   * Whether the stream ended with {@code data: [DONE]} (false if it broke off, or has not ended yet).
   *
   * @return whether {@code [DONE]} was read
   */
  public boolean done() {
    return done;
  }

  @Override
  public void close() throws IOException {
    reader.close();
  }
}
