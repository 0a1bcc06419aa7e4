package io.kvroute.spring.gateway;

import static java.lang.System.Logger.Level.INFO;

import io.kvroute.CacheAffinityConfig;
import io.kvroute.KvAwareConfig;
import io.kvroute.Router;
import io.kvroute.RouterListener;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.kvroute.transport.okhttp.NoDelaySocketFactory;
import io.kvroute.micrometer.EventSourceMetrics;
import io.kvroute.micrometer.RouterMetrics;
import io.kvroute.micrometer.ScrapeMetrics;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import io.kvroute.transport.okhttp.ScrapeListener;
import io.kvroute.transport.okhttp.Tokenizer;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.URI;
import java.util.HashSet;
import java.util.Set;
import okhttp3.OkHttpClient;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.gateway.filter.factory.GatewayFilterFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.ResourceLoader;
import reactor.core.scheduler.Schedulers;

/**
 * Builds kvroute for a Spring Cloud Gateway application from {@code kvroute.*} properties; thread-safe (Spring calls
 * its bean methods once, at start-up). The beans: the {@link Router} with
 * the configured workers and policy, the ZeroMQ {@link KvEventSubscriber} for the workers that name an events
 * endpoint, the {@link EngineMetricsScraper} of their {@code /metrics}, the {@link Tokenizer}, the {@code KvRoute}
 * filter and, when Micrometer has a registry, kvroute's meters. Each bean backs off when the application defines
 * its own of the same type.
 *
 * <p>Tokenizer: a {@link Tokenizer} bean of the application's wins; else {@code kvroute.tokenizer.path} selects the
 * local tokenizer of {@code kvroute-tokenizers}; else the engines' {@code POST /tokenize}
 * ({@code kvroute.tokenizer.endpoint}, or the registered workers in turn).
 */
@AutoConfiguration
@ConditionalOnClass(GatewayFilterFactory.class)
@ConditionalOnProperty(prefix = KvRouteProperties.PREFIX, name = "enabled", havingValue = "true",
    matchIfMissing = true)
@EnableConfigurationProperties(KvRouteProperties.class)
public class KvRouteAutoConfiguration {
  private static final System.Logger logger = System.getLogger(KvRouteAutoConfiguration.class.getName());

