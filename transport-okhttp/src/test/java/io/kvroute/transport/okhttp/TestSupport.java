package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.util.function.BooleanSupplier;

/** Shared helpers of the loopback tests. */
final class TestSupport {
  static final String MODEL = "sim-model";

  private TestSupport() {}

  /**
   * Starts a simulated vLLM on loopback whose KV events go straight into {@code router}'s event sink (the
   * simulator's in-process event hook), and registers it as {@code id} serving {@link #MODEL}.
   */
  static SimServer startSim(Router router, WorkerId id, double speedup) throws IOException {
    SimServer server = SimServer.newBuilder()
        .engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .kvEvents(false)
        .speedup(speedup)
        .eventListener(events -> router.eventSink().applyAll(id, events))
        .start();
    router.addWorker(Worker.newBuilder(id).endpoint(Worker.HTTP, server.baseUri()).model(MODEL).build());
    return server;
  }

  /** A loopback URI nothing listens on (a port just bound and released). */
  static URI deadEndpoint() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }
  }

  /** Waits (up to 20 s) for {@code condition}; fails with {@code what} if it never holds. */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        fail("timed out waiting for " + what);
      }
      Thread.sleep(5);
    }
  }

  /** {@code n} distinct words with a common tag: {@code tag0 tag1 …}, one simulator token each. */
  static String words(String tag, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "" : " ").append(tag).append(i);
    }
    return sb.toString();
  }
}
