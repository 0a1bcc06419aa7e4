package io.kvroute.transport.okhttp;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One simulated vLLM worker in its own JVM ({@code io.kvroute.sim.SimMain}), so that it can be killed with
 * SIGKILL, stopped with SIGSTOP and restarted on the same ports with a cold cache; not thread-safe (one test
 * thread drives it). Every generation request it receives is counted by its {@code X-Request-Id} in a map shared
 * by all processes of a test, which is how duplicates are detected.
 */
final class SimProcess {
  private static final Path LOGS = Path.of("target", "fault-sims");
  private static final AtomicInteger STARTS = new AtomicInteger();

  final String name;
  private final List<String> args;
  private final Map<String, AtomicInteger> received;
  private Process process;
  private URI http;
  private String events;
  private String replay;

  private SimProcess(String name, List<String> args, Map<String, AtomicInteger> received) {
    this.name = name;
    this.args = args;
    this.received = received;
  }

  /** Starts a worker on free ports and waits until it serves. */
  static SimProcess start(String name, Map<String, AtomicInteger> received, String... options) throws Exception {
    List<String> args = new ArrayList<>(List.of(options));
    SimProcess p = new SimProcess(name, args, received);
    p.launch(args);
    return p;
  }

  /**
   * Starts the worker again on the same HTTP, event and replay ports (a restart: the engine's cache is cold),
   * with {@code options} replacing the original ones.
   */
  void restart(String... options) throws Exception {
    if (process.isAlive()) {
      kill9();
    }
    List<String> restartArgs = new ArrayList<>(List.of(options));
    restartArgs.addAll(List.of("--port", String.valueOf(http.getPort()), "--events-port", port(events),
        "--replay-port", port(replay)));
    Exception last = null;
    for (int i = 0; i < 20; i++) { // the kernel may take a moment to release the dead process's ports
      try {
        launch(restartArgs);
        return;
      } catch (IOException e) {
        last = e;
        Thread.sleep(100);
      }
    }
    throw last;
  }

  private static String port(String tcpEndpoint) {
    return tcpEndpoint.substring(tcpEndpoint.lastIndexOf(':') + 1);
  }

  private void launch(List<String> options) throws Exception {
    Files.createDirectories(LOGS);
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        // A small, quick-starting JVM: the workers are tiny and the machine is shared.
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Xss512k", "-XX:-UsePerfData",
        "-Dsun.net.httpserver.nodelay=true",
        "-cp", classpath, "io.kvroute.sim.SimMain", "--log-requests", "--model", TestSupport.MODEL));
    command.addAll(options);
    File err = LOGS.resolve(name + "-" + STARTS.incrementAndGet() + ".err").toFile();
    Process started = new ProcessBuilder(command).redirectError(err).start();
    CompletableFuture<String> ready = new CompletableFuture<>();
    Thread reader = new Thread(() -> read(started, ready), "sim-stdout-" + name);
    reader.setDaemon(true);
    reader.start();
    String line;
    try {
      line = ready.get(60, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      started.destroyForcibly();
      throw new IOException(name + " did not start within 60 s; see " + err);
    } catch (java.util.concurrent.ExecutionException e) {
      started.destroyForcibly();
      throw new IOException(name + " exited before serving: " + Files.readString(err.toPath()));
    }
    process = started;
    for (String part : line.split(" ")) {
      if (part.startsWith("http=")) {
        http = URI.create(part.substring(5));
      } else if (part.startsWith("events=")) {
        events = part.substring(7);
      } else if (part.startsWith("replay=")) {
        replay = part.substring(7);
      }
    }
  }

  private void read(Process p, CompletableFuture<String> ready) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (line.startsWith("READY ")) {
          ready.complete(line);
        } else if (line.startsWith("REQUEST ")) {
          String id = line.substring(line.lastIndexOf(' ') + 1);
          received.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        }
      }
    } catch (IOException e) {
      // the process died
    }
    ready.completeExceptionally(new IOException("exited"));
  }

  URI http() {
    return http;
  }

  String events() {
    return events;
  }

  String replay() {
    return replay;
  }

  long pid() {
    return process.pid();
  }

  /** SIGKILL, as the OOM killer or a crashed node: no shutdown hook runs, connections are reset. */
  void kill9() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** SIGSTOP: the process freezes; the kernel still accepts connections into its backlog. */
  void stop() throws Exception {
    signal("-STOP");
  }

  /** SIGCONT. */
  void resume() throws Exception {
    signal("-CONT");
  }

  private void signal(String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", signal, String.valueOf(process.pid())).inheritIO().start();
    if (kill.waitFor() != 0) {
      throw new IOException("kill " + signal + " " + process.pid() + " failed");
    }
  }

  /** Kills the process if it still runs (a stopped one is continued first so that it can die). */
  void destroy() {
    if (process != null && process.isAlive()) {
      try {
        signal("-CONT");
      } catch (Exception ignored) {
        // dead meanwhile
      }
      process.destroyForcibly();
    }
  }
}
