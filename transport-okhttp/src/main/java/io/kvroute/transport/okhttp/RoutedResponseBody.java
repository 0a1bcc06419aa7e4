package io.kvroute.transport.okhttp;

import io.kvroute.Routing;
import java.io.IOException;
import okhttp3.MediaType;
import okhttp3.ResponseBody;
import okio.Buffer;
import okio.BufferedSource;
import okio.ForwardingSource;
import okio.Okio;
import org.jspecify.annotations.Nullable;

/**
 * An upstream response body that tells the routing handle of the first token and releases it when the body is
 * exhausted, fails or is closed; not thread-safe for reading (as any response body), but {@link #close} may race
 * with a reader.
 */
final class RoutedResponseBody extends ResponseBody {
  private final ResponseBody delegate;
  private final Routing routing;
  private final FirstTokenDetector detector;
  private @Nullable BufferedSource source;
  private volatile boolean firstTokenSeen;

  RoutedResponseBody(ResponseBody delegate, Routing routing, boolean watchForToken) {
    this.delegate = delegate;
    this.routing = routing;
    this.detector = FirstTokenDetector.of(delegate.contentType());
    this.firstTokenSeen = !watchForToken;
  }

  @Override
  public @Nullable MediaType contentType() {
    return delegate.contentType();
  }

  @Override
  public long contentLength() {
    return delegate.contentLength();
  }

  @Override
  public synchronized BufferedSource source() {
    if (source == null) {
      source = Okio.buffer(new RoutedSource(delegate.source()));
    }
    return source;
  }

  boolean firstTokenSeen() {
    return firstTokenSeen;
  }

  private final class RoutedSource extends ForwardingSource {
    RoutedSource(okio.Source delegate) {
      super(delegate);
    }

    @Override
    public long read(Buffer sink, long byteCount) throws IOException {
      long read;
      try {
        read = super.read(sink, byteCount);
      } catch (IOException | RuntimeException | Error e) {
        routing.close();
        throw e;
      }
      if (read == -1) {
        routing.close();
      } else if (!firstTokenSeen && detector.onBytes(sink, sink.size() - read, read)) {
        firstTokenSeen = true;
        routing.firstToken();
      }
      return read;
    }

    @Override
    public void close() throws IOException {
      try {
        super.close();
      } finally {
        routing.close();
      }
    }
  }
}
