package io.kvroute;

/**
 * A routing outcome a gateway maps directly onto an HTTP status; immutable, thread-safe.
 *
 * <p>{@link #httpStatus()} is the status to answer the client with and {@link #reason()} a machine-readable cause
 * (each subclass narrows it to its own enum), so a gateway needs no {@code instanceof} ladder:
 * <pre>{@code
 * } catch (RoutingException e) {
 *   respond(e.httpStatus(), e.reason().name(), e.getMessage());
 * }
 * }</pre>
 */
public abstract class RoutingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message the detail message, for logs and the client
   * @param cause the underlying failure, or null
   */
  protected RoutingException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * The HTTP status a gateway should answer with, for example 503.
   *
   * @return an HTTP status code: 400, 404, 502, 503 or 504 for kvroute's own subclasses
   */
  public abstract int httpStatus();

  /**
   * The machine-readable cause; each subclass returns its own enum.
   *
   * @return the reason constant, never null
   */
  public abstract Enum<?> reason();
}
