package io.kvroute.jmh;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Gives the measuring thread a CPU of its own (Linux, {@code taskset}): with {@code -Dbench.measuredCpu=0}, every
 * other thread of this JVM (the sync's publisher, NATS's threads, an in-JVM peer's client, the JIT and GC) is moved
 * to the other CPUs and the calling thread to CPU 0, so that on a small machine the measured thread's CPU time
 * counts its own work and what the others do to its caches, not its being descheduled for them. Threads started
 * later inherit their creator's CPUs, so call it again after starting any. Not thread-safe: one measuring thread
 * calls it. Without the property it does nothing.
 */
final class Pinning {
  private Pinning() {}

  /**
   * Pins the calling thread to {@code -Dbench.measuredCpu} and every other thread of the process to the remaining
   * online CPUs; does nothing without the property.
   *
   * @return what was done, for the log; empty if nothing
   */
  static String measuredThreadAlone() {
    String cpu = System.getProperty("bench.measuredCpu", "");
    if (cpu.isEmpty()) {
      return "";
    }
    try {
      int measured = Integer.parseInt(cpu);
      List<String> others = new ArrayList<>();
      int cpus = Runtime.getRuntime().availableProcessors();
      for (int c = 0; c < Math.max(cpus, measured + 2); c++) {
        if (c != measured && Files.exists(Path.of("/sys/devices/system/cpu/cpu" + c))) {
          others.add(Integer.toString(c));
        }
      }
      String pid = Long.toString(ProcessHandle.current().pid());
      // /proc/thread-self links to <pid>/task/<tid>: this thread's id, which Java does not expose
      String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
      run("taskset", "-a", "-p", "-c", String.join(",", others), pid);
      run("taskset", "-p", "-c", cpu, self);
      return String.format(Locale.ROOT, "pinned: measured thread %s on CPU %s, the other threads of %s on %s", self,
          cpu, pid, String.join(",", others));
    } catch (IOException | RuntimeException e) {
      return "pinning failed: " + e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "pinning interrupted";
    }
  }

  private static void run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed: " + out.trim());
    }
  }
}
