package io.kvroute.transport.okhttp;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

import io.kvroute.FailureKind;
import io.kvroute.Router;
import io.kvroute.Ticker;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.HttpUrl;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import okio.BufferedSource;
import org.jspecify.annotations.Nullable;

/**
 * Scrapes every registered worker's vLLM {@code /metrics} on a fixed delay and hands the load to the router with
 * {@link Router#updateLoad}; thread-safe: {@link #start}, {@link #scrapeNow} and {@link #close} may be called from
 * any thread, and the accessors read concurrently updated state.
 *
 * <pre>{@code
 * try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router)
 *     .interval(Duration.ofMillis(500))
 *     .build()) {
 *   scraper.start();
 *   ...                                  // policies now see Candidates#engineLoad
 * }
 * }</pre>
 *
 * <p>One scheduled thread (the builder's {@link Builder#executor}, or a daemon thread of its own) starts a round
 * every {@linkplain Builder#interval interval}: one asynchronous OkHttp call per registered worker that has an
 * {@linkplain Builder#endpointName HTTP endpoint}, so a slow worker delays no other. A worker whose previous scrape
 * is still in flight is skipped. Each call is bounded by the {@linkplain Builder#timeout timeout} and its response
 * by {@linkplain Builder#maxResponseBytes a size}. The response is read with a tolerant Prometheus text parser:
 * {@code vllm:num_requests_running} and {@code vllm:num_requests_waiting} are summed over label sets,
 * {@code vllm:kv_cache_usage_perc} (or the older {@code vllm:gpu_cache_usage_perc}) averaged, and the prefix cache
 * counters kept per worker ({@link #metrics}). Engines without vLLM's names are read by SGLang's
 * ({@code sglang:num_running_reqs}, {@code sglang:num_queue_reqs}, {@code sglang:token_usage}; no prefix counters).
 *
 * <p>Failures (refused connections, timeouts, non-2xx statuses, oversized or malformed responses) are counted by
 * {@link ScrapeFailure}, reported to the {@link ScrapeListener} and to the router's health model as
 * {@link FailureKind#SCRAPE_FAILED}, which makes the worker {@link io.kvroute.HealthState#SUSPECT} and forgets its
 * last load: a dead worker must not keep looking idle. They never stop the loop. A successful scrape reports no
 * success to the health model: an engine's metrics endpoint can answer while its generation fails, so only
 * forwarded requests clear a worker's failures. Through {@link System.Logger}, a worker's failures are logged at WARNING when they start or change
 * kind, at DEBUG while they repeat, and its recovery at INFO.
 */
public final class EngineMetricsScraper implements AutoCloseable {
  /** The default delay between rounds. */
  public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(1);
  /** The default bound of one scrape, from the start of the call to the last byte read. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
  /** The default response size bound: 1 MiB (vLLM's exposition is tens of KiB). */
  public static final long DEFAULT_MAX_RESPONSE_BYTES = 1 << 20;
  /** The default path of the metrics endpoint. */
  public static final String DEFAULT_PATH = "/metrics";

  private static final System.Logger logger = System.getLogger(EngineMetricsScraper.class.getName());
  private static final int NEW = 0;
  private static final int STARTED = 1;
  private static final int CLOSED = 2;

  private final Router router;
  private final OkHttpClient client;
  private final boolean ownsClient;
  private final ScheduledExecutorService scheduler;
  private final boolean ownsScheduler;
  private final Duration interval;
  private final Duration timeout;
  private final long maxResponseBytes;
  private final String endpointName;
  private final String path;
  private final @Nullable String engineLabel;
  private final ScrapeListener listener;
  private final Ticker ticker;

  private final AtomicInteger state = new AtomicInteger(NEW);
  private final ConcurrentHashMap<WorkerId, EngineMetrics> latest = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<WorkerId, InFlight> inFlight = new ConcurrentHashMap<>();
  /** Workers whose last scrape failed, and how: failures are logged at WARNING when they start or change. */
  private final ConcurrentHashMap<WorkerId, ScrapeFailure> failing = new ConcurrentHashMap<>();
  /** Workers the listener has heard of, to tell it when they are gone. */
  private final Set<WorkerId> heardOf = ConcurrentHashMap.newKeySet();
  private final LongAdder scrapes = new LongAdder();
  private final LongAdder malformedLines = new LongAdder();
  private final LongAdder[] failures = new LongAdder[ScrapeFailure.values().length];
  private volatile @Nullable ScheduledFuture<?> task;

