package io.kvroute.spring.gateway;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * The {@code kvroute.*} properties of a Spring Cloud Gateway application; not thread-safe (Spring binds it once at
 * start-up, after which the auto-configuration only reads it).
 *
 * <pre>{@code
 * kvroute:
 *   policy: kv-aware
 *   workers:
 *     - id: vllm-0
 *       url: http://10.0.0.5:8000
 *       events: tcp://10.0.0.5:5557
 * }</pre>
 *
 * <p>Setters validate their value and name the property in the message, so that a typo fails the application's
 * start-up rather than a request.
 */
@ConfigurationProperties(prefix = KvRouteProperties.PREFIX)
public class KvRouteProperties {
  /** The prefix of every property. */
  public static final String PREFIX = "kvroute";

  /** Whether kvroute's auto-configuration is active. */
  private boolean enabled = true;

  /** Tokens per KV block; must equal the engines' block size (vLLM's --block-size). */
  private int blockSize = 16;

  /** The routing policy. */
  private PolicyName policy = PolicyName.KV_AWARE;

  /** How long a request's booked load is kept when it is never released (a safety net for lost handles). */
  private Duration bookingTimeout = Duration.ofMinutes(5);

  /** The most block entries the KV index holds before it evicts the least recently stored ones. */
  private int maxIndexEntries = 4_194_304;

  /** The seed of the router's random tie-breaks and sampling, for reproducible choices. */
  private long randomSeed = 0;

  /** Prompts longer than this many tokens are refused with 400 before selection. */
  private int maxPromptTokens = 1_048_576;

  /** The most bytes of a request body the filter reads to tokenize it; larger bodies get 413. */
  private DataSize maxRequestBody = DataSize.ofMegabytes(16);

  /**
   * How many workers one request may try when a worker refuses the connection (so the request never reached it);
   * 1 disables fail-over.
   */
  private int maxAttempts = 3;

  /** The workers to route to. */
  private List<WorkerProperties> workers = new ArrayList<>();

  private final KvAware kvAware = new KvAware();
  private final CacheAffinity cacheAffinity = new CacheAffinity();
  private final Approximate approximate = new Approximate();
  private final Events events = new Events();
  private final Metrics metrics = new Metrics();
  private final TokenizerProperties tokenizer = new TokenizerProperties();
  private final Headers headers = new Headers();
  private final Health health = new Health();

  /** The routing policies, by their property value ({@code kv-aware}, {@code cache-affinity}, …). */
  public enum PolicyName {
    /** Dynamo's KV-aware cost: prefill tokens not cached plus decode load ({@code kvroute.kv-aware.*}). */
    KV_AWARE,
    /** A prefix's home worker while it is not overloaded ({@code kvroute.cache-affinity.*}). */
    CACHE_AFFINITY,
    /** The KV-aware cost over the router's own predictions, for engines without KV events. */
    APPROXIMATE,
    /** The fewest active requests. */
    LEAST_LOADED,
    /** Each worker in turn. */
    ROUND_ROBIN,
    /** A uniformly random worker. */
    RANDOM
  }

