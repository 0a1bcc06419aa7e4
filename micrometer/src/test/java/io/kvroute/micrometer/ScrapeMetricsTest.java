package io.kvroute.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.transport.okhttp.EngineMetricsScraper;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import org.junit.jupiter.api.Test;

/** A real scraper against a simulated vLLM's /metrics, and against a port nothing listens on. */
class ScrapeMetricsTest {
  @Test
  void scrapesAndTheReportedLoadArePublishedPerWorker() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    ScrapeMetrics metrics = new ScrapeMetrics();
    metrics.bindTo(registry);
    Router router = Router.newBuilder().build();
    URI dead;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      dead = URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).build()) {
      router.addWorker(Worker.of(WorkerId.of("live"), sim.baseUri()));
      router.addWorker(Worker.of(WorkerId.of("dead"), dead));
      try (EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).listener(metrics).build()) {
        scraper.scrapeNow();
        scraper.scrapeNow();
      }
      SimServer.Snapshot idle = sim.snapshot();
      assertEquals(2, registry.get(ScrapeMetrics.SCRAPES).tags("worker", "live", "outcome", "success").counter()
          .count(), 0.0);
      assertEquals(2, registry.get(ScrapeMetrics.SCRAPES).tags("worker", "dead", "outcome", "connection").counter()
          .count(), 0.0);
      assertEquals(0, registry.get(ScrapeMetrics.SCRAPES).tags("worker", "live", "outcome", "timeout").counter()
          .count(), 0.0);
      assertEquals(idle.running(), registry.get(ScrapeMetrics.RUNNING).tags("worker", "live").gauge().value(), 0.0);
      assertEquals(idle.waiting(), registry.get(ScrapeMetrics.WAITING).tags("worker", "live").gauge().value(), 0.0);
      assertEquals(idle.kvCacheUsage(), registry.get(ScrapeMetrics.KV_CACHE_USAGE).tags("worker", "live").gauge()
          .value(), 1e-9);
      assertTrue(Double.isNaN(registry.get(ScrapeMetrics.RUNNING).tags("worker", "dead").gauge().value()));
    }
  }

  @Test
  void aRemovedWorkersLastLoadLeavesWithIt() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    ScrapeMetrics metrics = new ScrapeMetrics();
    metrics.bindTo(registry);
    Router router = Router.newBuilder().build();
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).build();
        EngineMetricsScraper scraper = EngineMetricsScraper.newBuilder(router).listener(metrics).build()) {
      router.addWorker(Worker.of(WorkerId.of("stays"), sim.baseUri()));
      router.addWorker(Worker.of(WorkerId.of("leaves"), sim.baseUri()));
      scraper.scrapeNow();
      assertEquals(0, registry.get(ScrapeMetrics.RUNNING).tags("worker", "leaves").gauge().value(), 0.0);
      router.removeWorker(WorkerId.of("leaves"));
      scraper.scrapeNow(); // the next round sees it gone
      // Before: its gauges showed its last load for good, and every worker that ever came left ten meters.
      assertTrue(registry.getMeters().stream().noneMatch(m -> "leaves".equals(m.getId().getTag("worker"))),
          "meters of the removed worker remain");
      assertEquals(2, registry.get(ScrapeMetrics.SCRAPES).tags("worker", "stays", "outcome", "success").counter()
          .count(), 0.0);
      router.addWorker(Worker.of(WorkerId.of("leaves"), sim.baseUri())); // back under the same id: from zero
      scraper.scrapeNow();
      assertEquals(1, registry.get(ScrapeMetrics.SCRAPES).tags("worker", "leaves", "outcome", "success").counter()
          .count(), 0.0);
    }
  }
}
