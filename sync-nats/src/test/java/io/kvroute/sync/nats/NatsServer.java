package io.kvroute.sync.nats;

import java.io.BufferedReader;
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

/**
 * A real {@code nats-server} process on a loopback port, for tests; thread-safe (methods are synchronized).
 *
 * <p>The first start lets the server pick a free port ({@code -p -1}); restarts reuse that port so that clients
 * reconnect to the same URL. JetStream is on, stored in a temporary directory removed on {@link #close()}.
 */
final class NatsServer implements AutoCloseable {
  /** How to get the binary, for skip messages. */
  static final String INSTALL_HINT = "nats-server not found: install it with 'apt-get install nats-server' "
      + "(Debian/Ubuntu) or from https://github.com/nats-io/nats-server/releases, or point -Dkvroute.nats.server "
      + "(or NATS_SERVER) at the binary";
  private static final Pattern LISTENING = Pattern.compile("Listening for client connections on [^:]+:(\\d+)");

  private final Path binary;
  private final Path storeDir;
  private int port = -1;
  private Process process;
  private final List<String> log = new ArrayList<>();

  private NatsServer(Path binary) throws IOException {
    this.binary = binary;
    this.storeDir = Files.createTempDirectory("kvroute-nats-");
  }

  /** The server binary: {@code -Dkvroute.nats.server}, {@code $NATS_SERVER}, the PATH, then sbin directories. */
  static Optional<Path> findBinary() {
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
      for (String dir : path.split(java.io.File.pathSeparator)) {
        candidates.add(dir + "/nats-server");
      }
    }
    candidates.addAll(List.of("/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server",
        "/usr/local/sbin/nats-server"));
    return candidates.stream().map(Path::of).filter(Files::isExecutable).findFirst();
  }

  /** Starts a server on a free loopback port. */
  static NatsServer start() throws IOException {
    Path binary = findBinary().orElseThrow(() -> new IllegalStateException(INSTALL_HINT));
    NatsServer server = new NatsServer(binary);
    server.launch();
    return server;
  }

  synchronized String url() {
    return "nats://127.0.0.1:" + port;
  }

  synchronized int port() {
    return port;
  }

  synchronized boolean isRunning() {
    return process != null && process.isAlive();
  }

  /** Stops the server gracefully (SIGTERM) and waits for it to exit. */
  synchronized void stop() {
    halt(false);
  }

  /** Kills the server (SIGKILL), as a crash would. */
  synchronized void kill() {
    halt(true);
  }

  /** Starts the server again on the same port. */
  synchronized void restart() throws IOException {
    if (isRunning()) {
      halt(false);
    }
    launch();
  }

  synchronized List<String> log() {
    return List.copyOf(log);
  }

  private void halt(boolean force) {
    if (process == null) {
      return;
    }
    if (force) {
      process.destroyForcibly();
    } else {
      process.destroy();
    }
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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
            if (log.size() < 10_000) {
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

  @Override
  public synchronized void close() {
    halt(false);
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
