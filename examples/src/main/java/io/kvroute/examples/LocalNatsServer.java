package io.kvroute.examples;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A {@code nats-server} child process on a free loopback port, for the replica experiment; not thread-safe.
 * Without the binary, {@link #start()} fails with a message saying how to install it.
 */
final class LocalNatsServer implements AutoCloseable {
  static final String INSTALL_HINT = "nats-server not found: install it with 'apt-get install nats-server' "
      + "(Debian/Ubuntu) or from https://github.com/nats-io/nats-server/releases, set NATS_SERVER to the binary, "
      + "or pass --nats-url of a running server";
  private static final Pattern LISTENING = Pattern.compile("Listening for client connections on [^:]+:(\\d+)");

  private final Process process;
  private final int port;

  private LocalNatsServer(Process process, int port) {
    this.process = process;
    this.port = port;
  }

  static Optional<Path> findBinary() {
    List<String> candidates = new ArrayList<>();
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
    candidates.addAll(List.of("/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/usr/bin/nats-server"));
    return candidates.stream().map(Path::of).filter(Files::isExecutable).findFirst();
  }

  static LocalNatsServer start() throws IOException {
    Path binary = findBinary().orElseThrow(() -> new IOException(INSTALL_HINT));
    Process p = new ProcessBuilder(binary.toString(), "-a", "127.0.0.1", "-p", "-1").redirectErrorStream(true)
        .start();
    CompletableFuture<Integer> ready = new CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        String line;
        int port = -1;
        while ((line = in.readLine()) != null) {
          Matcher m = LISTENING.matcher(line);
          if (m.find()) {
            port = Integer.parseInt(m.group(1));
          }
          if (line.contains("Server is ready") && port > 0) {
            ready.complete(port);
          }
        }
      } catch (IOException e) {
        ready.completeExceptionally(e);
      }
      ready.completeExceptionally(new IOException("nats-server exited"));
    }, "nats-server-log");
    reader.setDaemon(true);
    reader.start();
    try {
      return new LocalNatsServer(p, ready.get(20, TimeUnit.SECONDS));
    } catch (Exception e) {
      p.destroyForcibly();
      throw new IOException("nats-server did not start: " + e.getMessage(), e);
    }
  }

  String url() {
    return "nats://127.0.0.1:" + port;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
