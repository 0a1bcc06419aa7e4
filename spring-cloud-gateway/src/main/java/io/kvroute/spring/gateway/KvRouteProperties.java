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

  /** The routing policies, by their property value ({@code kv-aware}, {@code cache-affinity}, …); an enum. */
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

  /**
   * The {@code kvroute.enabled} property.
   *
   * @return whether kvroute's auto-configuration is active (default true)
   */
  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Sets the {@code kvroute.enabled} property.
   *
   * @param enabled whether kvroute's auto-configuration is active
   */
  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * The {@code kvroute.block-size} property.
   *
   * @return tokens per KV block; must equal the engines' block size (vLLM's --block-size) (default 16)
   */
  public int getBlockSize() {
    return blockSize;
  }

  /**
   * Sets the {@code kvroute.block-size} property; an invalid value is rejected with an {@link IllegalArgumentException}
   * naming the property.
   *
   * @param blockSize tokens per KV block; must equal the engines' block size (vLLM's --block-size); must be positive
   */
  public void setBlockSize(int blockSize) {
    check(blockSize > 0, "block-size", blockSize, "must be positive");
    this.blockSize = blockSize;
  }

  /**
   * The {@code kvroute.policy} property.
   *
   * @return the routing policy (default {@code kv-aware})
   */
  public PolicyName getPolicy() {
    return policy;
  }

  /**
   * Sets the {@code kvroute.policy} property.
   *
   * @param policy the routing policy
   */
  public void setPolicy(PolicyName policy) {
    this.policy = Objects.requireNonNull(policy, PREFIX + ".policy");
  }

  /**
   * The {@code kvroute.booking-timeout} property.
   *
   * @return how long a request's booked load is kept when it is never released (a safety net for lost handles) (default
   *     5 min)
   */
  public Duration getBookingTimeout() {
    return bookingTimeout;
  }

  /**
   * Sets the {@code kvroute.booking-timeout} property; an invalid value is rejected with an
   * {@link IllegalArgumentException} naming the property.
   *
   * @param bookingTimeout how long a request's booked load is kept when it is never released (a safety net for lost
   *     handles); must be positive
   */
  public void setBookingTimeout(Duration bookingTimeout) {
    check(bookingTimeout != null && bookingTimeout.compareTo(Duration.ZERO) > 0, "booking-timeout", bookingTimeout,
        "must be positive");
    this.bookingTimeout = bookingTimeout;
  }

  /**
   * The {@code kvroute.max-index-entries} property.
   *
   * @return the most block entries the KV index holds before it evicts the least recently stored ones (default 4194304)
   */
  public int getMaxIndexEntries() {
    return maxIndexEntries;
  }

  /**
   * Sets the {@code kvroute.max-index-entries} property; an invalid value is rejected with an
   * {@link IllegalArgumentException} naming the property.
   *
   * @param maxIndexEntries the most block entries the KV index holds before it evicts the least recently stored ones;
   *     must be positive
   */
  public void setMaxIndexEntries(int maxIndexEntries) {
    check(maxIndexEntries > 0, "max-index-entries", maxIndexEntries, "must be positive");
    this.maxIndexEntries = maxIndexEntries;
  }

  /**
   * The {@code kvroute.random-seed} property.
   *
   * @return the seed of the router's random tie-breaks and sampling, for reproducible choices (default 0)
   */
  public long getRandomSeed() {
    return randomSeed;
  }

  /**
   * Sets the {@code kvroute.random-seed} property.
   *
   * @param randomSeed the seed of the router's random tie-breaks and sampling, for reproducible choices
   */
  public void setRandomSeed(long randomSeed) {
    this.randomSeed = randomSeed;
  }

  /**
   * The {@code kvroute.max-prompt-tokens} property.
   *
   * @return prompts longer than this many tokens are refused with 400 before selection (default 1048576)
   */
  public int getMaxPromptTokens() {
    return maxPromptTokens;
  }

  /**
   * Sets the {@code kvroute.max-prompt-tokens} property; an invalid value is rejected with an
   * {@link IllegalArgumentException} naming the property.
   *
   * @param maxPromptTokens prompts longer than this many tokens are refused with 400 before selection; must be positive
   */
  public void setMaxPromptTokens(int maxPromptTokens) {
    check(maxPromptTokens > 0, "max-prompt-tokens", maxPromptTokens, "must be positive");
    this.maxPromptTokens = maxPromptTokens;
  }

  /**
   * The {@code kvroute.max-request-body} property.
   *
   * @return the most bytes of a request body the filter reads to tokenize it; larger bodies get 413 (default 16 MB)
   */
  public DataSize getMaxRequestBody() {
    return maxRequestBody;
  }

  /**
   * Sets the {@code kvroute.max-request-body} property; an invalid value is rejected with an
   * {@link IllegalArgumentException} naming the property.
   *
   * @param maxRequestBody the most bytes of a request body the filter reads to tokenize it; larger bodies get 413; must
   *     be in [1B, 2GB)
   */
  public void setMaxRequestBody(DataSize maxRequestBody) {
    check(maxRequestBody != null && maxRequestBody.toBytes() > 0 && maxRequestBody.toBytes() <= Integer.MAX_VALUE,
        "max-request-body", maxRequestBody, "must be in [1B, 2GB)");
    this.maxRequestBody = maxRequestBody;
  }

  /**
   * The {@code kvroute.max-attempts} property.
   *
   * @return how many workers one request may try when a worker refuses the connection (so the request never reached
   *     it); 1 disables fail-over (default 3)
   */
  public int getMaxAttempts() {
    return maxAttempts;
  }

  /**
   * Sets the {@code kvroute.max-attempts} property; an invalid value is rejected with an
   * {@link IllegalArgumentException} naming the property.
   *
   * @param maxAttempts how many workers one request may try when a worker refuses the connection (so the request never
   *     reached it); 1 disables fail-over; must be in [1, 16]
   */
  public void setMaxAttempts(int maxAttempts) {
    check(maxAttempts >= 1 && maxAttempts <= 16, "max-attempts", maxAttempts, "must be in [1, 16]");
    this.maxAttempts = maxAttempts;
  }

  /**
   * The {@code kvroute.workers} property.
   *
   * @return the workers to route to
   */
  public List<WorkerProperties> getWorkers() {
    return workers;
  }

  /**
   * Sets the {@code kvroute.workers} property.
   *
   * @param workers the workers to route to
   */
  public void setWorkers(List<WorkerProperties> workers) {
    this.workers = Objects.requireNonNull(workers, PREFIX + ".workers");
  }

  /**
   * The {@code kvroute.kv-aware.*} property group.
   *
   * @return the {@code kvroute.kv-aware.*} settings of the KV-aware policy, never null
   */
  public KvAware getKvAware() {
    return kvAware;
  }

  /**
   * The {@code kvroute.cache-affinity.*} property group.
   *
   * @return the {@code kvroute.cache-affinity.*} settings of the cache-affinity policy, never null
   */
  public CacheAffinity getCacheAffinity() {
    return cacheAffinity;
  }

  /**
   * The {@code kvroute.approximate.*} property group.
   *
   * @return the {@code kvroute.approximate.*} settings of prediction-based routing (engines without KV events), never
   *     null
   */
  public Approximate getApproximate() {
    return approximate;
  }

  /**
   * The {@code kvroute.events.*} property group.
   *
   * @return the {@code kvroute.events.*} settings of the KV event subscriber, never null
   */
  public Events getEvents() {
    return events;
  }

  /**
   * The {@code kvroute.metrics.*} property group.
   *
   * @return the {@code kvroute.metrics.*} settings of the engines' /metrics scraper, never null
   */
  public Metrics getMetrics() {
    return metrics;
  }

  /**
   * The {@code kvroute.tokenizer.*} property group.
   *
   * @return the {@code kvroute.tokenizer.*} settings of prompt tokenization, never null
   */
  public TokenizerProperties getTokenizer() {
    return tokenizer;
  }

  /**
   * The {@code kvroute.headers.*} property group.
   *
   * @return the {@code kvroute.headers.*} settings of the routing-decision response headers, never null
   */
  public Headers getHeaders() {
    return headers;
  }

  /**
   * The {@code kvroute.health.*} property group.
   *
   * @return the {@code kvroute.health.*} settings of worker ejection and backoff, never null
   */
  public Health getHealth() {
    return health;
  }

  /**
   * When a failing worker is taken out of routing, not thread-safe (bound once at start-up): consecutive refused
   * connections, 5xx responses and cut streams eject it; after a backoff one request probes it.
   */
  public static class Health {
    /** How many consecutive failures eject a worker. */
    private int ejectAfterFailures = 3;

    /** How long an ejected worker stays out before one request probes it, after its first ejection. */
    private Duration initialBackoff = Duration.ofSeconds(1);

    /** The longest backoff; it doubles with each ejection in a row up to this. */
    private Duration maxBackoff = Duration.ofSeconds(30);

    /**
     * The {@code kvroute.health.eject-after-failures} property.
     *
     * @return how many consecutive failures eject a worker (default 3)
     */
    public int getEjectAfterFailures() {
      return ejectAfterFailures;
    }

    /**
     * Sets the {@code kvroute.health.eject-after-failures} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param ejectAfterFailures how many consecutive failures eject a worker; must be positive
     */
    public void setEjectAfterFailures(int ejectAfterFailures) {
      check(ejectAfterFailures > 0, "health.eject-after-failures", ejectAfterFailures, "must be positive");
      this.ejectAfterFailures = ejectAfterFailures;
    }

    /**
     * The {@code kvroute.health.initial-backoff} property.
     *
     * @return how long an ejected worker stays out before one request probes it, after its first ejection (default 1 s)
     */
    public Duration getInitialBackoff() {
      return initialBackoff;
    }

    /**
     * Sets the {@code kvroute.health.initial-backoff} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param initialBackoff how long an ejected worker stays out before one request probes it, after its first
     *     ejection; must be positive
     */
    public void setInitialBackoff(Duration initialBackoff) {
      check(initialBackoff != null && initialBackoff.compareTo(Duration.ZERO) > 0, "health.initial-backoff",
          initialBackoff, "must be positive");
      this.initialBackoff = initialBackoff;
    }

    /**
     * The {@code kvroute.health.max-backoff} property.
     *
     * @return the longest backoff; it doubles with each ejection in a row up to this (default 30 s)
     */
    public Duration getMaxBackoff() {
      return maxBackoff;
    }

    /**
     * Sets the {@code kvroute.health.max-backoff} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param maxBackoff the longest backoff; it doubles with each ejection in a row up to this; must be positive
     */
    public void setMaxBackoff(Duration maxBackoff) {
      check(maxBackoff != null && maxBackoff.compareTo(Duration.ZERO) > 0, "health.max-backoff", maxBackoff,
          "must be positive");
      this.maxBackoff = maxBackoff;
    }
  }

  /**
   * One worker: an engine server's HTTP base URL and, optionally, where it publishes its KV events; not thread-safe
   * (bound once at start-up).
   */
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

    /**
     * The {@code kvroute.workers[].id} property.
     *
     * @return the worker's name, unique among the workers; defaults to its URL's host and port
     */
    public @Nullable String getId() {
      return id;
    }

    /**
     * Sets the {@code kvroute.workers[].id} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param id the worker's name, unique among the workers; defaults to its URL's host and port; must not be blank
     */
    public void setId(@Nullable String id) {
      check(id == null || !id.isBlank(), "workers[].id", "'" + id + "'", "must not be blank");
      this.id = id;
    }

    /**
     * The {@code kvroute.workers[].url} property.
     *
     * @return the engine's HTTP base URL, for example http://10.0.0.5:8000
     */
    public @Nullable URI getUrl() {
      return url;
    }

    /**
     * Sets the {@code kvroute.workers[].url} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param url the engine's HTTP base URL, for example http://10.0.0.5:8000; must be an http or https URL with a host
     */
    public void setUrl(@Nullable URI url) {
      if (url != null) {
        String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
        check((scheme.equals("http") || scheme.equals("https")) && url.getHost() != null, "workers[].url", url,
            "must be an http or https URL with a host");
      }
      this.url = url;
    }

    /**
     * The {@code kvroute.workers[].events.*} property group.
     *
     * @return the {@code kvroute.events.*} settings of the KV event subscriber, never null
     */
    public @Nullable String getEvents() {
      return events;
    }

    /**
     * Sets the {@code kvroute.workers[].events} property.
     *
     * @param events the engine's ZeroMQ KV event endpoint (vLLM's kv-events-config endpoint), for example
     *     tcp://10.0.0.5:5557
     */
    public void setEvents(@Nullable String events) {
      this.events = blankToNull(events);
    }

    /**
     * The {@code kvroute.workers[].replay} property.
     *
     * @return the engine's ZeroMQ replay endpoint (vLLM's replay_endpoint), used to recover lost event batches
     */
    public @Nullable String getReplay() {
      return replay;
    }

    /**
     * Sets the {@code kvroute.workers[].replay} property.
     *
     * @param replay the engine's ZeroMQ replay endpoint (vLLM's replay_endpoint), used to recover lost event batches
     */
    public void setReplay(@Nullable String replay) {
      this.replay = blankToNull(replay);
    }

    /**
     * The {@code kvroute.workers[].topic} property.
     *
     * @return the KV event topic (vLLM's topic; empty subscribes to every topic) (default empty)
     */
    public String getTopic() {
      return topic;
    }

    /**
     * Sets the {@code kvroute.workers[].topic} property.
     *
     * @param topic the KV event topic (vLLM's topic; empty subscribes to every topic)
     */
    public void setTopic(@Nullable String topic) {
      this.topic = topic == null ? "" : topic;
    }

    /**
     * The {@code kvroute.workers[].data-parallel-ranks} property.
     *
     * @return how many data-parallel ranks the engine runs; rank r publishes on the event port plus r (default 1)
     */
    public int getDataParallelRanks() {
      return dataParallelRanks;
    }

    /**
     * Sets the {@code kvroute.workers[].data-parallel-ranks} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param dataParallelRanks how many data-parallel ranks the engine runs; rank r publishes on the event port plus r;
     *     must be in [1, 1024]
     */
    public void setDataParallelRanks(int dataParallelRanks) {
      check(dataParallelRanks >= 1 && dataParallelRanks <= 1024, "workers[].data-parallel-ranks", dataParallelRanks,
          "must be in [1, 1024]");
      this.dataParallelRanks = dataParallelRanks;
    }

    /**
     * The {@code kvroute.workers[].model} property.
     *
     * @return the model the worker serves; requests naming another model are not routed to it. Empty serves any
     */
    public @Nullable String getModel() {
      return model;
    }

    /**
     * Sets the {@code kvroute.workers[].model} property.
     *
     * @param model the model the worker serves; requests naming another model are not routed to it. Empty serves any
     */
    public void setModel(@Nullable String model) {
      this.model = blankToNull(model);
    }
  }

  /**
   * Parameters of the {@code kv-aware} and {@code approximate} policies' cost; not thread-safe (bound once at
   * start-up).
   */
  public static class KvAware {
    /** Weight of the prefill term; higher favours cache hits (TTFT), lower favours balance. 1.0 is Dynamo's. */
    private double overlapWeight = 1.0;

    /** 0 picks the lowest cost; above 0 samples a softmax over normalised costs. */
    private double temperature = 0.0;

    /** How much a block cached in host memory counts compared with one on the GPU, in [0, 1]. */
    private double hostOverlapCredit = 0.75;

    /**
     * The {@code kvroute.kv-aware.overlap-weight} property.
     *
     * @return weight of the prefill term; higher favours cache hits (TTFT), lower favours balance. 1.0 is Dynamo's
     *     (default 1.0)
     */
    public double getOverlapWeight() {
      return overlapWeight;
    }

    /**
     * Sets the {@code kvroute.kv-aware.overlap-weight} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param overlapWeight weight of the prefill term; higher favours cache hits (TTFT), lower favours balance. 1.0 is
     *     Dynamo's; must be finite and >= 0
     */
    public void setOverlapWeight(double overlapWeight) {
      check(overlapWeight >= 0 && Double.isFinite(overlapWeight), "kv-aware.overlap-weight", overlapWeight,
          "must be finite and >= 0");
      this.overlapWeight = overlapWeight;
    }

    /**
     * The {@code kvroute.kv-aware.temperature} property.
     *
     * @return 0 picks the lowest cost; above 0 samples a softmax over normalised costs (default 0.0)
     */
    public double getTemperature() {
      return temperature;
    }

    /**
     * Sets the {@code kvroute.kv-aware.temperature} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param temperature 0 picks the lowest cost; above 0 samples a softmax over normalised costs; must be finite and
     *     >= 0
     */
    public void setTemperature(double temperature) {
      check(temperature >= 0 && Double.isFinite(temperature), "kv-aware.temperature", temperature,
          "must be finite and >= 0");
      this.temperature = temperature;
    }

    /**
     * The {@code kvroute.kv-aware.host-overlap-credit} property.
     *
     * @return how much a block cached in host memory counts compared with one on the GPU, in [0, 1] (default 0.75)
     */
    public double getHostOverlapCredit() {
      return hostOverlapCredit;
    }

    /**
     * Sets the {@code kvroute.kv-aware.host-overlap-credit} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param hostOverlapCredit how much a block cached in host memory counts compared with one on the GPU, in [0, 1];
     *     must be in [0, 1]
     */
    public void setHostOverlapCredit(double hostOverlapCredit) {
      check(hostOverlapCredit >= 0 && hostOverlapCredit <= 1, "kv-aware.host-overlap-credit", hostOverlapCredit,
          "must be in [0, 1]");
      this.hostOverlapCredit = hostOverlapCredit;
    }
  }

  /** Parameters of the {@code cache-affinity} policy; not thread-safe (bound once at start-up). */
  public static class CacheAffinity {
    /** How many leading blocks identify a prefix's home worker. */
    private int homeBlocks = 8;

    /** A worker is overloaded at (1 + load-factor) x (others' mean active requests + 1). */
    private double loadFactor = 2.0;

    /** The share of the prompt a worker must hold to attract the request by its cache, in [0, 1]. */
    private double minOverlapFraction = 0.25;

    /**
     * The {@code kvroute.cache-affinity.home-blocks} property.
     *
     * @return how many leading blocks identify a prefix's home worker (default 8)
     */
    public int getHomeBlocks() {
      return homeBlocks;
    }

    /**
     * Sets the {@code kvroute.cache-affinity.home-blocks} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param homeBlocks how many leading blocks identify a prefix's home worker; must be positive
     */
    public void setHomeBlocks(int homeBlocks) {
      check(homeBlocks > 0, "cache-affinity.home-blocks", homeBlocks, "must be positive");
      this.homeBlocks = homeBlocks;
    }

    /**
     * The {@code kvroute.cache-affinity.load-factor} property.
     *
     * @return a worker is overloaded at (1 + load-factor) x (others' mean active requests + 1) (default 2.0)
     */
    public double getLoadFactor() {
      return loadFactor;
    }

    /**
     * Sets the {@code kvroute.cache-affinity.load-factor} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param loadFactor a worker is overloaded at (1 + load-factor) x (others' mean active requests + 1); must be
     *     finite and >= 0
     */
    public void setLoadFactor(double loadFactor) {
      check(loadFactor >= 0 && Double.isFinite(loadFactor), "cache-affinity.load-factor", loadFactor,
          "must be finite and >= 0");
      this.loadFactor = loadFactor;
    }

    /**
     * The {@code kvroute.cache-affinity.min-overlap-fraction} property.
     *
     * @return the share of the prompt a worker must hold to attract the request by its cache, in [0, 1] (default 0.25)
     */
    public double getMinOverlapFraction() {
      return minOverlapFraction;
    }

    /**
     * Sets the {@code kvroute.cache-affinity.min-overlap-fraction} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param minOverlapFraction the share of the prompt a worker must hold to attract the request by its cache, in [0,
     *     1]; must be in [0, 1]
     */
    public void setMinOverlapFraction(double minOverlapFraction) {
      check(minOverlapFraction >= 0 && minOverlapFraction <= 1, "cache-affinity.min-overlap-fraction",
          minOverlapFraction, "must be in [0, 1]");
      this.minOverlapFraction = minOverlapFraction;
    }
  }

  /** Parameters of the {@code approximate} policy's own predictions; not thread-safe (bound once at start-up). */
  public static class Approximate {
    /** How long a routed prompt is assumed to stay cached on its worker. */
    private Duration ttl = Duration.ofSeconds(120);

    /** The most predicted block entries kept. */
    private int maxEntries = 1_048_576;

    /**
     * The {@code kvroute.approximate.ttl} property.
     *
     * @return how long a routed prompt is assumed to stay cached on its worker (default 120 s)
     */
    public Duration getTtl() {
      return ttl;
    }

    /**
     * Sets the {@code kvroute.approximate.ttl} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param ttl how long a routed prompt is assumed to stay cached on its worker; must be positive
     */
    public void setTtl(Duration ttl) {
      check(ttl != null && ttl.compareTo(Duration.ZERO) > 0, "approximate.ttl", ttl, "must be positive");
      this.ttl = ttl;
    }

    /**
     * The {@code kvroute.approximate.max-entries} property.
     *
     * @return the most predicted block entries kept (default 1048576)
     */
    public int getMaxEntries() {
      return maxEntries;
    }

    /**
     * Sets the {@code kvroute.approximate.max-entries} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param maxEntries the most predicted block entries kept; must be positive
     */
    public void setMaxEntries(int maxEntries) {
      check(maxEntries > 0, "approximate.max-entries", maxEntries, "must be positive");
      this.maxEntries = maxEntries;
    }
  }

  /**
   * The KV event subscriber (ZeroMQ), started when a worker names an events endpoint; not thread-safe (bound once at
   * start-up).
   */
  public static class Events {
    /** Whether to subscribe to the workers' KV events. */
    private boolean enabled = true;

    /** How long a replay of lost batches may take before the worker's entries are purged instead. */
    private Duration replayTimeout = Duration.ofSeconds(2);

    /**
     * The {@code kvroute.events.enabled} property.
     *
     * @return whether to subscribe to the workers' KV events (default true)
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the {@code kvroute.events.enabled} property.
     *
     * @param enabled whether to subscribe to the workers' KV events
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * The {@code kvroute.events.replay-timeout} property.
     *
     * @return how long a replay of lost batches may take before the worker's entries are purged instead (default 2 s)
     */
    public Duration getReplayTimeout() {
      return replayTimeout;
    }

    /**
     * Sets the {@code kvroute.events.replay-timeout} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param replayTimeout how long a replay of lost batches may take before the worker's entries are purged instead;
     *     must be positive
     */
    public void setReplayTimeout(Duration replayTimeout) {
      check(replayTimeout != null && replayTimeout.compareTo(Duration.ZERO) > 0, "events.replay-timeout",
          replayTimeout, "must be positive");
      this.replayTimeout = replayTimeout;
    }
  }

  /**
   * The scraper of the engines' Prometheus {@code /metrics} (running and waiting requests, KV cache usage); not
   * thread-safe (bound once at start-up).
   */
  public static class Metrics {
    /** Whether to scrape the workers' engine metrics into the router's load view. */
    private boolean enabled = true;

    /** How often each worker is scraped. */
    private Duration interval = Duration.ofSeconds(1);

    /** The bound of one scrape. */
    private Duration timeout = Duration.ofSeconds(2);

    /** The metrics path on each worker. */
    private String path = "/metrics";

    /**
     * The {@code kvroute.metrics.enabled} property.
     *
     * @return whether to scrape the workers' engine metrics into the router's load view (default true)
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the {@code kvroute.metrics.enabled} property.
     *
     * @param enabled whether to scrape the workers' engine metrics into the router's load view
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * The {@code kvroute.metrics.interval} property.
     *
     * @return how often each worker is scraped (default 1 s)
     */
    public Duration getInterval() {
      return interval;
    }

    /**
     * Sets the {@code kvroute.metrics.interval} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param interval how often each worker is scraped; must be positive
     */
    public void setInterval(Duration interval) {
      check(interval != null && interval.compareTo(Duration.ZERO) > 0, "metrics.interval", interval,
          "must be positive");
      this.interval = interval;
    }

    /**
     * The {@code kvroute.metrics.timeout} property.
     *
     * @return the bound of one scrape (default 2 s)
     */
    public Duration getTimeout() {
      return timeout;
    }

    /**
     * Sets the {@code kvroute.metrics.timeout} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param timeout the bound of one scrape; must be positive
     */
    public void setTimeout(Duration timeout) {
      check(timeout != null && timeout.compareTo(Duration.ZERO) > 0, "metrics.timeout", timeout, "must be positive");
      this.timeout = timeout;
    }

    /**
     * The {@code kvroute.metrics.path} property.
     *
     * @return the metrics path on each worker (default {@code "/metrics"})
     */
    public String getPath() {
      return path;
    }

    /**
     * Sets the {@code kvroute.metrics.path} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param path the metrics path on each worker; must start with /
     */
    public void setPath(String path) {
      check(path != null && path.startsWith("/"), "metrics.path", path, "must start with /");
      this.path = path;
    }
  }

  /**
   * How prompts become token ids, not thread-safe (bound once at start-up): a local tokenizer when {@code path} is
   * set and {@code kvroute-tokenizers} is on the classpath, else the engines' {@code POST /tokenize}.
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

    /**
     * The {@code kvroute.tokenizer.path} property.
     *
     * @return a local tokenizer: a tokenizer.json file, or a directory holding tokenizer.json and tokenizer_config.json
     *     (needs the kvroute-tokenizers module on the classpath). Unset: the engines' /tokenize
     */
    public @Nullable Path getPath() {
      return path;
    }

    /**
     * Sets the {@code kvroute.tokenizer.path} property.
     *
     * @param path a local tokenizer: a tokenizer.json file, or a directory holding tokenizer.json and
     *     tokenizer_config.json (needs the kvroute-tokenizers module on the classpath). Unset: the engines' /tokenize
     */
    public void setPath(@Nullable Path path) {
      this.path = path;
    }

    /**
     * The {@code kvroute.tokenizer.endpoint} property.
     *
     * @return a dedicated tokenizer server for /tokenize; unset: the registered workers, taken in turn
     */
    public @Nullable URI getEndpoint() {
      return endpoint;
    }

    /**
     * Sets the {@code kvroute.tokenizer.endpoint} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param endpoint a dedicated tokenizer server for /tokenize; unset: the registered workers, taken in turn; must be
     *     an absolute URL
     */
    public void setEndpoint(@Nullable URI endpoint) {
      check(endpoint == null || endpoint.getHost() != null, "tokenizer.endpoint", endpoint, "must be an absolute URL");
      this.endpoint = endpoint;
    }

    /**
     * The {@code kvroute.tokenizer.remote-path} property.
     *
     * @return the tokenize path on the server (default {@code "/tokenize"})
     */
    public String getRemotePath() {
      return remotePath;
    }

    /**
     * Sets the {@code kvroute.tokenizer.remote-path} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param remotePath the tokenize path on the server; must start with /
     */
    public void setRemotePath(String remotePath) {
      check(remotePath != null && remotePath.startsWith("/"), "tokenizer.remote-path", remotePath,
          "must start with /");
      this.remotePath = remotePath;
    }

    /**
     * The {@code kvroute.tokenizer.timeout} property.
     *
     * @return the bound of one /tokenize call (a hung worker is skipped for the next after this long) (default 2 s)
     */
    public Duration getTimeout() {
      return timeout;
    }

    /**
     * Sets the {@code kvroute.tokenizer.timeout} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param timeout the bound of one /tokenize call (a hung worker is skipped for the next after this long); must be
     *     positive
     */
    public void setTimeout(Duration timeout) {
      check(timeout != null && timeout.compareTo(Duration.ZERO) > 0, "tokenizer.timeout", timeout,
          "must be positive");
      this.timeout = timeout;
    }
  }

  /**
   * Response headers describing the routing decision (off by default: they disclose the topology); not thread-safe
   * (bound once at start-up).
   */
  public static class Headers {
    /** Whether to add the headers to routed responses. */
    private boolean enabled = false;

    /** The header naming the chosen worker. */
    private String worker = "X-KvRoute-Worker";

    /** The header carrying the prompt tokens the router predicted the worker has cached. */
    private String predictedCachedTokens = "X-KvRoute-Predicted-Cached-Tokens";

    /**
     * The {@code kvroute.headers.enabled} property.
     *
     * @return whether to add the headers to routed responses (default false)
     */
    public boolean isEnabled() {
      return enabled;
    }

    /**
     * Sets the {@code kvroute.headers.enabled} property.
     *
     * @param enabled whether to add the headers to routed responses
     */
    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    /**
     * The {@code kvroute.headers.worker} property.
     *
     * @return the header naming the chosen worker (default {@code "X-KvRoute-Worker"})
     */
    public String getWorker() {
      return worker;
    }

    /**
     * Sets the {@code kvroute.headers.worker} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param worker the header naming the chosen worker; must be a header name
     */
    public void setWorker(String worker) {
      check(isToken(worker), "headers.worker", worker, "must be a header name");
      this.worker = worker;
    }

    /**
     * The {@code kvroute.headers.predicted-cached-tokens} property.
     *
     * @return the header carrying the prompt tokens the router predicted the worker has cached (default {@code
     *     "X-KvRoute-Predicted-Cached-Tokens"})
     */
    public String getPredictedCachedTokens() {
      return predictedCachedTokens;
    }

    /**
     * Sets the {@code kvroute.headers.predicted-cached-tokens} property; an invalid value is rejected with an
     * {@link IllegalArgumentException} naming the property.
     *
     * @param predictedCachedTokens the header carrying the prompt tokens the router predicted the worker has cached;
     *     must be a header name
     */
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
