package io.kvroute.jmh;

import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Each benchmark thread's position in a shared array of prompts; threads start apart so that they do not process
 * the same prompt at the same time. Thread-confined, as JMH's {@link Scope#Thread} states are.
 */
@State(Scope.Thread)
public class PromptCursor {
  private int next;

  @Setup(Level.Trial)
  public void setUp(ThreadParams thread) {
    next = thread.getThreadIndex() * (Workload.MAX_PROMPTS / Math.max(1, thread.getThreadCount()));
  }

  /** Returns the next index into an array of {@code mask + 1} prompts, a power of two. */
  int next(int mask) {
    return next++ & mask;
  }
}