  static void check(boolean ok, String property, Object value, String rule) {
    if (!ok) {
      throw new IllegalArgumentException(PREFIX + "." + property + " " + rule + " but was " + value);
    }
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public int getBlockSize() {
    return blockSize;
  }

  public void setBlockSize(int blockSize) {
    check(blockSize > 0, "block-size", blockSize, "must be positive");
    this.blockSize = blockSize;
  }

  public PolicyName getPolicy() {
    return policy;
  }

  public void setPolicy(PolicyName policy) {
    this.policy = Objects.requireNonNull(policy, PREFIX + ".policy");
  }

  public Duration getBookingTimeout() {
    return bookingTimeout;
  }

  public void setBookingTimeout(Duration bookingTimeout) {
    check(bookingTimeout != null && bookingTimeout.compareTo(Duration.ZERO) > 0, "booking-timeout", bookingTimeout,
        "must be positive");
    this.bookingTimeout = bookingTimeout;
  }

  public int getMaxIndexEntries() {
    return maxIndexEntries;
  }

  public void setMaxIndexEntries(int maxIndexEntries) {
    check(maxIndexEntries > 0, "max-index-entries", maxIndexEntries, "must be positive");
    this.maxIndexEntries = maxIndexEntries;
  }

  public long getRandomSeed() {
    return randomSeed;
  }

  public void setRandomSeed(long randomSeed) {
    this.randomSeed = randomSeed;
  }

  public int getMaxPromptTokens() {
    return maxPromptTokens;
  }

  public void setMaxPromptTokens(int maxPromptTokens) {
    check(maxPromptTokens > 0, "max-prompt-tokens", maxPromptTokens, "must be positive");
    this.maxPromptTokens = maxPromptTokens;
  }

  public DataSize getMaxRequestBody() {
    return maxRequestBody;
  }

  public void setMaxRequestBody(DataSize maxRequestBody) {
    check(maxRequestBody != null && maxRequestBody.toBytes() > 0 && maxRequestBody.toBytes() <= Integer.MAX_VALUE,
        "max-request-body", maxRequestBody, "must be in [1B, 2GB)");
    this.maxRequestBody = maxRequestBody;
  }

  public int getMaxAttempts() {
    return maxAttempts;
  }

  public void setMaxAttempts(int maxAttempts) {
    check(maxAttempts >= 1 && maxAttempts <= 16, "max-attempts", maxAttempts, "must be in [1, 16]");
    this.maxAttempts = maxAttempts;
  }

  public List<WorkerProperties> getWorkers() {
    return workers;
  }

  public void setWorkers(List<WorkerProperties> workers) {
    this.workers = Objects.requireNonNull(workers, PREFIX + ".workers");
  }

  public KvAware getKvAware() {
    return kvAware;
  }

  public CacheAffinity getCacheAffinity() {
    return cacheAffinity;
  }

  public Approximate getApproximate() {
    return approximate;
  }

  public Events getEvents() {
    return events;
  }

  public Metrics getMetrics() {
    return metrics;
  }

  public TokenizerProperties getTokenizer() {
    return tokenizer;
  }

  public Headers getHeaders() {
    return headers;
  }

  public Health getHealth() {
    return health;
  }

  /**
   * When a failing worker is taken out of routing: consecutive refused connections, 5xx responses and cut streams
   * eject it; after a backoff one request probes it.
   */
  public static class Health {
    /** How many consecutive failures eject a worker. */
    private int ejectAfterFailures = 3;

    /** How long an ejected worker stays out before one request probes it, after its first ejection. */
    private Duration initialBackoff = Duration.ofSeconds(1);

    /** The longest backoff; it doubles with each ejection in a row up to this. */
    private Duration maxBackoff = Duration.ofSeconds(30);

    public int getEjectAfterFailures() {
      return ejectAfterFailures;
    }

    public void setEjectAfterFailures(int ejectAfterFailures) {
      check(ejectAfterFailures > 0, "health.eject-after-failures", ejectAfterFailures, "must be positive");
      this.ejectAfterFailures = ejectAfterFailures;
    }

    public Duration getInitialBackoff() {
      return initialBackoff;
    }

    public void setInitialBackoff(Duration initialBackoff) {
      check(initialBackoff != null && initialBackoff.compareTo(Duration.ZERO) > 0, "health.initial-backoff",
          initialBackoff, "must be positive");
      this.initialBackoff = initialBackoff;
    }

    public Duration getMaxBackoff() {
      return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
      check(maxBackoff != null && maxBackoff.compareTo(Duration.ZERO) > 0, "health.max-backoff", maxBackoff,
          "must be positive");
      this.maxBackoff = maxBackoff;
    }
  }

  /** One worker: an engine server's HTTP base URL and, optionally, where it publishes its KV events. */
  public static class WorkerProperties {
    /** The worker's name, unique among the workers; defaults to its URL's host and port. */
    private @Nullable String id;

    /** The engine's HTTP base URL, for example http://10.0.0.5:8000. */
    private @Nullable URI url;

    /** The engine's ZeroMQ KV event endpoint (vLLM's kv-events-config endpoint), for example tcp://10.0.0.5:5557. */
    private @Nullable String events;

    /** The engine's ZeroMQ replay endpoint (vLLM's replay_endpoint), used to recover lost event batches. */
    private @Nullable String replay;

    /** The KV event topic (vLLM's topic; empty subscribes to every topic). */
    private String topic = "";

    /** How many data-parallel ranks the engine runs; rank r publishes on the event port plus r. */
    private int dataParallelRanks = 1;

    /** The model the worker serves; requests naming another model are not routed to it. Empty serves any. */
    private @Nullable String model;

    public @Nullable String getId() {
      return id;
    }

    public void setId(@Nullable String id) {
      check(id == null || !id.isBlank(), "workers[].id", "'" + id + "'", "must not be blank");
      this.id = id;
    }

    public @Nullable URI getUrl() {
      return url;
    }

    public void setUrl(@Nullable URI url) {
      if (url != null) {
        String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
        check((scheme.equals("http") || scheme.equals("https")) && url.getHost() != null, "workers[].url", url,
            "must be an http or https URL with a host");
      }
      this.url = url;
    }

    public @Nullable String getEvents() {
      return events;
    }

    public void setEvents(@Nullable String events) {
      this.events = blankToNull(events);
    }

    public @Nullable String getReplay() {
      return replay;
    }

    public void setReplay(@Nullable String replay) {
      this.replay = blankToNull(replay);
    }

    public String getTopic() {
      return topic;
    }

    public void setTopic(@Nullable String topic) {
      this.topic = topic == null ? "" : topic;
    }

    public int getDataParallelRanks() {
      return dataParallelRanks;
    }

    public void setDataParallelRanks(int dataParallelRanks) {
      check(dataParallelRanks >= 1 && dataParallelRanks <= 1024, "workers[].data-parallel-ranks", dataParallelRanks,
          "must be in [1, 1024]");
      this.dataParallelRanks = dataParallelRanks;
    }

    public @Nullable String getModel() {
      return model;
    }

    public void setModel(@Nullable String model) {
      this.model = blankToNull(model);
    }
  }

  /** Parameters of the {@code kv-aware} and {@code approximate} policies' cost. */
  public static class KvAware {
    /** Weight of the prefill term; higher favours cache hits (TTFT), lower favours balance. 1.0 is Dynamo's. */
    private double overlapWeight = 1.0;

    /** 0 picks the lowest cost; above 0 samples a softmax over normalised costs. */
    private double temperature = 0.0;

    /** How much a block cached in host memory counts compared with one on the GPU, in [0, 1]. */
    private double hostOverlapCredit = 0.75;

    public double getOverlapWeight() {
      return overlapWeight;
    }

    public void setOverlapWeight(double overlapWeight) {
      check(overlapWeight >= 0 && Double.isFinite(overlapWeight), "kv-aware.overlap-weight", overlapWeight,
          "must be finite and >= 0");
      this.overlapWeight = overlapWeight;
    }

    public double getTemperature() {
      return temperature;
    }

    public void setTemperature(double temperature) {
      check(temperature >= 0 && Double.isFinite(temperature), "kv-aware.temperature", temperature,
          "must be finite and >= 0");
      this.temperature = temperature;
    }

    public double getHostOverlapCredit() {
      return hostOverlapCredit;
    }

    public void setHostOverlapCredit(double hostOverlapCredit) {
      check(hostOverlapCredit >= 0 && hostOverlapCredit <= 1, "kv-aware.host-overlap-credit", hostOverlapCredit,
          "must be in [0, 1]");
      this.hostOverlapCredit = hostOverlapCredit;
    }
  }

  /** Parameters of the {@code cache-affinity} policy. */
  public static class CacheAffinity {
    /** How many leading blocks identify a prefix's home worker. */
    private int homeBlocks = 8;

    /** A worker is overloaded at (1 + load-factor) x (others' mean active requests + 1). */
    private double loadFactor = 2.0;

    /** The share of the prompt a worker must hold to attract the request by its cache, in [0, 1]. */
    private double minOverlapFraction = 0.25;

    public int getHomeBlocks() {
      return homeBlocks;
    }

    public void setHomeBlocks(int homeBlocks) {
      check(homeBlocks > 0, "cache-affinity.home-blocks", homeBlocks, "must be positive");
      this.homeBlocks = homeBlocks;
    }

    public double getLoadFactor() {
      return loadFactor;
    }

    public void setLoadFactor(double loadFactor) {
      check(loadFactor >= 0 && Double.isFinite(loadFactor), "cache-affinity.load-factor", loadFactor,
          "must be finite and >= 0");
      this.loadFactor = loadFactor;
    }

    public double getMinOverlapFraction() {
      return minOverlapFraction;
    }

    public void setMinOverlapFraction(double minOverlapFraction) {
      check(minOverlapFraction >= 0 && minOverlapFraction <= 1, "cache-affinity.min-overlap-fraction",
          minOverlapFraction, "must be in [0, 1]");
      this.minOverlapFraction = minOverlapFraction;
    }
  }

  /** Parameters of the {@code approximate} policy's own predictions. */
  public static class Approximate {
    /** How long a routed prompt is assumed to stay cached on its worker. */
    private Duration ttl = Duration.ofSeconds(120);

    /** The most predicted block entries kept. */
    private int maxEntries = 1_048_576;

    public Duration getTtl() {
      return ttl;
    }

    public void setTtl(Duration ttl) {
      check(ttl != null && ttl.compareTo(Duration.ZERO) > 0, "approximate.ttl", ttl, "must be positive");
      this.ttl = ttl;
    }

    public int getMaxEntries() {
      return maxEntries;
    }

    public void setMaxEntries(int maxEntries) {
      check(maxEntries > 0, "approximate.max-entries", maxEntries, "must be positive");
      this.maxEntries = maxEntries;
    }
  }

  /** The KV event subscriber (ZeroMQ), started when a worker names an events endpoint. */
  public static class Events {
    /** Whether to subscribe to the workers' KV events. */
    private boolean enabled = true;

    /** How long a replay of lost batches may take before the worker's entries are purged instead. */
    private Duration replayTimeout = Duration.ofSeconds(2);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getReplayTimeout() {
      return replayTimeout;
    }

    public void setReplayTimeout(Duration replayTimeout) {
      check(replayTimeout != null && replayTimeout.compareTo(Duration.ZERO) > 0, "events.replay-timeout",
          replayTimeout, "must be positive");
      this.replayTimeout = replayTimeout;
    }
  }

  /** The scraper of the engines' Prometheus {@code /metrics} (running and waiting requests, KV cache usage). */
  public static class Metrics {
    /** Whether to scrape the workers' engine metrics into the router's load view. */
    private boolean enabled = true;

    /** How often each worker is scraped. */
    private Duration interval = Duration.ofSeconds(1);

    /** The bound of one scrape. */
    private Duration timeout = Duration.ofSeconds(2);

    /** The metrics path on each worker. */
    private String path = "/metrics";

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      check(interval != null && interval.compareTo(Duration.ZERO) > 0, "metrics.interval", interval,
          "must be positive");
      this.interval = interval;
    }

    public Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(Duration timeout) {
      check(timeout != null && timeout.compareTo(Duration.ZERO) > 0, "metrics.timeout", timeout, "must be positive");
      this.timeout = timeout;
    }

    public String getPath() {
      return path;
    }

    public void setPath(String path) {
      check(path != null && path.startsWith("/"), "metrics.path", path, "must start with /");
      this.path = path;
    }
  }

