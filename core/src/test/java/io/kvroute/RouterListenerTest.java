package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The first-token and close callbacks, and several listeners on one router. */
class RouterListenerTest {
  private static final WorkerId A = WorkerId.of("a");
  private final FakeTicker ticker = new FakeTicker();

  /** Records every lifecycle callback as text. */
  private static final class Recorder implements RouterListener {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onRouted(Routing routing) {
      calls.add("routed " + routing.workerId().name() + " " + routing.predictedCachedTokens());
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      calls.add("first " + routing.workerId().name() + " " + elapsedNanos + " " + routing.predictedCachedTokens());
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      calls.add("closed " + routing.workerId().name() + " " + elapsedNanos);
    }

    @Override
    public void onWorkerAdded(Worker worker) {
      calls.add("added " + worker.id().name());
    }
  }

  /** Throws from every callback. */
  private static final class Thrower implements RouterListener {
    @Override
    public void onRouted(Routing routing) {
      throw new IllegalStateException("boom");
    }

    @Override
    public void onFirstToken(Routing routing, long elapsedNanos) {
      throw new IllegalStateException("boom");
    }

    @Override
    public void onClosed(Routing routing, long elapsedNanos) {
      throw new IllegalStateException("boom");
    }

    @Override
    public void onWorkerAdded(Worker worker) {
      throw new IllegalStateException("boom");
    }
  }

  @Test
  void firstTokenAndCloseReportTheTimeSinceSelectionByTheRoutersTicker() {
    Recorder recorder = new Recorder();
    Router router = Router.newBuilder().ticker(ticker).listener(recorder).build();
    router.addWorker(Worker.of(A));
    int[] prompt = Fixtures.prompt(1, 160);
    router.eventSink().apply(A, Fixtures.storedFor(prompt, 16, 5));
    Routing routing = router.select(prompt);
    ticker.advance(Duration.ofMillis(30));
    routing.firstToken();
    routing.firstToken(); // only the first call reports
    ticker.advance(Duration.ofMillis(70));
    routing.close();
    routing.close(); // idempotent
    long ms = 1_000_000L;
    // A fully cached 160-token prompt predicts 144 cached tokens: vLLM computes the last token's block.
    assertEquals(List.of("added a", "routed a 144", "first a " + 30 * ms + " 144", "closed a " + 100 * ms),
        recorder.calls);
  }

  @Test
  void closingWithoutAFirstTokenReportsOnlyTheClose() {
    Recorder recorder = new Recorder();
    Router router = Router.newBuilder().ticker(ticker).listener(recorder).build();
    router.addWorker(Worker.of(A));
    Routing routing = router.select(Fixtures.prompt(2, 40));
    ticker.advance(Duration.ofMillis(5));
    routing.close();
    routing.firstToken(); // after close: no first token
    assertEquals(List.of("added a", "routed a 0", "closed a " + 5_000_000L), recorder.calls);
  }

  @Test
  void anExpiredBookingIsCountedNotReportedClosed() {
    Recorder recorder = new Recorder();
    int[] expired = new int[1];
    Router router = Router.newBuilder().ticker(ticker).bookingTimeout(Duration.ofSeconds(10)).listener(recorder)
        .listener(new RouterListener() {
          @Override
          public void onBookingsExpired(int count) {
            expired[0] += count;
          }
        }).build();
    router.addWorker(Worker.of(A));
    Routing leaked = router.select(Fixtures.prompt(3, 40)); // never closed in time
    ticker.advance(Duration.ofSeconds(11));
    router.select(Fixtures.prompt(4, 40)).close(); // expires the first
    leaked.close(); // too late: nothing more to report
    assertEquals(1, expired[0]);
    assertEquals(List.of("added a", "routed a 0", "routed a 0", "closed a 0"), recorder.calls);
  }

