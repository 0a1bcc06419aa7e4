package io.kvroute.sync.nats;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * A router replica in its own JVM, for the test that kills one: it joins the subject, books {@code count} requests
 * it never closes, prints {@code ready} and waits to be killed. Arguments: server URL, subject, replica name, count,
 * heartbeat ms, TTL ms.
 */
public final class ReplicaProcess {
  private ReplicaProcess() {}

  public static void main(String[] args) throws Exception {
    NatsLoadSync sync = NatsLoadSync.newBuilder().servers(args[0]).subject(args[1]).replicaName(args[2])
        .heartbeatInterval(Duration.ofMillis(Long.parseLong(args[4])))
        .replicaTtl(Duration.ofMillis(Long.parseLong(args[5]))).build();
    Router router = Router.newBuilder().policy(RouterPolicy.leastLoaded()).sharedLoad(sync).build();
    router.addWorker(Worker.of(WorkerId.of("w0")));
    router.addWorker(Worker.of(WorkerId.of("w1")));
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!sync.isConnected() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    SplittableRandom random = new SplittableRandom(7);
    int count = Integer.parseInt(args[3]);
    for (int i = 0; i < count; i++) {
      router.select(random.ints(160, 0, 50_000).toArray()); // never closed: only the TTL releases it at peers
    }
    sync.flush();
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
