package io.kvroute.testkit;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * A real {@code nats-server} child process on a free loopback port, with JetStream on, for tests and local
 * experiments (kvroute-sync-nats's tests and the replica experiment use it); thread-safe (methods are synchronized).
 *
 * <pre>{@code
 * try (NatsServer nats = NatsServer.start()) {
 *   NatsLoadSync sync = NatsLoadSync.newBuilder().servers(nats.url()).build();
 *   ...
 *   nats.kill();    // as a crash would
 *   nats.restart(); // the same port, so clients reconnect to the same URL
 * }
 * }</pre>
 *
 * <p>The first start lets the server pick a free port ({@code -p -1}); restarts reuse that port. JetStream stores in
 * a temporary directory, kept across restarts and removed by {@link #close()}. The binary is found by
 * {@link #findBinary()}; without it {@link #start()} fails with {@link #INSTALL_HINT}, which a test can also use to
 * skip itself.
 */
public final class NatsServer implements AutoCloseable {
  /** How to get the binary: for skip messages and errors. */
  public static final String INSTALL_HINT = "nats-server not found: install it with 'apt-get install nats-server' "
      + "(Debian/Ubuntu) or from https://github.com/nats-io/nats-server/releases, or point -Dkvroute.nats.server "
      + "(or NATS_SERVER) at the binary";
  private static final Pattern LISTENING = Pattern.compile("Listening for client connections on [^:]+:(\\d+)");
  private static final int MAX_LOG_LINES = 10_000;

  private final Path binary;
  private final Path storeDir;
  private final List<String> log = new ArrayList<>();
  private int port = -1;
  private @Nullable Process process;

  private NatsServer(Path binary) throws IOException {
    this.binary = binary;
    this.storeDir = Files.createTempDirectory("kvroute-nats-");
  }

  /**
   * Finds the server binary: {@code -Dkvroute.nats.server}, {@code $NATS_SERVER}, the {@code PATH}, then the usual
   * install directories.
   *
   * @return the first executable found, or empty
   */
  public static Optional<Path> findBinary() {
    List<String> candidates = new ArrayList<>();
    String property = System.getProperty("kvroute.nats.server");
    if (property != null && !property.isBlank()) {
      candidates.add(property);
    }
    String env = System.getenv("NATS_SERVER");
    if (env != null && !env.isBlank()) {
      candidates.add(env);
    }
    String path = System.getenv("PATH");
    if (path != null) {
      for (String dir : path.split(File.pathSeparator)) {
        candidates.add(dir + "/nats-server");
      }
    }
    candidates.addAll(List.of("/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server",
        "/usr/local/sbin/nats-server"));
    return candidates.stream().map(Path::of).filter(Files::isExecutable).findFirst();
  }

  /**
   * Starts a server on a free loopback port and waits until it accepts clients.
   *
   * @return the running server
   * @throws IOException if the binary is missing ({@link #INSTALL_HINT}) or the server does not start within 20 s
   */
  public static NatsServer start() throws IOException {
    Path binary = findBinary().orElseThrow(() -> new IOException(INSTALL_HINT));
    NatsServer server = new NatsServer(binary);
    try {
      server.launch();
    } catch (IOException | RuntimeException e) {
      server.deleteStore();
      throw e;
    }
    return server;
  }

  /** @return the client URL, {@code nats://127.0.0.1:port} */
  public synchronized String url() {
    return "nats://127.0.0.1:" + port;
  }

  /** @return the loopback port, the same across restarts */
  public synchronized int port() {
    return port;
  }

  /** @return whether the server process is alive */
  public synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Stops the server gracefully (SIGTERM) and waits for it to exit. */
  public synchronized void stop() {
    halt(false);
  }

  /** Kills the server (SIGKILL), as a crash would. */
  public synchronized void kill() {
    halt(true);
  }

  /**
   * Starts the server again on the same port (stopping it first if it runs), with the same JetStream store.
   *
   * @throws IOException if it does not start within 20 s
   */
  public synchronized void restart() throws IOException {
    if (isRunning()) {
      halt(false);
    }
    launch();
  }

  /** @return the server's output so far (at most the first 10,000 lines) */
  public List<String> log() {
    synchronized (log) {
      return List.copyOf(log);
    }
  }

  private void halt(boolean force) {
    Process p = process;
    if (p == null) {
      return;
    }
    if (force) {
      p.destroyForcibly();
    } else {
      p.destroy();
    }
    try {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
    }
    process = null;
  }

  private void launch() throws IOException {
    List<String> command = List.of(binary.toString(), "-a", "127.0.0.1", "-p", String.valueOf(port), "-js",
        "-sd", storeDir.toString());
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    CompletableFuture<Integer> listening = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        String line;
        int seen = -1;
        while ((line = in.readLine()) != null) {
          synchronized (log) {
            if (log.size() < MAX_LOG_LINES) {
              log.add(line);
            }
          }
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            seen = Integer.parseInt(m.group(1));
          }
          if (line.contains("Server is ready") && seen > 0) {
            listening.complete(seen);
          }
        }
      } catch (IOException e) {
        listening.completeExceptionally(e);
      }
      listening.completeExceptionally(new IOException("nats-server exited with " + exitCode(p)));
    }, "nats-server-log");
    reader.setDaemon(true);
    reader.start();
    try {
      port = listening.get(20, TimeUnit.SECONDS);
      process = p;
    } catch (Exception e) {
      p.destroyForcibly();
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new IOException("nats-server did not start: " + e.getMessage() + "; log: " + log(), e);
    }
  }

  private static String exitCode(Process p) {
    try {
      return p.waitFor(1, TimeUnit.SECONDS) ? String.valueOf(p.exitValue()) : "(still running)";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(interrupted)";
    }
  }

  /** Stops the server and removes its JetStream store. Idempotent. */
  @Override
  public synchronized void close() {
    halt(false);
    deleteStore();
  }

  private void deleteStore() {
    if (!Files.exists(storeDir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(storeDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String toString() {
    return "NatsServer{" + url() + (isRunning() ? "" : ", stopped") + "}";
  }
}
