package io.kvroute.spring.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventSubscriber;
import io.kvroute.micrometer.RouterMetrics;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import io.kvroute.transport.okhttp.Tokenizer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The auto-configuration's beans, built from properties alone (no engine is contacted: scraping is off). */
class KvRouteAutoConfigurationTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(KvRouteAutoConfiguration.class))
      .withPropertyValues("kvroute.metrics.enabled=false",
          "kvroute.workers[0].url=http://127.0.0.1:1", "kvroute.workers[0].model=qwen3",
          "kvroute.workers[1].id=b", "kvroute.workers[1].url=http://127.0.0.2:8000/",
          "kvroute.workers[1].data-parallel-ranks=2");

  @Test
  void buildsTheRouterWithTheConfiguredWorkersPolicyAndBlockSize() {
    runner.withPropertyValues("kvroute.policy=cache-affinity", "kvroute.block-size=32").run(context -> {
      Router router = context.getBean(Router.class);
      assertThat(router.blockSize()).isEqualTo(32);
      assertThat(router.policy().name()).isEqualTo(io.kvroute.RouterPolicy.cacheAffinity().name());
      assertThat(router.workers().snapshot()).extracting(Worker::id).containsExactly(
          WorkerId.of("127.0.0.1:1"), new WorkerId("b", 0), new WorkerId("b", 1));
      Worker first = router.workers().find(WorkerId.of("127.0.0.1:1")).orElseThrow();
      assertThat(first.model()).isEqualTo("qwen3");
      assertThat(first.endpoint(Worker.HTTP)).isEqualTo(URI.create("http://127.0.0.1:1"));
      assertThat(context).hasSingleBean(KvRouteGatewayFilterFactory.class).hasSingleBean(KvRouteTargetFilter.class)
          .hasSingleBean(KvEventSubscriber.class).doesNotHaveBean(EngineMetricsScraper.class)
          .hasSingleBean(RouterMetrics.class);
      assertThat(context.getBean(Tokenizer.class)).isInstanceOf(OkHttpTokenizer.class);
      assertThat(context.getBean(KvEventSubscriber.class).workers()).isEmpty(); // no events endpoints configured
    });
  }

  @Test
  void subscribesToTheWorkersThatNameAnEventsEndpoint() {
    runner.withPropertyValues("kvroute.workers[1].events=tcp://127.0.0.2:5557", "kvroute.workers[1].topic=kv")
        .run(context -> {
          Router router = context.getBean(Router.class);
          assertThat(router.workers().find(new WorkerId("b", 1)).orElseThrow()
              .endpoint(KvEventSubscriber.EVENTS_ENDPOINT)).isEqualTo(URI.create("tcp://127.0.0.2:5558"));
          KvEventSubscriber subscriber = context.getBean(KvEventSubscriber.class);
          org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).untilAsserted(() ->
              assertThat(subscriber.workers()).containsExactly(new WorkerId("b", 0), new WorkerId("b", 1)));
        });
  }

  @Test
  void anApplicationsOwnBeansReplaceKvroutes() {
    Tokenizer mine = new SimLocalTokenizer();
    runner.withBean(Tokenizer.class, () -> mine).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
        .run(context -> {
          assertThat(context.getBean(Tokenizer.class)).isSameAs(mine);
          assertThat(context.getBean(GatewayObserver.class)).isInstanceOf(KvRouteMeters.class);
          assertThat(context.getBean(SimpleMeterRegistry.class).find("kvroute.requests.active").gauges())
              .hasSize(3);
        });
  }

  /**
   * {@code kvroute.tokenizer.path} with kvroute-tokenizers on the classpath: its Hugging Face tokenizer, loaded
   * locally (a four-word WordLevel tokenizer.json keeps the test fast; the module's own tests cover real models).
   */
  @Test
  void theTokenizerPathLoadsTheLocalTokenizer(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("tokenizer.json"), "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,"
        + "\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Whitespace\"},"
        + "\"post_processor\":null,\"decoder\":null,\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"[UNK]\":0,"
        + "\"route\":1,\"by\":2,\"prefix\":3},\"unk_token\":\"[UNK]\"}}");
    runner.withPropertyValues("kvroute.tokenizer.path=" + dir).run(context -> {
      assertThat(context).hasNotFailed();
      Tokenizer tokenizer = context.getBean(Tokenizer.class);
      assertThat(tokenizer.getClass().getName()).isEqualTo(LocalTokenizerHook.CLASS);
      int[] ids = tokenizer.tokenizeRequest("{\"prompt\":\"route by prefix always\"}".getBytes(StandardCharsets.UTF_8));
      assertThat(ids).containsExactly(1, 2, 3, 0); // the vocabulary's ids; "always" is unknown
    });
  }

  @Test
  void disabledLeavesTheGatewayAlone() {
    runner.withPropertyValues("kvroute.enabled=false").run(context -> assertThat(context)
        .doesNotHaveBean(Router.class).doesNotHaveBean(KvRouteGatewayFilterFactory.class));
  }

  @Test
  void misconfigurationFailsTheStartWithTheProperty() {
    runner.withPropertyValues("kvroute.tokenizer.path=/no/such/tokenizer.json").run(context -> {
      assertThat(context).getFailure().hasMessageContaining("kvroute.tokenizer.path /no/such/tokenizer.json could "
          + "not be loaded");
      assertThat(context).getFailure().rootCause().hasMessageContaining("/no/such/tokenizer.json");
    });
    runner.withClassLoader(new FilteredClassLoader(LocalTokenizerHook.CLASS))
        .withPropertyValues("kvroute.tokenizer.path=/models/qwen3/tokenizer.json").run(context -> assertThat(
            context).getFailure().rootCause().hasMessageContaining("kvroute.tokenizer.path")
            .hasMessageContaining("kvroute-tokenizers is not on the classpath"));
    runner.withPropertyValues("kvroute.workers[1].id=127.0.0.1:1").run(context -> assertThat(context)
        .getFailure().rootCause().hasMessageContaining("kvroute.workers[1].id 127.0.0.1:1 is not unique"));
    runner.withPropertyValues("kvroute.workers[2].id=c").run(context -> assertThat(context).getFailure()
        .rootCause().hasMessageContaining("kvroute.workers[2].url must be set"));
    runner.withPropertyValues("kvroute.block-size=-1").run(context -> assertThat(context).getFailure()
        .rootCause().hasMessageContaining("kvroute.block-size must be positive but was -1"));
    runner.withPropertyValues("kvroute.health.initial-backoff=10s", "kvroute.health.max-backoff=1s").run(
        context -> assertThat(context).getFailure().rootCause().hasMessageContaining("kvroute.health.max-backoff"));
  }
}
