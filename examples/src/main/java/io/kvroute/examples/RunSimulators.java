package io.kvroute.examples;

import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Starts simulated vLLM servers on loopback for testing a gateway without GPUs, prints their HTTP and ZeroMQ
 * endpoints, and runs until interrupted; not thread-safe (a command-line program).
 *
 * <pre>{@code
 * java -cp examples/target/kvroute-examples.jar io.kvroute.examples.RunSimulators --workers 3 [--port 8001]
 *     [--blocks 585] [--speedup 1] [--model kvroute-sim] [--events-port 20080]
 * }</pre>
 *
 * With {@code --port P}, worker {@code i} listens on {@code P+i} (and publishes events on {@code events-port+i},
 * with replay on {@code events-port+100+i}); by default every port is ephemeral.
 */
public final class RunSimulators {
  private RunSimulators() {}

  public static void main(String[] args) throws Exception {
    int workers = 3;
    int port = 0;
    int eventsPort = 0;
    int blocks = SimEngineConfig.DEFAULT_NUM_BLOCKS;
    double speedup = 1;
    String model = "kvroute-sim";
    for (int i = 0; i + 1 < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--workers" -> workers = Integer.parseInt(value);
        case "--port" -> port = Integer.parseInt(value);
        case "--events-port" -> eventsPort = Integer.parseInt(value);
        case "--blocks" -> blocks = Integer.parseInt(value);
        case "--speedup" -> speedup = Double.parseDouble(value);
        case "--model" -> model = value;
        default -> throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    SimEngineConfig engine = SimEngineConfig.newBuilder().numBlocks(blocks).modelName(model).build();
    List<SimServer> servers = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      servers.add(SimServer.newBuilder()
          .engine(engine)
          .port(port == 0 ? 0 : port + w)
          .kvEventsEndpoint("tcp://127.0.0.1:" + (eventsPort == 0 ? 0 : eventsPort + w))
          .kvEventsReplayEndpoint("tcp://127.0.0.1:" + (eventsPort == 0 ? 0 : eventsPort + 100 + w))
          .speedup(speedup)
          .build());
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      servers.forEach(SimServer::close);
      stopped.countDown();
    }));
    for (int w = 0; w < servers.size(); w++) {
      SimServer s = servers.get(w);
      System.out.printf("sim-%d  http %s  kv-events %s (topic kv-events)  replay %s%n", w, s.baseUri(),
          s.kvEventsEndpoint(), s.kvEventsReplayEndpoint());
    }
    System.out.println("Model " + model + ", " + blocks + " blocks of 16 tokens per worker, speed-up " + speedup
        + ". Ctrl-C to stop.");
    stopped.await();
  }
}
