package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.CacheAffinityConfig;
import io.kvroute.KvAwareConfig;
import io.kvroute.KvIndexer;
import io.kvroute.Router;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import java.io.InputStream;
import java.net.URI;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class KvRoutePropertiesTest {
  @Test
  void defaultsAreTheLibrarysDefaults() {
    KvRouteProperties p = new KvRouteProperties();
    assertEquals(BlockHasher.DEFAULT_BLOCK_SIZE, p.getBlockSize());
    assertEquals(Router.DEFAULT_BOOKING_TIMEOUT, p.getBookingTimeout());
    assertEquals(KvIndexer.DEFAULT_MAX_ENTRIES, p.getMaxIndexEntries());
    assertEquals(Router.DEFAULT_MAX_PROMPT_TOKENS, p.getMaxPromptTokens());
    assertEquals(Router.DEFAULT_EJECT_AFTER_FAILURES, p.getHealth().getEjectAfterFailures());
    assertEquals(Router.DEFAULT_INITIAL_BACKOFF, p.getHealth().getInitialBackoff());
    assertEquals(Router.DEFAULT_MAX_BACKOFF, p.getHealth().getMaxBackoff());
    assertEquals(KvAwareConfig.DEFAULT, new KvAwareConfig(p.getKvAware().getOverlapWeight(),
        p.getKvAware().getTemperature(), p.getKvAware().getHostOverlapCredit()));
    assertEquals(CacheAffinityConfig.DEFAULT, new CacheAffinityConfig(p.getCacheAffinity().getHomeBlocks(),
        p.getCacheAffinity().getLoadFactor(), p.getCacheAffinity().getMinOverlapFraction()));
    assertEquals(EngineMetricsScraper.DEFAULT_INTERVAL, p.getMetrics().getInterval());
    assertEquals(EngineMetricsScraper.DEFAULT_TIMEOUT, p.getMetrics().getTimeout());
    assertEquals(EngineMetricsScraper.DEFAULT_PATH, p.getMetrics().getPath());
    assertEquals(OkHttpTokenizer.DEFAULT_PATH, p.getTokenizer().getRemotePath());
    assertEquals(OkHttpTokenizer.DEFAULT_TIMEOUT, p.getTokenizer().getTimeout());
    assertEquals(KvRouteProperties.PolicyName.KV_AWARE, p.getPolicy());
    assertEquals(io.kvroute.transport.okhttp.RoutingForwarder.DEFAULT_MAX_ATTEMPTS, p.getMaxAttempts());
    assertFalse(p.getHeaders().isEnabled(), "routing headers disclose the topology: off by default");
  }

  private static void assertRefused(Executable setter, String property, String value) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, setter);
    assertTrue(e.getMessage().startsWith("kvroute." + property + " "), e.getMessage());
    assertTrue(e.getMessage().endsWith("but was " + value), e.getMessage());
  }

  @Test
  void settersRefuseBadValuesNamingThePropertyAndTheValue() {
    KvRouteProperties p = new KvRouteProperties();
    assertRefused(() -> p.setBlockSize(0), "block-size", "0");
    assertRefused(() -> p.setMaxAttempts(0), "max-attempts", "0");
    assertRefused(() -> p.setBookingTimeout(Duration.ZERO), "booking-timeout", "PT0S");
    assertRefused(() -> p.getKvAware().setHostOverlapCredit(1.5), "kv-aware.host-overlap-credit", "1.5");
    assertRefused(() -> p.getKvAware().setOverlapWeight(Double.NaN), "kv-aware.overlap-weight", "NaN");
    assertRefused(() -> p.getCacheAffinity().setMinOverlapFraction(-0.1), "cache-affinity.min-overlap-fraction",
        "-0.1");
    assertRefused(() -> p.getMetrics().setPath("metrics"), "metrics.path", "metrics");
    assertRefused(() -> p.getHeaders().setWorker("X Worker"), "headers.worker", "X Worker");
    assertRefused(() -> p.getHealth().setEjectAfterFailures(0), "health.eject-after-failures", "0");
    KvRouteProperties.WorkerProperties w = new KvRouteProperties.WorkerProperties();
    assertRefused(() -> w.setUrl(URI.create("tcp://10.0.0.5:5557")), "workers[].url", "tcp://10.0.0.5:5557");
    assertRefused(() -> w.setDataParallelRanks(0), "workers[].data-parallel-ranks", "0");
    assertRefused(() -> w.setId(" "), "workers[].id", "' '");
  }

  /** The metadata IDEs complete from lists every bindable property, each with a description. */
  @Test
  void configurationMetadataDescribesEveryProperty() throws Exception {
    JsonNode metadata;
    try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
      metadata = JsonMapper.shared().readTree(in);
    }
    Set<String> names = new HashSet<>();
    for (JsonNode property : metadata.get("properties")) {
      names.add(property.get("name").asString());
      assertTrue(property.hasNonNull("description") && !property.get("description").asString().isBlank(),
          property.toString());
    }
    for (String expected : new String[] {"kvroute.enabled", "kvroute.policy", "kvroute.block-size",
        "kvroute.workers", "kvroute.tokenizer.path", "kvroute.tokenizer.endpoint", "kvroute.headers.enabled",
        "kvroute.kv-aware.overlap-weight", "kvroute.cache-affinity.home-blocks", "kvroute.health.max-backoff",
        "kvroute.max-request-body", "kvroute.metrics.interval", "kvroute.events.enabled"}) {
      assertTrue(names.contains(expected), expected + " in " + names);
    }
    boolean policyHints = false;
    for (JsonNode hint : metadata.get("hints")) {
      if (hint.get("name").asString().equals("kvroute.policy")) {
        policyHints = hint.get("values").size() == KvRouteProperties.PolicyName.values().length;
      }
    }
    assertTrue(policyHints, "one hint per policy");
  }
}
