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
        .build();
    router.addWorker(Worker.newBuilder(id).endpoint(Worker.HTTP, server.baseUri()).model(MODEL).build());
    return server;
  }

  /**
   * As {@link #startSim(Router, WorkerId, double)}, counting every generation request that reaches the simulator
   * in {@code requests}.
   */
  static SimServer startSim(Router router, WorkerId id, double speedup, java.util.concurrent.atomic.AtomicInteger
      requests) throws IOException {
    SimServer server = SimServer.newBuilder()
        .engine(SimEngineConfig.newBuilder().modelName(MODEL).build())
        .kvEvents(false)
        .speedup(speedup)
        .eventListener(events -> router.eventSink().applyAll(id, events))
        .requestListener((path, requestId) -> requests.incrementAndGet())
        .build();
    router.addWorker(Worker.newBuilder(id).endpoint(Worker.HTTP, server.baseUri()).model(MODEL).build());
    return server;
  }

  /** Tells {@code router} that {@code worker} holds the first blocks of {@code tokens}, so kvAware prefers it. */
  static void pretendCached(Router router, WorkerId worker, int[] tokens, int blocks) {
    long[] hashes = new long[blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = 7_000_000L + i + 1000L * (worker.hashCode() & 0xffff) + 31L * java.util.Arrays.hashCode(tokens);
    }
    router.eventSink().apply(worker, io.kvroute.KvEvent.BlockStored.of(hashes, null,
        java.util.Arrays.copyOf(tokens, blocks * 16), 16));
  }

  /**
   * A worker that is hung: a real loopback socket whose connections are accepted (as the kernel accepts them for
   * a SIGSTOPped process) and never read from or answered. Counts the connections that reached it.
   */
  static final class HungServer implements AutoCloseable {
    private final ServerSocket socket;
    private final java.util.List<java.net.Socket> held = new java.util.concurrent.CopyOnWriteArrayList<>();
    final java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();

    HungServer() throws IOException {
      socket = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
      Thread acceptor = new Thread(() -> {
        while (!socket.isClosed()) {
          try {
            held.add(socket.accept());
            connections.incrementAndGet();
          } catch (IOException e) {
            return; // closed
          }
        }
      }, "hung-server");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }

    @Override
    public void close() throws IOException {
      socket.close();
      for (java.net.Socket s : held) {
        s.close();
      }
    }
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
