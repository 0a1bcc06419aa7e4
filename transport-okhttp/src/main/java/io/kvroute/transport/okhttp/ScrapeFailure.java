package io.kvroute.transport.okhttp;

/** Why a scrape of a worker's metrics yielded no load; an enum, thread-safe. */
public enum ScrapeFailure {
  /** The connection could not be made or broke (refused, reset, closed early). */
  CONNECTION,
  /** The worker did not answer within the scrape timeout. */
  TIMEOUT,
  /** The worker answered with a status other than 2xx. */
  HTTP_STATUS,
  /** The response exceeded the size bound; it was not parsed. */
  TOO_LARGE,
  /** The response lacked a required metric or held an impossible value. */
  MALFORMED
}
