package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.cloud.gateway.route.RouteDefinition;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.ByteArrayResource;

/**
 * The {@code application.yml} blocks the READMEs tell a user to copy bind as they say: the route with the
 * {@code KvRoute} filter and two workers with their events endpoints.
 */
class ReadmeConfigurationTest {
  private static final Pattern YAML = Pattern.compile("```yaml\\n(.*?)```", Pattern.DOTALL);

  @ParameterizedTest
  @ValueSource(strings = {"README.md", "../README.md", "src/test/resources/application.yml"})
  void theDocumentedBlockBindsToARouteWithTheFilterAndTwoWorkers(String file) throws Exception {
    String text = Files.readString(Path.of(file), StandardCharsets.UTF_8);
    String yaml = text;
    if (file.endsWith(".md")) {
      Matcher m = YAML.matcher(text);
      yaml = null;
      while (m.find()) {
        if (m.group(1).contains("KvRoute")) {
          yaml = m.group(1);
          break;
        }
      }
      assertTrue(yaml != null, file + " has a yaml block with the KvRoute filter");
    }
    List<PropertySource<?>> sources = new YamlPropertySourceLoader().load(file,
        new ByteArrayResource(yaml.getBytes(StandardCharsets.UTF_8)));
    StandardEnvironment env = new StandardEnvironment();
    sources.forEach(env.getPropertySources()::addFirst);
    Binder binder = new Binder(ConfigurationPropertySources.get(env));

    List<RouteDefinition> routes = binder.bind("spring.cloud.gateway.server.webflux.routes",
        Bindable.listOf(RouteDefinition.class)).orElse(new ArrayList<>());
    assertEquals(1, routes.size(), file);
    RouteDefinition route = routes.get(0);
    assertEquals("KvRoute", route.getFilters().get(0).getName());
    assertEquals("Path", route.getPredicates().get(0).getName());
    assertEquals(List.of("/v1/completions", "/v1/chat/completions"),
        List.copyOf(route.getPredicates().get(0).getArgs().values()));

    KvRouteProperties p = binder.bind(KvRouteProperties.PREFIX, Bindable.of(KvRouteProperties.class)).get();
    assertEquals(KvRouteProperties.PolicyName.KV_AWARE, p.getPolicy());
    assertEquals(2, p.getWorkers().size());
    for (KvRouteProperties.WorkerProperties w : p.getWorkers()) {
      assertTrue(w.getId().startsWith("vllm-"));
      assertEquals("http", w.getUrl().getScheme());
      assertTrue(URI.create(w.getEvents()).getScheme().equals("tcp"), w.getEvents());
      assertTrue(w.getReplay().startsWith("tcp://"));
      assertEquals("kv-events", w.getTopic());
    }
  }
}
