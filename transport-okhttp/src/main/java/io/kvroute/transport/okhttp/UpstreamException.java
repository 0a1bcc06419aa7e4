package io.kvroute.transport.okhttp;

import io.kvroute.RoutingException;
import io.kvroute.WorkerId;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A forwarded request failed between the gateway and the worker before any response header arrived: 502 when
 * the worker could not be reached or the connection broke, 504 when it did not answer within the attempt's budget;
 * immutable, thread-safe.
 *
 * <p>{@link #workerId()} names the worker of the last attempt (null when tokenizing failed before any was chosen);
 * earlier attempts' failures, when connecting failed and the request was routed again, are
 * {@linkplain #getSuppressed() suppressed} on it.
 */
public final class UpstreamException extends RoutingException {
  private static final long serialVersionUID = 1L;

  /** What failed, with its HTTP status; immutable (an enum), thread-safe. */
  public enum Reason {
    /**
     * No worker could be connected to (refused, unreachable, connect timeout, no endpoint) in any attempt: the
     * request reached no engine. 502.
     */
    CONNECT_FAILED(502),
    /**
     * A streamed request got no response header within the first-byte budget. The request may have reached the
     * engine, so it was not sent elsewhere. 504.
     */
    FIRST_BYTE_TIMEOUT(504),
    /**
     * The worker went silent for longer than the read budget while the response was awaited (the idle budget of a
     * streamed request, the response budget of a non-streamed one). Not sent elsewhere. 504.
     */
    RESPONSE_TIMEOUT(504),
    /**
     * The connection broke (reset, closed) after the request was sent and before a response header arrived. Not
     * sent elsewhere: the engine may be processing it. 502.
     */
    CONNECTION_LOST(502),
    /** The tokenizer that reads text prompts could not be reached or answered an error of its own. 502. */
    TOKENIZER_FAILED(502);

    private final int httpStatus;

    Reason(int httpStatus) {
      this.httpStatus = httpStatus;
    }

    /**
     * The HTTP status a gateway answers with.
     *
     * @return 502 when the upstream could not be reached or broke, 504 when it timed out
     */
    public int httpStatus() {
      return httpStatus;
    }
  }

  /** What failed. */
  private final Reason reason;
  /** The worker of the failed attempt, or null. */
  private final @Nullable WorkerId workerId;

  /**
   * @param reason what failed
   * @param workerId the worker of the failed attempt, or null when none was chosen
   * @param message the detail message, naming the worker and the budget
   * @param cause the I/O failure, or null
   */
  public UpstreamException(Reason reason, @Nullable WorkerId workerId, String message, @Nullable Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
    this.workerId = workerId;
  }

  @Override
  public int httpStatus() {
    return reason.httpStatus();
  }

  @Override
  public Reason reason() {
    return reason;
  }

  /**
   * The worker of the failed attempt, or null when tokenizing failed before one was chosen.
   *
   * @return the worker id, or null when no worker was chosen
   */
  public @Nullable WorkerId workerId() {
    return workerId;
  }
}
