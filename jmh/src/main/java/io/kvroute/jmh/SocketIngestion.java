package io.kvroute.jmh;

import io.kvroute.KvEvent;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceStats;
import io.kvroute.events.zmq.KvEventPublisher;
import io.kvroute.events.zmq.KvEventSubscriber;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * End-to-end ingestion over real sockets on loopback: the project's {@link KvEventPublisher} (one engine) to a
 * {@link KvEventSubscriber} to a router's index; not thread-safe (one run at a time).
 *
 * <p>The index first holds {@code indexedBlocks} blocks over {@code workers} workers. The engine then publishes
 * 2,048-token prompts (128 blocks): each prompt as {@code BlockStored} batches of {@code batch} blocks chained by
 * parent hash, one event per batch, then its eviction as {@code BlockRemoved} batches of {@code batch} blocks,
 * leaves first, over {@value #PROMPTS} prompts in a cycle so that the index stays at its size. A block operation is
 * one stored or one removed block. The publisher keeps at most {@code window} blocks in flight (published but not
 * yet applied, from {@link KvEventSubscriber#stats(WorkerId)}), far below both sockets' high-water marks, so no
 * batch is dropped and the subscriber runs flat out: the measured rate is the slower side's.
 *
 * <p>CPU per block is measured with {@link ThreadMXBean} thread CPU time: the subscriber's I/O thread (receive,
 * decode, apply: the part that runs on a gateway), the publishing thread (encode, send: the engine's part), and the
 * whole process (adding ZeroMQ's I/O threads of both ends and the JIT and GC). Run from the repository root:
 * <pre>
 * java -Xms2g -Xmx2g -XX:+AlwaysPreTouch -cp jmh/target/benchmarks.jar io.kvroute.jmh.SocketIngestion \
 *     batches=1,16,64 seconds=5 warmup=3
 * </pre>
 * Options are {@code key=value}: {@code indexedBlocks} (1,000,000), {@code workers} (64), {@code batches}
 * (1,16,64), {@code seconds} (5), {@code warmup} (3), {@code window} (blocks in flight, 65,536).
 */
public final class SocketIngestion {
  static final int PROMPTS = 64;
  static final String SUBSCRIBER_THREAD = "kvroute-zmq-subscriber";

  /** One measurement. */
  record Result(int batch, double blocksPerSecond, double subscriberNanosPerBlock, double publisherNanosPerBlock,
      double processNanosPerBlock, EventSourceStats stats, long published, long indexEntriesBefore, long indexEntriesAfter) {
    String row() {
      return String.format(Locale.ROOT, "| %d | %.3f M | %.0f | %.0f | %.0f | %d | %d |", batch,
          blocksPerSecond / 1e6, subscriberNanosPerBlock, publisherNanosPerBlock, processNanosPerBlock,
          stats.gaps() + stats.decodeErrors() + stats.droppedEvents(), stats.batches());
    }
  }

  private SocketIngestion() {}

  /**
   * Runs one batch size: builds a router and its index, publishes for {@code warmup} then {@code seconds} seconds
   * and measures the second window.
   */
  static Result run(int indexedBlocks, int workers, int batch, double warmup, double seconds, int window)
      throws InterruptedException {
    if (batch <= 0 || EventStream.PROMPT_BLOCKS % batch != 0) {
      throw new IllegalArgumentException("batch must divide " + EventStream.PROMPT_BLOCKS + " but was " + batch);
    }
    Router router = Router.newBuilder().randomSeed(Workload.SEED).build();
    List<WorkerId> ids = Workload.workers(workers);
    ids.forEach(id -> router.addWorker(Worker.of(id)));
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    Workload.populate(router.eventSink(), ids, indexedBlocks, EventStream.PROMPT_BLOCKS, 0, random);
    WorkerId engine = WorkerId.of("engine");
    router.addWorker(Worker.of(engine));
    List<List<KvEvent>> messages = messages(batch, random);
    long entriesBefore = router.indexer().stats().entries();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    try (KvEventPublisher publisher = KvEventPublisher.newBuilder().bufferSteps(0).build();
        KvEventSubscriber subscriber = KvEventSubscriber.newBuilder().sink(router.eventSink()).build()) {
      subscriber.addWorker(engine, publisher.endpoint(), null, "", 1);
      subscriber.start();
      if (!publisher.awaitSubscribers(1, Duration.ofSeconds(30))) {
        throw new IllegalStateException("the subscriber did not connect within 30 s");
      }
      long subscriberThread = threadNamed(threads, SUBSCRIBER_THREAD);
      long publisherThread = Thread.currentThread().getId();
      int inFlight = Math.max(1, window / batch); // batches
      // One batch through first, so that the warm-up starts with the stream live.
      publisher.publish(messages.get(0));
      long published = 1;
      int next = 1;
      long live = System.nanoTime() + 30_000_000_000L;
      while (subscriber.stats(engine).orElseThrow().batches() < 1) {
        if (System.nanoTime() > live) {
          throw new IllegalStateException("the subscriber applied no batch within 30 s");
        }
        Thread.sleep(1);
      }
      long warmupEnd = System.nanoTime() + (long) (warmup * 1e9);
      long from = 0;
      long end = Long.MAX_VALUE;
      long appliedFrom = 0;
      long subscriberCpuFrom = 0;
      long publisherCpuFrom = 0;
      long processCpuFrom = 0;
      long applied = 0;
      boolean measuring = false;
      while (true) {
        boolean full = published - applied >= inFlight;
        if (full || (published & 63) == 0) {
          applied = subscriber.stats(engine).orElseThrow().batches();
          long now = System.nanoTime();
          if (!measuring && now >= warmupEnd) {
            measuring = true;
            from = now;
            end = now + (long) (seconds * 1e9);
            appliedFrom = applied;
            subscriberCpuFrom = threads.getThreadCpuTime(subscriberThread);
            publisherCpuFrom = threads.getThreadCpuTime(publisherThread);
            processCpuFrom = os.getProcessCpuTime();
          } else if (measuring && now >= end) {
            long blocks = (applied - appliedFrom) * batch;
            double elapsed = now - from;
            double subscriberCpu = threads.getThreadCpuTime(subscriberThread) - subscriberCpuFrom;
            double publisherCpu = threads.getThreadCpuTime(publisherThread) - publisherCpuFrom;
            double processCpu = os.getProcessCpuTime() - processCpuFrom;
            // Let the subscriber drain what is in flight, so that the index can be checked against the stream.
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (subscriber.stats(engine).orElseThrow().batches() < published && System.nanoTime() < deadline) {
              Thread.sleep(1);
            }
            return new Result(batch, blocks * 1e9 / elapsed, subscriberCpu / blocks, publisherCpu / blocks,
                processCpu / blocks, subscriber.stats(engine).orElseThrow(), published, entriesBefore,
                router.indexer().stats().entries());
          }
          if (published - applied >= inFlight) {
            LockSupport.parkNanos(20_000); // leave the core to the subscriber
            continue;
          }
        }
        publisher.publish(messages.get(next));
        published++;
        next = next + 1 == messages.size() ? 0 : next + 1;
      }
    }
  }

  /** The engine's messages of one cycle: every prompt stored, then every prompt evicted. */
  static List<List<KvEvent>> messages(int batch, SplittableRandom random) {
    List<long[]> hashes = new ArrayList<>(PROMPTS);
    List<List<KvEvent>> messages = new ArrayList<>();
    for (int p = 0; p < PROMPTS; p++) {
      long[] h = Workload.engineHashes(random, EventStream.PROMPT_BLOCKS);
      int[] tokens = Workload.tokens(random, EventStream.PROMPT_BLOCKS * Workload.BLOCK_SIZE);
      hashes.add(h);
      for (int from = 0; from < h.length; from += batch) {
        messages.add(List.of(KvEvent.BlockStored.of(Arrays.copyOfRange(h, from, from + batch),
            from == 0 ? null : h[from - 1],
            Arrays.copyOfRange(tokens, from * Workload.BLOCK_SIZE, (from + batch) * Workload.BLOCK_SIZE),
            Workload.BLOCK_SIZE)));
      }
    }
    for (long[] h : hashes) {
      for (int to = h.length; to > 0; to -= batch) {
        long[] leavesFirst = new long[batch];
        for (int i = 0; i < batch; i++) {
          leavesFirst[i] = h[to - 1 - i];
        }
        messages.add(List.of(KvEvent.BlockRemoved.of(leavesFirst)));
      }
    }
    return messages;
  }

  private static long threadNamed(ThreadMXBean threads, String name) {
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      if (thread.getName().equals(name) && thread.isAlive()) {
        return thread.getId();
      }
    }
    throw new IllegalStateException("no thread named " + name);
  }

  /**
   * Runs each batch size and prints a Markdown table.
   *
   * @param args {@code key=value} options, see the class comment
   * @throws InterruptedException if interrupted
   */
  public static void main(String[] args) throws InterruptedException {
    int indexedBlocks = 1_000_000;
    int workers = 64;
    int[] batches = {1, 16, 64};
    double seconds = 5;
    double warmup = 3;
    int window = 65_536;
    for (String arg : args) {
      String[] kv = arg.split("=", 2);
      if (kv.length != 2) {
        throw new IllegalArgumentException("expected key=value but was " + arg);
      }
      switch (kv[0]) {
        case "indexedBlocks" -> indexedBlocks = Integer.parseInt(kv[1]);
        case "workers" -> workers = Integer.parseInt(kv[1]);
        case "batches" -> batches = Arrays.stream(kv[1].split(",")).mapToInt(Integer::parseInt).toArray();
        case "seconds" -> seconds = Double.parseDouble(kv[1]);
        case "warmup" -> warmup = Double.parseDouble(kv[1]);
        case "window" -> window = Integer.parseInt(kv[1]);
        default -> throw new IllegalArgumentException("unknown option " + kv[0]);
      }
    }
    System.out.printf(Locale.ROOT, "indexedBlocks=%d workers=%d seconds=%.1f window=%d blocks%n", indexedBlocks,
        workers, seconds, window);
    System.out.println("| Blocks per batch | Blocks/s | Subscriber CPU ns/block | Publisher CPU ns/block "
        + "| Process CPU ns/block | Gaps+errors+drops | Batches |");
    System.out.println("|---|---|---|---|---|---|---|");
    for (int batch : batches) {
      System.out.println(run(indexedBlocks, workers, batch, warmup, seconds, window).row());
    }
  }
}