  /**
   * How prompts become token ids: a local tokenizer when {@code path} is set and {@code kvroute-tokenizers} is on
   * the classpath, else the engines' {@code POST /tokenize}.
   */
  public static class TokenizerProperties {
    /**
     * A local tokenizer: a tokenizer.json file, or a directory holding tokenizer.json and tokenizer_config.json
     * (needs the kvroute-tokenizers module on the classpath). Unset: the engines' /tokenize.
     */
    private @Nullable Path path;

    /** A dedicated tokenizer server for /tokenize; unset: the registered workers, taken in turn. */
    private @Nullable URI endpoint;

    /** The tokenize path on the server. */
    private String remotePath = "/tokenize";

    /** The bound of one /tokenize call (a hung worker is skipped for the next after this long). */
    private Duration timeout = Duration.ofSeconds(2);

    public @Nullable Path getPath() {
      return path;
    }

    public void setPath(@Nullable Path path) {
      this.path = path;
    }

    public @Nullable URI getEndpoint() {
      return endpoint;
    }

    public void setEndpoint(@Nullable URI endpoint) {
      check(endpoint == null || endpoint.getHost() != null, "tokenizer.endpoint", endpoint, "must be an absolute URL");
      this.endpoint = endpoint;
    }

    public String getRemotePath() {
      return remotePath;
    }

