package io.kvroute.transport.okhttp;

import io.kvroute.Routing;
import io.kvroute.WorkerId;
import java.io.Closeable;
import java.util.List;
import okhttp3.Call;
import okhttp3.Response;
import okhttp3.ResponseBody;

/**
 * The upstream response of a forwarded request, tied to its routing handle; not thread-safe, except
 * {@link #cancel} and {@link #close}, which may be called from any thread.
 *
 * <p>Read the body as any OkHttp response body: the handle hears {@link Routing#firstToken()} when the first
 * output token arrives, and is closed when the body is exhausted, fails, or is closed, or when this response is
 * closed or cancelled. Always close it (try-with-resources); a handle never closed keeps its booking until the
 * router's booking timeout.
 */
public final class ForwardedResponse implements Closeable {
  private final Response response;
  private final RoutedResponseBody body;
  private final Routing routing;
  private final Call call;
  private final List<WorkerId> failedWorkers;

  ForwardedResponse(Response response, RoutedResponseBody body, Routing routing, Call call,
      List<WorkerId> failedWorkers) {
    this.response = response;
    this.body = body;
    this.routing = routing;
    this.call = call;
    this.failedWorkers = failedWorkers;
  }

  /**
   * The upstream response; its body is the routed one ({@link #body()}).
   *
   * @return the OkHttp response, whose status and headers are the upstream's; read the body through {@link #body()}
   */
  public Response response() {
    return response;
  }

  /**
   * The upstream status code.
   *
   * @return the HTTP status code, such as 200
   */
  public int code() {
    return response.code();
  }

  /**
   * The upstream body; reading it to the end or closing it releases the routing handle.
   *
   * @return the body; it watches for the first output token and releases the routing handle when done
   */
  public ResponseBody body() {
    return body;
  }

  /**
   * The routing handle of the worker that answered.
   *
   * @return the routing handle, still open until the body is read to the end or closed
   */
  public Routing routing() {
    return routing;
  }

  /**
   * The worker that answered.
   *
   * @return the worker's id
   */
  public WorkerId workerId() {
    return routing.workerId();
  }

  /**
   * Workers tried before, that could not be connected to, in order.
   *
   * @return the ids of the workers that failed to connect before this one, oldest first; empty if the first answered
   */
  public List<WorkerId> failedWorkers() {
    return failedWorkers;
  }

  /**
   * Whether the first output token has been read from the body (for a non-2xx response: true).
   *
   * @return true once the first output token was read (at once for a non-2xx response)
   */
  public boolean firstTokenSeen() {
    return body.firstTokenSeen();
  }

  /** Cancels the upstream call: a read in progress fails, and the routing handle is closed. */
  public void cancel() {
    body.abandon();
    call.cancel();
    routing.close();
  }

  /** Closes the body and the routing handle. Idempotent. */
  @Override
  public void close() {
    body.abandon();
    try {
      response.close();
    } finally {
      routing.close();
    }
  }

  @Override
  public String toString() {
    return "ForwardedResponse{" + response.code() + " from " + routing.workerId()
        + (failedWorkers.isEmpty() ? "" : " after " + failedWorkers + " failed") + "}";
  }
}