  /**
   * The router, with the configured workers registered.
   *
   * @param properties the {@code kvroute.*} properties
   * @param listeners the application's {@link RouterListener}s (and kvroute's meters), all added
   * @return the router
   */
  @Bean
  @ConditionalOnMissingBean
  public Router kvrouteRouter(KvRouteProperties properties, ObjectProvider<RouterListener> listeners) {
    KvRouteProperties.Health health = properties.getHealth();
    if (health.getMaxBackoff().compareTo(health.getInitialBackoff()) < 0) {
      throw new IllegalArgumentException("kvroute.health.max-backoff must be at least kvroute.health.initial-backoff "
          + health.getInitialBackoff() + " but was " + health.getMaxBackoff());
    }
    Router.Builder builder = Router.newBuilder()
        .blockSize(properties.getBlockSize())
        .policy(policy(properties))
        .bookingTimeout(properties.getBookingTimeout())
        .maxIndexEntries(properties.getMaxIndexEntries())
        .maxPromptTokens(properties.getMaxPromptTokens())
        .ejectAfterFailures(health.getEjectAfterFailures())
        .ejectionBackoff(health.getInitialBackoff(), health.getMaxBackoff())
        .randomSeed(properties.getRandomSeed());
    listeners.orderedStream().forEach(builder::listener);
    Router router = builder.build();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < properties.getWorkers().size(); i++) {
      KvRouteProperties.WorkerProperties w = properties.getWorkers().get(i);
      URI url = w.getUrl();
      if (url == null) {
        throw new IllegalArgumentException("kvroute.workers[" + i + "].url must be set");
      }
      String name = name(w);
      if (!names.add(name)) {
        throw new IllegalArgumentException("kvroute.workers[" + i + "].id " + name + " is not unique");
      }
      for (int rank = 0; rank < w.getDataParallelRanks(); rank++) {
        // Rank r of a data-parallel engine publishes on the event ports plus r, as vLLM and SGLang bind them.
        Worker.Builder b = Worker.newBuilder(new WorkerId(name, rank)).endpoint(Worker.HTTP, url).model(w.getModel());
        if (w.getEvents() != null) {
          b.endpoint(KvEventSubscriber.EVENTS_ENDPOINT, offsetPort(w.getEvents(), rank, i, "events"))
              .label(KvEventSubscriber.TOPIC_LABEL, w.getTopic());
        }
        if (w.getReplay() != null) {
          b.endpoint(KvEventSubscriber.REPLAY_ENDPOINT, offsetPort(w.getReplay(), rank, i, "replay"));
        }
        router.addWorker(b.build());
      }
    }
    logger.log(INFO, () -> "kvroute: routing with " + router.policy().name() + " over "
        + router.workers().size() + " workers, block size " + router.blockSize());
    return router;
  }

  /** A ZeroMQ tcp endpoint with its port offset by {@code rank}. */
  static URI offsetPort(String endpoint, int rank, int index, String property) {
    URI uri;
    try {
      uri = URI.create(endpoint);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("kvroute.workers[" + index + "]." + property + " must be a URI like "
          + "tcp://10.0.0.5:5557 but was " + endpoint, e);
    }
    if (rank == 0) {
      return uri;
    }
    if (!"tcp".equals(uri.getScheme()) || uri.getPort() < 0) {
      throw new IllegalArgumentException("kvroute.workers[" + index + "]." + property + " must be a tcp endpoint "
          + "with a port when data-parallel-ranks > 1 but was " + endpoint);
    }
    return URI.create("tcp://" + uri.getRawAuthority().substring(0, uri.getRawAuthority().lastIndexOf(':') + 1)
        + (uri.getPort() + rank));
  }

  static String name(KvRouteProperties.WorkerProperties w) {
    if (w.getId() != null) {
      return w.getId();
    }
    URI url = w.getUrl();
    return url.getPort() < 0 ? url.getHost() : url.getHost() + ":" + url.getPort();
  }

  static RouterPolicy policy(KvRouteProperties p) {
    KvRouteProperties.KvAware k = p.getKvAware();
    KvAwareConfig cost = new KvAwareConfig(k.getOverlapWeight(), k.getTemperature(), k.getHostOverlapCredit());
    return switch (p.getPolicy()) {
      case KV_AWARE -> RouterPolicy.kvAware(cost);
      case APPROXIMATE -> RouterPolicy.approximate(cost, p.getApproximate().getTtl(),
          p.getApproximate().getMaxEntries());
      case CACHE_AFFINITY -> RouterPolicy.cacheAffinity(new CacheAffinityConfig(p.getCacheAffinity().getHomeBlocks(),
          p.getCacheAffinity().getLoadFactor(), p.getCacheAffinity().getMinOverlapFraction()));
      case LEAST_LOADED -> RouterPolicy.leastLoaded();
      case ROUND_ROBIN -> RouterPolicy.roundRobin();
      case RANDOM -> RouterPolicy.random();
    };
  }

  /**
   * The KV event subscriber: it follows the router's workers (subscribing to each one with an {@code events}
   * endpoint, as it is added or removed), reports each stream's state to the router's health model, and is started
   * if a configured worker has events.
   *
   * @param properties the {@code kvroute.*} properties
   * @param router the router fed with the events
   * @param listener the application's {@link EventSourceListener} (or kvroute's meters), if there is one
   * @return the subscriber
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = KvRouteProperties.PREFIX, name = "events.enabled", havingValue = "true",
      matchIfMissing = true)
  public KvEventSubscriber kvrouteEventSubscriber(KvRouteProperties properties, Router router,
      ObjectProvider<EventSourceListener> listener) {
    KvEventSubscriber subscriber = KvEventSubscriber.newBuilder()
        .router(router)
        .listener(listener.getIfUnique(() -> EventSourceListener.NONE))
        .replayTimeout(properties.getEvents().getReplayTimeout())
        .build();
    try {
      if (properties.getWorkers().stream().anyMatch(w -> w.getEvents() != null)) {
        subscriber.start();
      }
      return subscriber;
    } catch (RuntimeException e) {
      subscriber.close();
      throw e;
    }
  }

  /**
   * The scraper of the workers' engine metrics, started.
   *
   * @param properties the {@code kvroute.*} properties
   * @param router the router whose workers it scrapes and whose loads it updates
   * @param listener the application's {@link ScrapeListener} (or kvroute's meters), if there is one
   * @return the scraper
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = KvRouteProperties.PREFIX, name = "metrics.enabled", havingValue = "true",
      matchIfMissing = true)
  public EngineMetricsScraper kvrouteMetricsScraper(KvRouteProperties properties, Router router,
      ObjectProvider<ScrapeListener> listener) {
    KvRouteProperties.Metrics m = properties.getMetrics();
    EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).interval(m.getInterval())
        .timeout(m.getTimeout()).path(m.getPath()).listener(listener.getIfUnique(() -> ScrapeListener.NONE))
        .build();
    scraper.start();
    return scraper;
  }

  /**
   * The tokenizer: the local one when {@code kvroute.tokenizer.path} is set, else the engines' {@code /tokenize}.
   *
   * @param properties the {@code kvroute.*} properties
   * @param router the router whose workers serve {@code /tokenize} when no endpoint is configured
   * @param resources the application's resource loader, whose class loader finds {@code kvroute-tokenizers}
   * @return the tokenizer
   */
  @Bean
  @ConditionalOnMissingBean
  public Tokenizer kvrouteTokenizer(KvRouteProperties properties, Router router, ResourceLoader resources) {
    KvRouteProperties.TokenizerProperties t = properties.getTokenizer();
    if (t.getPath() != null) {
      ClassLoader loader = resources.getClassLoader() != null ? resources.getClassLoader()
          : KvRouteAutoConfiguration.class.getClassLoader();
      Tokenizer local = LocalTokenizerHook.load(t.getPath(), loader);
      logger.log(INFO, () -> "kvroute: tokenizing locally with " + local);
      return local;
    }
    OkHttpTokenizer.Builder b = OkHttpTokenizer.newBuilder().path(t.getRemotePath()).timeout(t.getTimeout())
        .client(new OkHttpClient.Builder().socketFactory(new NoDelaySocketFactory()).build());
    if (t.getEndpoint() != null) {
      b.endpoint(t.getEndpoint());
    } else {
      b.router(router); // the registered workers, healthy ones first; those it cannot reach are reported
    }
    return b.build();
  }

  /**
   * The {@code KvRoute} gateway filter factory.
   *
   * @param router the router
   * @param tokenizer the tokenizer
   * @param properties the {@code kvroute.*} properties
   * @param observer the meters, if Micrometer has a registry
   * @return the factory
   */
  @Bean
  @ConditionalOnMissingBean
  public KvRouteGatewayFilterFactory kvRouteGatewayFilterFactory(Router router, Tokenizer tokenizer,
      KvRouteProperties properties, ObjectProvider<GatewayObserver> observer) {
    return new KvRouteGatewayFilterFactory(router, tokenizer, Schedulers.boundedElastic(), properties,
        observer.getIfAvailable(() -> GatewayObserver.NONE));
  }

  /**
   * Points kvroute-routed requests at their chosen worker.
   *
   * @return the global filter
   */
  @Bean
  @ConditionalOnMissingBean
  public KvRouteTargetFilter kvRouteTargetFilter() {
    return new KvRouteTargetFilter();
  }

  /**
   * kvroute's meters ({@code kvroute-micrometer}'s router, event-source and scrape binders, and the gateway's own),
   * published to the application's {@link MeterRegistry} when it has one (its primary one if several).
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({MeterRegistry.class, RouterMetrics.class})
  static class Meters {
    @Bean
    @ConditionalOnMissingBean
    RouterMetrics kvrouteRouterMetrics() {
      return new RouterMetrics();
    }

    /** The event meters; an application's own {@link EventSourceListener} replaces them. */
    @Bean
    @ConditionalOnMissingBean(EventSourceListener.class)
    EventSourceMetrics kvrouteEventSourceMetrics() {
      return new EventSourceMetrics();
    }

    /** The scrape meters; an application's own {@link ScrapeListener} replaces them. */
    @Bean
    @ConditionalOnMissingBean(ScrapeListener.class)
    ScrapeMetrics kvrouteScrapeMetrics() {
      return new ScrapeMetrics();
    }

    @Bean
    GatewayObserver kvrouteGatewayMeters(ObjectProvider<MeterRegistry> registries, Router router,
        RouterMetrics routerMetrics, ObjectProvider<EventSourceMetrics> events,
        ObjectProvider<ScrapeMetrics> scrapes) {
      routerMetrics.monitor(router);
      MeterRegistry registry = registries.getIfUnique();
      if (registry == null) {
        logger.log(INFO, "kvroute: no unique MeterRegistry bean; kvroute's meters are not published");
        return GatewayObserver.NONE;
      }
      routerMetrics.bindTo(registry);
      events.ifAvailable(e -> e.bindTo(registry));
      scrapes.ifAvailable(m -> m.bindTo(registry));
      return new KvRouteMeters(registry, router.workers());
    }
  }
}