    public void setRemotePath(String remotePath) {
      check(remotePath != null && remotePath.startsWith("/"), "tokenizer.remote-path", remotePath,
          "must start with /");
      this.remotePath = remotePath;
    }

    public Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(Duration timeout) {
      check(timeout != null && timeout.compareTo(Duration.ZERO) > 0, "tokenizer.timeout", timeout,
          "must be positive");
      this.timeout = timeout;
    }
  }

  /** Response headers describing the routing decision (off by default: they disclose the topology). */
  public static class Headers {
    /** Whether to add the headers to routed responses. */
    private boolean enabled = false;

    /** The header naming the chosen worker. */
    private String worker = "X-KvRoute-Worker";

    /** The header carrying the prompt tokens the router predicted the worker has cached. */
    private String predictedCachedTokens = "X-KvRoute-Predicted-Cached-Tokens";

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getWorker() {
      return worker;
    }

    public void setWorker(String worker) {
      check(isToken(worker), "headers.worker", worker, "must be a header name");
      this.worker = worker;
    }

    public String getPredictedCachedTokens() {
      return predictedCachedTokens;
    }

    public void setPredictedCachedTokens(String predictedCachedTokens) {
      check(isToken(predictedCachedTokens), "headers.predicted-cached-tokens", predictedCachedTokens,
          "must be a header name");
      this.predictedCachedTokens = predictedCachedTokens;
    }

    private static boolean isToken(@Nullable String name) {
      if (name == null || name.isEmpty()) {
        return false;
      }
      for (int i = 0; i < name.length(); i++) {
        char c = name.charAt(i);
        if (c <= ' ' || c >= 127 || "()<>@,;:\\\"/[]?={}".indexOf(c) >= 0) {
          return false;
        }
      }
      return true;
    }
  }

  private static @Nullable String blankToNull(@Nullable String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
