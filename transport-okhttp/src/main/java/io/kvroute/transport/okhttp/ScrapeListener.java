package io.kvroute.transport.okhttp;

import io.kvroute.WorkerId;
import org.jspecify.annotations.Nullable;

/**
 * Hears the outcome of every scrape of {@link EngineMetricsScraper}; implementations must be thread-safe, and every
 * method must execute fast, without external locking, and must not throw (what it throws is logged and ignored).
 *
 * <p>Methods run on OkHttp's dispatcher threads. All methods default to doing nothing; {@link #NONE} is the no-op
 * instance.
 */
public interface ScrapeListener {
  /** A listener that ignores everything. */
  ScrapeListener NONE = new ScrapeListener() {};

  /**
   * A worker's metrics were read and its load handed to the router.
   *
   * @param metrics what was read: the worker, its load and prefix cache counters
   * @param malformedLines lines of the response that could not be read and were skipped
   */
  default void onScraped(EngineMetrics metrics, int malformedLines) {}

  /**
   * A scrape failed; the router forgot the worker's last load and heard
   * {@link io.kvroute.FailureKind#SCRAPE_FAILED}.
   *
   * @param worker the worker whose scrape failed
   * @param failure the kind of failure: connection, timeout, HTTP status, too large or malformed
   * @param detail a human-readable description for logs, such as the status line or error message
   * @param cause the I/O error, or null when the response itself was the problem
   */
  default void onScrapeFailed(WorkerId worker, ScrapeFailure failure, String detail, @Nullable Throwable cause) {}

  /**
   * A worker this listener heard of is no longer registered with the router (seen at the start of the next scrape
   * round), so that what is kept per worker, such as its last load's gauges, can go with it.
   *
   * @param worker the worker that was removed
   */
  default void onWorkerGone(WorkerId worker) {}
}
