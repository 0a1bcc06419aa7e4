package io.kvroute.transport.okhttp;

import io.kvroute.FailureKind;
import io.kvroute.Router;
import io.kvroute.Routing;
import java.io.IOException;
import java.io.InterruptedIOException;
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
 *
 * <p>When given a router to report to (a 2xx response), the end of the body is an outcome of the worker: reading
 * it to its end reports a success, a read that times out {@link FailureKind#TIMEOUT}, and one that fails otherwise
 * (reset, closed before the end) {@link FailureKind#STREAM_CUT}. A body the caller closes or cancels early reports
 * nothing: the caller went away, not the worker. An event stream read to its end that carried an error event reports
 * {@link FailureKind#SERVER_ERROR} when the error is the engine's (a 5xx, missing or non-integer {@code code}), and a
 * success when its {@code code} is 400-499: the request's fault, answered as any healthy worker would, reported as
 * an HTTP 4xx answer is (see {@link io.kvroute.openai.internal.FirstTokenScanner}).
 */
final class RoutedResponseBody extends ResponseBody {
  private final ResponseBody delegate;
  private final Routing routing;
  private final FirstTokenDetector detector;
  private @Nullable BufferedSource source;
  private volatile boolean firstTokenSeen;
  private final @Nullable Router reportTo;
  /** Set once the outcome was reported, or the caller gave up on the body: nothing more is reported. */
  private volatile boolean settled;

  private final Runnable onFailure;

  RoutedResponseBody(ResponseBody delegate, Routing routing, boolean watchForToken, @Nullable Router reportTo,
      Runnable onFailure) {
    this.delegate = delegate;
    this.routing = routing;
    this.reportTo = reportTo;
    this.onFailure = onFailure;
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

  /** The caller gave up on the body (closed or cancelled it): later failures are not the worker's. */
  void abandon() {
    settled = true;
  }

  private void reportEnd(@Nullable IOException failure) {
    Router router = reportTo;
    if (router == null || settled) {
      return;
    }
    settled = true;
    if (failure == null && detector.failed()) {
      // A 200 whose stream carried an engine error event (vLLM's streaming error with a 5xx or no code); one with
      // a 4xx code is the request's fault (detector.failed() is false): a success, as an HTTP 4xx answer is.
      router.reportFailure(routing.workerId(), FailureKind.SERVER_ERROR);
    } else if (failure == null) {
      router.reportSuccess(routing.workerId());
    } else {
      router.reportFailure(routing.workerId(), failure instanceof InterruptedIOException ? FailureKind.TIMEOUT
          : FailureKind.STREAM_CUT);
      onFailure.run();
    }
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
      } catch (IOException e) {
        reportEnd(e);
        routing.close();
        throw e;
      } catch (RuntimeException | Error e) {
        routing.close();
        throw e;
      }
      if (read == -1) {
        reportEnd(null);
        routing.close();
      } else if ((!firstTokenSeen || reportTo != null) && detector.onBytes(sink, sink.size() - read, read)
          && !firstTokenSeen) {
        firstTokenSeen = true;
        routing.firstToken();
      }
      return read;
    }

    @Override
    public void close() throws IOException {
      settled = true;
      try {
        super.close();
      } finally {
        routing.close();
      }
    }
  }
}