  @Test
  void everyListenerHearsEveryCallbackEvenWhenOneThrows() {
    Recorder first = new Recorder();
    Recorder second = new Recorder();
    Router router = Router.newBuilder().ticker(ticker).listener(first).listener(new Thrower()).listener(second)
        .build();
    router.addWorker(Worker.of(A, URI.create("http://127.0.0.1:1")));
    try (Routing routing = router.select(Fixtures.prompt(5, 64))) {
      ticker.advance(Duration.ofMillis(1));
      routing.firstToken();
    }
    List<String> expected = List.of("added a", "routed a 0", "first a 1000000 0", "closed a 1000000");
    assertEquals(expected, first.calls);
    assertEquals(expected, second.calls);
  }

  @Test
  void aSingleThrowingListenerNeverBreaksTheCaller() {
    Router router = Router.newBuilder().ticker(ticker).listener(new Thrower()).build();
    router.addWorker(Worker.of(A));
    Routing routing = router.select(Fixtures.prompt(6, 64));
    routing.firstToken();
    routing.close();
    assertTrue(routing.isClosed());
    assertEquals(0, router.activeRequests(A));
  }

  private static double allocatedPerRequest(Router router, int[][] prompts) {
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    double least = Double.MAX_VALUE;
    for (int round = 0; round < 6; round++) { // early rounds grow buffers and warm up; keep the least
      long before = mx.getThreadAllocatedBytes(thread);
      for (int i = 0; i < 5_000; i++) {
        try (Routing r = router.select(prompts[i & 31])) {
          r.firstToken();
        }
      }
      least = Math.min(least, (double) (mx.getThreadAllocatedBytes(thread) - before) / 5_000);
    }
    return least;
  }

  @Test
  void listenersAddNoAllocationToARequest() {
    int[][] prompts = new int[32][];
    for (int i = 0; i < prompts.length; i++) {
      prompts[i] = Fixtures.prompt(100 + i, 512);
    }
    RouterListener counting = new RouterListener() {
      long calls;

      @Override
      public void onRouted(Routing routing) {
        calls++;
      }

      @Override
      public void onFirstToken(Routing routing, long elapsedNanos) {
        calls += elapsedNanos >= 0 ? 1 : 0;
      }

      @Override
      public void onClosed(Routing routing, long elapsedNanos) {
        calls += elapsedNanos >= 0 ? 1 : 0;
      }
    };
    Router plain = Router.newBuilder().randomSeed(1).build();
    Router heard = Router.newBuilder().randomSeed(1).listener(counting).listener(new RouterListener() {}).build();
    for (Router r : List.of(plain, heard)) {
      r.addWorker(Worker.of(A));
      r.addWorker(Worker.of(WorkerId.of("b")));
      r.reportEventStream(A, EventStreamState.LIVE);
      r.reportEventStream(WorkerId.of("b"), EventStreamState.LIVE);
    }
    double base = allocatedPerRequest(plain, prompts);
    double withListeners = allocatedPerRequest(heard, prompts);
    assertTrue(withListeners - base < 8, "two listeners add " + (withListeners - base) + " B per request ("
        + base + " without)");
  }

