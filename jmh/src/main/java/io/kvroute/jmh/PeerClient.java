package io.kvroute.jmh;

import io.kvroute.Router;
import io.kvroute.Routing;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * {@link SharedLoadBenchmark}'s second client: keeps {@link #IN_FLIGHT} requests open on a router, each step
 * closing the oldest and routing the next prompt (with its first token), either on the caller's thread or paced at
 * a rate on a thread of its own; not thread-safe: one thread steps it at a time ({@link #start} hands it over to
 * its thread, {@link #stop} back).
 */
final class PeerClient {
  /** Requests the client keeps open. */
  static final int IN_FLIGHT = 64;

  private final Router router;
  private final int[][] prompts;
  private final Routing[] inFlight = new Routing[IN_FLIGHT];
  private final AtomicBoolean running = new AtomicBoolean();
  private @Nullable Thread thread;
  private long steps;

  /**
   * A client of {@code router} routing {@code prompts} in turn.
   *
   * @param prompts a power-of-two number of prompts
   */
  PeerClient(Router router, int[][] prompts) {
    this.router = router;
    this.prompts = prompts;
  }

  /** One request: the oldest of the open ones closed, a new one routed and given its first token. */
  void step() {
    int slot = (int) (steps & (IN_FLIGHT - 1));
    Routing open = inFlight[slot];
    if (open != null) {
      open.close();
    }
    Routing routing = router.select(prompts[(int) (steps & (prompts.length - 1))]);
    routing.firstToken();
    inFlight[slot] = routing;
    steps++;
  }

  /** The requests routed so far; read it only from the stepping thread or after {@link #stop}. */
  long steps() {
    return steps;
  }

  /** Steps {@code rate} times a second on a daemon thread of its own until {@link #stop}. */
  void start(int rate, String name) {
    if (rate <= 0 || thread != null) {
      return;
    }
    running.set(true);
    Thread t = new Thread(() -> {
      long interval = 1_000_000_000L / rate;
      long next = System.nanoTime();
      while (running.get()) {
        step();
        next += interval;
        long wait = next - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        }
      }
    }, name);
    t.setDaemon(true);
    thread = t;
    t.start();
  }

  /** Stops the paced thread, if any; the open requests stay open. */
  void stop() throws InterruptedException {
    running.set(false);
    Thread t = thread;
    if (t != null) {
      t.join(5000);
      thread = null;
    }
  }
}
