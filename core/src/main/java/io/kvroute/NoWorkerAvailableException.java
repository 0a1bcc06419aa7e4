package io.kvroute;

/**
 * Thrown by {@link Router#select} when no registered worker may serve the request (none registered, or none
 * allowed by the request's model, LoRA adapter or allow-list); immutable, thread-safe.
 */
public final class NoWorkerAvailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public NoWorkerAvailableException(String message) {
    super(message);
  }
}