  @Test
  void theCompositeForwardsEveryCallbackOfTheInterface() {
    for (Method m : RouterListener.class.getMethods()) {
      if (Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      try {
        Method impl = CompositeRouterListener.class.getDeclaredMethod(m.getName(), m.getParameterTypes());
        assertEquals(CompositeRouterListener.class, impl.getDeclaringClass(), m.getName());
      } catch (NoSuchMethodException e) {
        throw new AssertionError("CompositeRouterListener does not forward " + m, e);
      }
    }
  }

  @Test
  void aThrowingRegistryListenerNeitherBreaksTheChangeNorSilencesTheListenersAfterIt() {
    Router router = Router.newBuilder().ticker(ticker).build();
    RouterListener thrower = new RouterListener() {
      @Override
      public void onWorkerAdded(Worker worker) {
        throw new IllegalStateException("boom");
      }

      @Override
      public void onWorkerRemoved(Worker worker) {
        throw new IllegalStateException("boom");
      }

      @Override
      public void onWorkerUpdated(Worker worker) {
        throw new IllegalStateException("boom");
      }
    };
    List<String> heard = Collections.synchronizedList(new ArrayList<>());
    router.workers().addListener(thrower);
    router.workers().addListener(new RouterListener() {
      @Override
      public void onWorkerAdded(Worker worker) {
        heard.add("added " + worker.id().name());
      }

      @Override
      public void onWorkerRemoved(Worker worker) {
        heard.add("removed " + worker.id().name());
      }

      @Override
      public void onWorkerUpdated(Worker worker) {
        heard.add("updated " + worker.id().name());
      }
    });
    router.addWorker(Worker.of(A));
    router.workers().update(Worker.of(A, URI.create("http://127.0.0.1:1")));
    assertTrue(router.updateLoad(A, new EngineLoad(1, 0, 0.5, 7)));
    assertTrue(router.removeWorker(A));
    assertEquals(List.of("added a", "updated a", "updated a", "removed a"), heard);
    assertEquals(0, router.workers().size());
  }

  @Test
  void aRemovedRegistryListenerHearsNoLaterChange_andOnlyItIsRemoved() {
    Router router = Router.newBuilder().ticker(ticker).build();
    List<String> first = Collections.synchronizedList(new ArrayList<>());
    List<String> second = Collections.synchronizedList(new ArrayList<>());
    RouterListener one = new RouterListener() {
      @Override
      public void onWorkerAdded(Worker worker) {
        first.add(worker.id().name());
      }
    };
    RouterListener two = new RouterListener() {
      @Override
      public void onWorkerAdded(Worker worker) {
        second.add(worker.id().name());
      }
    };
    router.workers().addListener(one);
    router.workers().addListener(two);
    router.addWorker(Worker.of(A));
    assertTrue(router.workers().removeListener(one));
    assertFalse(router.workers().removeListener(one), "already removed");
    assertFalse(router.workers().removeListener(new RouterListener() { }), "never added");
    router.addWorker(Worker.of(WorkerId.of("later")));
    assertEquals(List.of("a"), first);
    assertEquals(List.of("a", "later"), second);
  }

  @Test
  void aRemovedWorkersRequestReportsNoHealthChangeForIt() {
    List<String> changes = Collections.synchronizedList(new ArrayList<>());
    Router router = Router.newBuilder().ticker(ticker).listener(new RouterListener() {
      @Override
      public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
        changes.add(worker.name() + " " + from + " -> " + to);
      }
    }).build();
    router.addWorker(Worker.of(A));
    Routing inFlight = router.select(Fixtures.prompt(7, 64));
    router.reportFailure(A, FailureKind.TIMEOUT);
    assertEquals(List.of("a HEALTHY -> SUSPECT"), changes);
    assertTrue(router.removeWorker(A));
    inFlight.firstToken(); // a token proves a suspect worker alive, but this one is gone
    inFlight.close();
    assertEquals(List.of("a HEALTHY -> SUSPECT"), changes, "a change reported for a worker no longer registered");
    router.addWorker(Worker.of(A)); // the same id again: a new registration, healthy, with nothing to report
    assertEquals(HealthState.HEALTHY, router.health(A));
    assertEquals(1, changes.size());
  }

  @Test
  void aLoadUpdateIsReportedAsAWorkerUpdate() {
    List<String> updates = Collections.synchronizedList(new ArrayList<>());
    Router router = Router.newBuilder().listener(new RouterListener() {
      @Override
      public void onWorkerUpdated(Worker worker) {
        updates.add(worker.id().name());
      }
    }).build();
    router.addWorker(Worker.of(A));
    assertTrue(router.updateLoad(A, new EngineLoad(2, 1, 0.5, 7)));
    assertEquals(List.of("a"), updates);
    assertTrue(!router.updateLoad(WorkerId.of("unknown"), new EngineLoad(0, 0, 0, 7)));
    assertEquals(List.of("a"), updates, "an unknown worker's load is not reported");
  }
}
