package io.kvroute.jmh;

import io.kvroute.EventStreamState;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sync.nats.NatsLoadSync;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@link SharedLoadBenchmark}'s peer replica in a JVM of its own, as in a deployment where the peer runs on another
 * host: {@link #main} runs it (a {@link Router} with a {@link NatsLoadSync} and a {@link PeerClient}, the same
 * workers, prompts and seed as the benchmark's in-JVM peer), and {@link #launch} starts one from the benchmark and
 * returns its handle; the handle is not thread-safe (one thread drives it). With {@code -Dbench.peerCpus=LIST} the
 * process runs under {@code taskset -c LIST}, so that it and {@code nats-server} can be kept off the measured
 * thread's core.
 *
 * <p>The process reads commands from its standard input, one per line: {@code step N} routes N requests at once
 * (the benchmark's warm-up by count, one per {@link SharedLoadBenchmark#PEER_EVERY} of the measured router's),
 * {@code rate N} then routes N a second on a thread of its own, and {@code stop} (or the end of the input: the
 * benchmark died) stops, prints what the peer did and its process's CPU time, says goodbye and exits. It prints
 * {@code ready} once it sees another replica over NATS.
 *
 * <pre>
 * java -cp jmh/target/benchmarks.jar io.kvroute.jmh.SyncPeer nats://127.0.0.1:4222 kvroute.bench approximate 2048 16
 * </pre>
 */
public final class SyncPeer implements AutoCloseable {
  private final Process process;
  private final Writer commands;
  private final CountDownLatch ready = new CountDownLatch(1);

  private SyncPeer(Process process) {
    this.process = process;
    this.commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread echo = new Thread(() -> {
      try (BufferedReader out = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = out.readLine()) != null; ) {
          if (line.equals("ready")) {
            ready.countDown();
          }
          System.out.println("peer process | " + line);
        }
      } catch (IOException e) {
        System.out.println("peer process | output lost: " + e);
      }
    }, "bench-peer-output");
    echo.setDaemon(true);
    echo.start();
  }

  /**
   * Starts a peer replica process on this JVM's class path, with this JVM's {@code java}.
   *
   * @param url the NATS server
   * @param subject the replicas' subject
   * @param policy {@code kvAware} or {@code approximate}
   * @return its handle; {@link #close} stops it
   * @throws IOException if it cannot be started
   */
  static SyncPeer launch(String url, String subject, String policy, int promptTokens, int workers)
      throws IOException {
    List<String> command = new ArrayList<>();
    String cpus = System.getProperty("bench.peerCpus", "");
    if (!cpus.isEmpty()) {
      command.addAll(List.of("taskset", "-c", cpus));
    }
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-Xms1g", "-Xmx1g", "-cp", System.getProperty("java.class.path"),
        SyncPeer.class.getName(), url, subject, policy, Integer.toString(promptTokens), Integer.toString(workers)));
    System.out.println("peer process: " + String.join(" ", command.subList(0, command.size() - 5)).replaceAll(
        "-cp \\S+", "-cp <class path>") + " " + String.join(" ", command.subList(command.size() - 5,
        command.size())));
    return new SyncPeer(new ProcessBuilder(command).redirectErrorStream(true).start());
  }

  /** Waits until the peer sees another replica; false if it did not within the timeout or exited. */
  boolean awaitReady(long timeout, TimeUnit unit) throws InterruptedException {
    return ready.await(timeout, unit);
  }

  /** Has the peer route {@code n} requests now (asynchronously: it reads the command when it can). */
  void step(int n) throws IOException {
    send("step " + n);
  }

  /** Has the peer route {@code perSecond} requests a second from now on. */
  void rate(int perSecond) throws IOException {
    send("rate " + perSecond);
  }

  private void send(String command) throws IOException {
    commands.write(command);
    commands.write('\n');
    commands.flush();
  }

  /** Stops the peer (it says goodbye to its peers and prints what it did) and waits for it to exit. */
  @Override
  public void close() throws InterruptedException {
    try {
      send("stop");
    } catch (IOException e) {
      // it exited already
    }
    if (!process.waitFor(15, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(5, TimeUnit.SECONDS);
    }
  }

  /**
   * Runs a peer replica until told to stop.
   *
   * @param args the NATS server's URL, the subject, the policy, prompt tokens and workers
   * @throws Exception if it cannot connect or is interrupted
   */
  public static void main(String[] args) throws Exception {
    String url = args[0];
    String subject = args[1];
    String policy = args[2];
    int promptTokens = Integer.parseInt(args[3]);
    int workers = Integer.parseInt(args[4]);
    NatsLoadSync sync = NatsLoadSync.newBuilder().servers(url).subject(subject).replicaName("peer").build();
    Router router = Router.newBuilder().policy(SharedLoadBenchmark.policy(policy)).randomSeed(Workload.SEED + 1)
        .sharedLoad(sync).build();
    for (WorkerId id : Workload.workers(workers)) {
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    PeerClient client = new PeerClient(router, SharedLoadBenchmark.prompts(promptTokens));
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (sync.peers().isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    System.out.println(sync.peers().isEmpty() ? "no other replica seen within 30 s" : "ready");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    long cpu0 = cpuNanos();
    int rate = 0;
    for (String line; (line = in.readLine()) != null && !line.equals("stop"); ) {
      String[] words = line.trim().split(" ");
      try {
        if (words.length == 2 && words[0].equals("step")) {
          for (int i = Integer.parseInt(words[1]); i > 0; i--) {
            client.step();
          }
        } else if (words.length == 2 && words[0].equals("rate")) {
          rate = Integer.parseInt(words[1]);
          cpu0 = cpuNanos();
          client.start(rate, "peer-client");
        } else {
          System.out.println("unknown command: " + line);
        }
      } catch (NumberFormatException e) {
        System.out.println("bad command: " + line);
      }
    }
    client.stop();
    System.out.printf(Locale.ROOT, "routed %d requests (last at %d/s), process CPU %.2f s since then, sync %s%n",
        client.steps(), rate, (cpuNanos() - cpu0) / 1e9, sync.stats());
    sync.close();
    System.out.flush();
    System.exit(0);
  }

  private static long cpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : 0;
  }
}
