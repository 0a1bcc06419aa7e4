package io.kvroute.spring.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** The gateway's meters with workers that come and go. */
class KvRouteMetersTest {
  @Test
  void aRemovedWorkersFailoverCounterLeavesWithIt() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    Router router = Router.newBuilder().build();
    KvRouteMeters meters = new KvRouteMeters(registry, router.workers());
    WorkerId stays = WorkerId.of("stays");
    router.addWorker(Worker.of(stays));
    for (int i = 0; i < 10; i++) {
      WorkerId pod = WorkerId.of("pod-" + i);
      router.addWorker(Worker.of(pod));
      meters.onFailover(pod);
      meters.onFailover(stays);
      assertEquals(1, registry.get(KvRouteMeters.FAILOVERS).tags("worker", pod.name()).counter().count(), 0.0);
      router.removeWorker(pod);
      meters.onFailover(pod); // reported after it left
    }
    assertEquals(10, registry.get(KvRouteMeters.FAILOVERS).tags("worker", "stays").counter().count(), 0.0);
    for (var meter : registry.getMeters()) {
      String worker = meter.getId().getTag("worker");
      assertNull(worker == null || worker.equals("stays") ? null : worker,
          () -> "a meter of a departed worker: " + meter.getId());
    }
  }
}