  private EngineMetricsScraper(Builder b) {
    this.router = b.router;
    this.interval = b.interval;
    this.timeout = b.timeout;
    this.maxResponseBytes = b.maxResponseBytes;
    this.endpointName = b.endpointName;
    this.path = b.path;
    this.engineLabel = b.engineLabel;
    this.listener = b.listener;
    this.ticker = b.ticker;
    if (b.client != null) {
      this.client = b.client.newBuilder().callTimeout(timeout).build();
      this.ownsClient = false;
    } else {
      Dispatcher dispatcher = new Dispatcher();
      dispatcher.setMaxRequests(256);
      dispatcher.setMaxRequestsPerHost(256); // workers often share a host (data-parallel ranks, loopback tests)
      this.client = new OkHttpClient.Builder().dispatcher(dispatcher).socketFactory(new NoDelaySocketFactory())
          .callTimeout(timeout).build();
      this.ownsClient = true;
    }
    if (b.executor != null) {
      this.scheduler = b.executor;
      this.ownsScheduler = false;
    } else {
      this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "kvroute-metrics-scraper");
        t.setDaemon(true);
        return t;
      });
      this.ownsScheduler = true;
    }
    for (int i = 0; i < failures.length; i++) {
      failures[i] = new LongAdder();
    }
  }

  /**
   * Returns a builder scraping the workers of {@code router}.
   *
   * @param router the router whose registered workers are scraped and whose loads are updated
   * @return a new builder
   * @throws NullPointerException if {@code router} is null
   */
  public static Builder newBuilder(Router router) {
    return new Builder(router);
  }

  /**
   * Starts scraping: the first round at once, then one every interval after the previous round was started.
   *
   * @throws IllegalStateException if already started or closed
   */
  public void start() {
    if (!state.compareAndSet(NEW, STARTED)) {
      throw new IllegalStateException(state.get() == CLOSED ? "the scraper is closed" : "already started");
    }
    task = scheduler.scheduleWithFixedDelay(this::tick, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Scrapes every registered worker once, now, and returns when each scrape has finished or failed (at most about
   * two timeouts later), so that {@link #metrics} and the router's loads reflect the engines as they were after
   * this call began. Scrapes in flight are waited for first, since they may have read the engines earlier. Works
   * whether or not the scraper was started.
   *
   * @throws IllegalStateException if closed
   * @throws InterruptedException if interrupted while waiting
   */
  public void scrapeNow() throws InterruptedException {
    if (state.get() == CLOSED) {
      throw new IllegalStateException("the scraper is closed");
    }
    try {
      CompletableFuture.allOf(inFlight.values().stream().map(f -> f.done).toArray(CompletableFuture[]::new)).get();
      round().get();
    } catch (ExecutionException e) {
      throw new IllegalStateException("a scrape round failed", e.getCause()); // rounds never complete exceptionally
    }
  }

  /**
   * The last metrics read from {@code worker}, if any was read while it was registered.
   *
   * @param worker the worker's id
   * @return the last metrics read from it, or empty if none was read (or it is not registered)
   */
  public Optional<EngineMetrics> metrics(WorkerId worker) {
    return Optional.ofNullable(latest.get(worker));
  }

  /**
   * The last metrics of every registered worker that has been scraped.
   *
   * @return an immutable copy, by worker id, of each scraped worker's last metrics
   */
  public Map<WorkerId, EngineMetrics> allMetrics() {
    return Map.copyOf(latest);
  }

  /**
   * Scrapes that succeeded and updated a load.
   *
   * @return the count of successful scrapes since the scraper was built
   */
  public long scrapeCount() {
    return scrapes.sum();
  }

  /**
   * Scrapes that failed for {@code failure}.
   *
   * @param failure the kind of failure to count
   * @return the count of such failed scrapes since the scraper was built
   */
  public long failureCount(ScrapeFailure failure) {
    return failures[failure.ordinal()].sum();
  }

  /**
   * Scrapes that failed, for any reason.
   *
   * @return the count of failed scrapes of every kind since the scraper was built
   */
  public long failureCount() {
    long sum = 0;
    for (LongAdder adder : failures) {
      sum += adder.sum();
    }
    return sum;
  }

  /**
   * Lines of otherwise readable responses that could not be parsed and were skipped.
   *
   * @return the count of skipped lines since the scraper was built
   */
  public long malformedLineCount() {
    return malformedLines.sum();
  }

  /** Stops scraping and cancels scrapes in flight; an own thread and client are shut down. Idempotent. */
  @Override
  public void close() {
    if (state.getAndSet(CLOSED) == CLOSED) {
      return;
    }
    ScheduledFuture<?> t = task;
    if (t != null) {
      t.cancel(false);
    }
    if (ownsScheduler) {
      scheduler.shutdownNow(); // a round never blocks, so nothing is interrupted midway
    }
    for (InFlight f : inFlight.values()) {
      f.call.cancel();
    }
    if (ownsClient) {
      client.dispatcher().executorService().shutdown();
      client.connectionPool().evictAll();
    }
  }

  @Override
  public String toString() {
    return "EngineMetricsScraper{interval=" + interval + ", timeout=" + timeout + ", scrapes=" + scrapeCount()
        + ", failures=" + failureCount() + (state.get() == CLOSED ? ", closed" : "") + "}";
  }

  private void tick() {
    try {
      round();
    } catch (Throwable t) {
      logger.log(WARNING, "metrics scrape round failed to start; the next round will try again", t);
    }
  }

  private CompletableFuture<Void> round() {
    List<Worker> workers = router.workers().snapshot();
    Set<WorkerId> registered = new HashSet<>();
    List<CompletableFuture<Void>> pending = new ArrayList<>(workers.size());
    for (Worker worker : workers) {
      registered.add(worker.id());
      URI base = worker.endpoint(endpointName);
      if (base == null || state.get() == CLOSED) {
        continue; // in-process workers have no endpoint to scrape
      }
      InFlight running = inFlight.get(worker.id());
      if (running != null) {
        pending.add(running.done);
        continue;
      }
      HttpUrl url;
      try {
        url = Urls.resolve(base, path);
      } catch (IllegalArgumentException e) {
        fail(worker.id(), ScrapeFailure.CONNECTION, e.getMessage(), e);
        continue;
      }
      Request request = new Request.Builder().url(url).header("Accept", "text/plain; version=0.0.4").get().build();
      InFlight scrape = new InFlight(client.newCall(request));
      InFlight raced = inFlight.putIfAbsent(worker.id(), scrape);
      if (raced != null) {
        pending.add(raced.done);
        continue;
      }
      pending.add(scrape.done);
      try {
        scrape.call.enqueue(new ScrapeCallback(worker.id(), scrape));
      } catch (RuntimeException e) { // the dispatcher was shut down
        finish(worker.id(), scrape);
        throw e;
      }
    }
    latest.keySet().retainAll(registered);
    failing.keySet().retainAll(registered);
    for (WorkerId id : heardOf) {
      if (!registered.contains(id) && heardOf.remove(id)) {
        try {
          listener.onWorkerGone(id);
        } catch (Throwable t) {
          logger.log(WARNING, "ScrapeListener.onWorkerGone threw; ignored", t);
        }
      }
    }
    return CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new));
  }

  private void finish(WorkerId id, InFlight scrape) {
    inFlight.remove(id, scrape);
    scrape.done.complete(null);
  }

  private void fail(WorkerId id, ScrapeFailure failure, String detail, @Nullable Throwable cause) {
    failures[failure.ordinal()].increment();
    try {
      router.reportFailure(id, FailureKind.SCRAPE_FAILED);
    } catch (RuntimeException e) {
      logger.log(WARNING, "reporting a scrape failure to the router failed; ignored", e);
    }
    if (failing.put(id, failure) != failure) {
      logger.log(WARNING, () -> "scraping the metrics of " + id + " fails (" + failure + "): " + detail
          + "; the router forgets its last load and marks it suspect (logged again when the failure changes)");
    } else {
      logger.log(DEBUG, () -> "scraping " + id + " failed (" + failure + "): " + detail);
    }
    heardOf.add(id);
    try {
      listener.onScrapeFailed(id, failure, detail, cause);
    } catch (Throwable t) {
      logger.log(WARNING, "ScrapeListener.onScrapeFailed threw; ignored", t);
    }
  }

  private void read(WorkerId id, Response response) throws IOException {
    if (!response.isSuccessful()) {
      fail(id, ScrapeFailure.HTTP_STATUS, "HTTP " + response.code(), null);
      return;
    }
    long declared = response.body().contentLength();
    if (declared > maxResponseBytes) {
      fail(id, ScrapeFailure.TOO_LARGE, "Content-Length " + declared + " exceeds " + maxResponseBytes, null);
      return;
    }
    BufferedSource source = response.body().source();
    if (source.request(maxResponseBytes + 1)) {
      fail(id, ScrapeFailure.TOO_LARGE, "the response exceeds " + maxResponseBytes + " bytes", null);
      return;
    }
    String text = new String(source.readByteArray(), StandardCharsets.UTF_8); // lenient: bad bytes become U+FFFD
    LoadMetrics.Result result;
    try {
      result = LoadMetrics.read(id, text, engineLabel, ticker.read());
    } catch (LoadMetrics.MalformedMetricsException e) {
      fail(id, ScrapeFailure.MALFORMED, e.getMessage(), null);
      return;
    }
    EngineMetrics metrics = result.metrics();
    if (result.malformedLines() > 0) {
      malformedLines.add(result.malformedLines());
    }
    if (!router.updateLoad(id, metrics.toEngineLoad())) {
      latest.remove(id); // removed while the scrape was in flight
      return;
    }
    latest.put(id, metrics);
    if (failing.remove(id) != null) {
      logger.log(INFO, () -> "scraping the metrics of " + id + " works again");
    }
    if (!router.workers().find(id).isPresent()) {
      latest.remove(id); // removed between the update and the put
    }
    scrapes.increment();
    heardOf.add(id);
    try {
      listener.onScraped(metrics, result.malformedLines());
    } catch (Throwable t) {
      logger.log(WARNING, "ScrapeListener.onScraped threw; ignored", t);
    }
  }

  private static final class InFlight {
    final Call call;
    final CompletableFuture<Void> done = new CompletableFuture<>();

    InFlight(Call call) {
      this.call = call;
    }
  }

  private final class ScrapeCallback implements Callback {
    private final WorkerId id;
    private final InFlight scrape;

    ScrapeCallback(WorkerId id, InFlight scrape) {
      this.id = id;
      this.scrape = scrape;
    }

    @Override
    public void onFailure(Call call, IOException e) {
      try {
        if (state.get() != CLOSED || !call.isCanceled()) {
          fail(id, e instanceof InterruptedIOException ? ScrapeFailure.TIMEOUT : ScrapeFailure.CONNECTION,
              e.toString(), e);
        }
      } finally {
        finish(id, scrape);
      }
    }

    @Override
    public void onResponse(Call call, Response response) {
      try (response) {
        read(id, response);
      } catch (IOException e) {
        if (state.get() != CLOSED || !call.isCanceled()) {
          fail(id, e instanceof InterruptedIOException ? ScrapeFailure.TIMEOUT : ScrapeFailure.CONNECTION,
              e.toString(), e);
        }
      } catch (Throwable t) {
        logger.log(WARNING, "reading the metrics of " + id + " failed unexpectedly", t);
        fail(id, ScrapeFailure.MALFORMED, t.toString(), t);
      } finally {
        finish(id, scrape);
      }
    }
  }

  /** Configures an {@link EngineMetricsScraper}; not thread-safe. */
  public static final class Builder {
    private final Router router;
    private @Nullable OkHttpClient client;
    private @Nullable ScheduledExecutorService executor;
    private Duration interval = DEFAULT_INTERVAL;
    private Duration timeout = DEFAULT_TIMEOUT;
    private long maxResponseBytes = DEFAULT_MAX_RESPONSE_BYTES;
    private String endpointName = Worker.HTTP;
    private String path = DEFAULT_PATH;
    private @Nullable String engineLabel;
    private ScrapeListener listener = ScrapeListener.NONE;
    private Ticker ticker = Ticker.systemTicker();

    private Builder(Router router) {
      this.router = Objects.requireNonNull(router, "router");
    }

    /**
     * The client to derive the scraper's from (sharing its connection pool and dispatcher; it is not shut down by
     * {@link #close}). Default: a client of the scraper's own.
     *
     * @param client the client to derive from, not null
     * @return this builder
     */
    public Builder client(OkHttpClient client) {
      this.client = Objects.requireNonNull(client, "client");
      return this;
    }

    /**
     * The scheduler to run rounds on (it is not shut down by {@link #close}; a round only starts calls, so a shared
     * scheduler is fine). Default: one daemon thread of the scraper's own.
     *
     * @param executor the scheduler, not null
     * @return this builder
     */
    public Builder executor(ScheduledExecutorService executor) {
      this.executor = Objects.requireNonNull(executor, "executor");
      return this;
    }

    /**
     * The delay from the start of one round to the start of the next (default {@link #DEFAULT_INTERVAL}).
     *
     * @param interval the round interval, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder interval(Duration interval) {
      this.interval = Checks.positive("interval", interval);
      return this;
    }

    /**
     * The bound of each scrape, from the start of the call to the last byte read (default
     * {@link #DEFAULT_TIMEOUT}).
     *
     * @param timeout the bound of one scrape, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder timeout(Duration timeout) {
      this.timeout = Checks.positive("timeout", timeout);
      return this;
    }

    /**
     * Larger responses are counted as {@link ScrapeFailure#TOO_LARGE} and not parsed (default
     * {@link #DEFAULT_MAX_RESPONSE_BYTES}).
     *
     * @param maxResponseBytes the largest response accepted, in bytes, positive
     * @return this builder
     * @throws IllegalArgumentException if not positive
     */
    public Builder maxResponseBytes(long maxResponseBytes) {
      this.maxResponseBytes = Checks.byteLimit("maxResponseBytes", maxResponseBytes);
      return this;
    }

    /**
     * The name of the worker endpoint to scrape (default {@link Worker#HTTP}).
     *
     * @param endpointName an endpoint name of the workers, such as {@link Worker#HTTP}
     * @return this builder
     */
    public Builder endpointName(String endpointName) {
      this.endpointName = Objects.requireNonNull(endpointName, "endpointName");
      return this;
    }

    /**
     * The metrics path, appended to the endpoint's path (default {@link #DEFAULT_PATH}).
     *
     * @param path the path, starting with '/'
     * @return this builder
     * @throws IllegalArgumentException if it does not start with '/'
     */
    public Builder path(String path) {
      this.path = Urls.checkPath(Objects.requireNonNull(path, "path"), "path");
      return this;
    }

    /**
     * Counts, for a worker of data-parallel rank {@code r}, only the samples whose label {@code engineLabel} is
     * {@code r} (vLLM labels each engine core's metrics with {@code engine}), for deployments that register each
     * rank of one server as its own worker. Default null: every label set counts.
     *
     * @param engineLabel the label name carrying the rank, such as {@code engine}, or null for none
     * @return this builder
     */
    public Builder engineLabel(@Nullable String engineLabel) {
      this.engineLabel = engineLabel;
      return this;
    }

    /**
     * Hears every scrape's outcome (default {@link ScrapeListener#NONE}).
     *
     * @param listener the listener, not null; it is called on OkHttp's threads and must not block
     * @return this builder
     */
    public Builder listener(ScrapeListener listener) {
      this.listener = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * The clock that stamps {@link EngineMetrics#observedAtNanos}; use the router's (default
     * {@link Ticker#systemTicker()}, as the router's default).
     *
     * @param ticker the clock, not null; the router's, so observation times compare with its own
     * @return this builder
     */
    public Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /**
     * Builds the scraper; it scrapes nothing until {@link EngineMetricsScraper#start} or {@code scrapeNow}.
     *
     * @return a new, not yet started scraper
     */
    public EngineMetricsScraper build() {
      return new EngineMetricsScraper(this);
    }
  }
}
