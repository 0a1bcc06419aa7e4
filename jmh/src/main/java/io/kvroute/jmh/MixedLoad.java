package io.kvroute.jmh;

import io.kvroute.EventStreamState;
import io.kvroute.KvEventSink;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * {@code select()} latency while events stream into the same index: one thread applies decoded event batches at a
 * controlled rate (or as fast as it can) while others route prompts; not thread-safe (one run at a time).
 *
 * <p>The router's index holds {@code indexedBlocks} blocks in 2,048-token sequences over {@code workers} workers,
 * as in {@link SelectBenchmark}. The ingesting thread applies the batches of an {@link EventStream} (stores of
 * {@code blocksPerEvent} blocks per event, removals one block per event, 128 blocks per batch) through
 * {@link Router#eventSink()}, paced so that it applies {@code rate} blocks per second ({@code max}: unpaced; 0:
 * no ingesting thread at all, the selections' own latency on the same index and prompts). Each of the
 * {@code selectThreads} routing threads cycles over 512 prompts, all {@link Match#HIT} (one worker holds the whole
 * prompt) or all {@link Match#MISS}, times each {@link Router#select(int[])} plus {@link Routing#close()} with
 * {@link System#nanoTime()} and records it in an HdrHistogram; the threads' CPU time over the window gives each
 * call's mean CPU time and the ingesting thread's CPU time per block applied (pacing excluded), figures that on a
 * machine shared with other work show what the selections cost apart from waiting for a core. Each point of the
 * curve runs {@code warmup} seconds unrecorded, then {@code seconds} recorded; the achieved ingestion rate is
 * measured over the recorded window.
 *
 * <p>After the curve, the rate at which select's p99 crosses {@code p99LimitMicros} is bisected {@code bisect} times
 * between the fastest passing and the slowest failing rate of the curve. Run from the repository root:
 * <pre>
 * java -Xms3g -Xmx3g -XX:+AlwaysPreTouch -cp jmh/target/benchmarks.jar io.kvroute.jmh.MixedLoad \
 *     rates=0,max,250000,500000,1000000,2000000,4000000 match=HIT,MISS seconds=3 warmup=2
 * </pre>
 * Options are {@code key=value}: {@code indexedBlocks} (1,000,000), {@code workers} (64), {@code blocksPerEvent}
 * (16), {@code selectThreads} (1), {@code rates} (blocks/s, comma-separated; {@code max} for unpaced, 0 for no
 * ingestion), {@code match},
 * {@code seconds} (3), {@code warmup} (2), {@code bisect} (3), {@code p99LimitMicros} (10).
 */
public final class MixedLoad {
  private static final long MAX_LAG_NANOS = 2_000_000;
  /** The {@code rates} value {@code max}: the ingesting thread applies batches as fast as it can. */
  static final long UNPACED = -1;
  private final Options options;
  private final Router router;
  private final EventStream stream;
  private final int[][] hits;
  private final int[][] misses;
  private final WorkerId[] hitOwners;

  MixedLoad(Options options) {
    this.options = options;
    router = Router.newBuilder().randomSeed(Workload.SEED).build();
    List<WorkerId> ids = Workload.workers(options.workers);
    for (WorkerId id : ids) {
      router.addWorker(Worker.of(id));
      router.reportEventStream(id, EventStreamState.LIVE);
    }
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    int promptTokens = EventStream.PROMPT_BLOCKS * Workload.BLOCK_SIZE;
    int[][] indexed = Workload.populate(router.eventSink(), ids, options.indexedBlocks, EventStream.PROMPT_BLOCKS,
        Workload.MAX_PROMPTS, random);
    hits = Workload.prompts(Match.HIT, indexed, promptTokens, Workload.MAX_PROMPTS, random);
    misses = Workload.prompts(Match.MISS, indexed, promptTokens, Workload.MAX_PROMPTS, random);
    hitOwners = new WorkerId[hits.length];
    for (int i = 0; i < hits.length; i++) {
      hitOwners[i] = ids.get(i % ids.size()); // Workload.populate puts sequence s on worker s mod workers
    }
    stream = new EventStream(ids, options.blocksPerEvent, random);
  }

  Router router() {
    return router;
  }

  /** One point of the curve. */
  record Point(Match match, long targetRate, double achievedRate, double selectsPerSecond, Histogram latency,
      long misroutedHits, double selectCpuNanos, double ingestCpuNanosPerBlock) {
    double micros(double percentile) {
      return latency.getValueAtPercentile(percentile) / 1_000.0;
    }

    private static String rateName(long rate) {
      return rate == UNPACED ? "max" : rate == 0 ? "off" : String.format(Locale.ROOT, "%.2f M", rate / 1e6);
    }

    String row() {
      return String.format(Locale.ROOT, "| %s | %s | %.2f M | %.0f k | %.2f | %.2f | %.2f | %.1f | %d | %.2f | %s |",
          match, rateName(targetRate), achievedRate / 1e6, selectsPerSecond / 1e3, micros(50), micros(99),
          micros(99.9), latency.getMaxValue() / 1_000.0, latency.getTotalCount(), selectCpuNanos / 1e3,
          Double.isNaN(ingestCpuNanosPerBlock) ? "-" : String.format(Locale.ROOT, "%.0f", ingestCpuNanosPerBlock));
    }
  }

  /**
   * Runs one point: ingestion at {@code rate} blocks/s ({@link #UNPACED}: as fast as it can; 0: no ingesting
   * thread) while the select threads route.
   */
  Point run(Match match, long rate) throws InterruptedException {
    int[][] prompts = match == Match.HIT ? hits : misses;
    int threads = options.selectThreads;
    Histogram[] histograms = new Histogram[threads];
    long[] misrouted = new long[threads];
    long[] calls = new long[threads];
    long[] cpu = new long[threads + 1]; // each select thread's CPU time while recording, then the ingesting one's
    Control control = new Control();
    boolean ingesting = rate != 0;
    CountDownLatch done = new CountDownLatch(threads + (ingesting ? 1 : 0));
    AtomicLong appliedBlocks = new AtomicLong();
    List<Thread> started = new ArrayList<>();
    if (ingesting) {
      started.add(new Thread(() -> {
        try {
          appliedBlocks.set(ingest(rate, control, cpu, threads));
        } finally {
          done.countDown();
        }
      }, "mixed-ingest"));
    }
    for (int t = 0; t < threads; t++) {
      int thread = t;
      histograms[t] = new Histogram(10_000_000_000L, 3);
      started.add(new Thread(() -> {
        try {
          calls[thread] = select(prompts, match, thread * (prompts.length / threads), histograms[thread],
              misrouted, thread, control, cpu);
        } finally {
          done.countDown();
        }
      }, "mixed-select-" + t));
    }
    started.forEach(Thread::start);
    Thread.sleep((long) (options.warmupSeconds * 1_000));
    long from = System.nanoTime();
    control.recording = true;
    Thread.sleep((long) (options.seconds * 1_000));
    control.recording = false;
    long elapsed = System.nanoTime() - from;
    control.stop = true;
    done.await();
    Histogram all = new Histogram(10_000_000_000L, 3);
    long selects = 0;
    long wrong = 0;
    long selectCpu = 0;
    for (int t = 0; t < threads; t++) {
      all.add(histograms[t]);
      selects += calls[t];
      wrong += misrouted[t];
      selectCpu += cpu[t];
    }
    long applied = appliedBlocks.get();
    return new Point(match, rate, applied * 1e9 / elapsed, selects * 1e9 / elapsed, all, wrong,
        selects == 0 ? Double.NaN : (double) selectCpu / selects,
        applied == 0 ? Double.NaN : (double) cpu[threads] / applied);
  }

  /** What the driver tells the threads; read on every call. */
  static final class Control {
    volatile boolean recording;
    volatile boolean stop;
  }

  /**
   * Applies the stream's batches at {@code rate} blocks/s ({@link #UNPACED}: unpaced) until stopped; returns the
   * blocks applied while recording.
   */
  private long ingest(long rate, Control control, long[] cpu, int at) {
    KvEventSink sink = router.eventSink();
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long recordedWork = 0; // nanoseconds of CPU spent applying, while recording (not pacing)
    long interval = rate == UNPACED ? 0 : (long) (1e9 * EventStream.PROMPT_BLOCKS / rate); // ns per batch
    long recorded = 0;
    long due = System.nanoTime();
    int i = 0;
    while (!control.stop) {
      if (interval > 0) {
        long now = System.nanoTime();
        while (now < due && !control.stop) {
          if (due - now > 100_000) {
            LockSupport.parkNanos(due - now - 60_000);
          } else {
            Thread.onSpinWait();
          }
          now = System.nanoTime();
        }
        // Keep the schedule (an open-loop rate), but after a stall of the machine catch up at most 2 ms of work.
        due = Math.max(due, now - MAX_LAG_NANOS) + interval;
      }
      boolean recording = control.recording;
      long before = recording ? threads.getCurrentThreadCpuTime() : 0;
      sink.applyAll(stream.senders[i], stream.decoded.get(i));
      if (recording) {
        recordedWork += threads.getCurrentThreadCpuTime() - before;
        recorded += EventStream.PROMPT_BLOCKS;
      }
      i = i + 1 == stream.size() ? 0 : i + 1;
    }
    cpu[at] = recordedWork;
    return recorded;
  }

  /** Routes prompts until stopped, recording each call's latency while recording; returns the calls recorded. */
  private long select(int[][] prompts, Match match, int start, Histogram histogram, long[] misrouted, int thread,
      Control control, long[] cpu) {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long cpuFrom = -1;
    long cpuTo = -1;
    int mask = prompts.length - 1;
    long count = 0;
    long wrong = 0;
    for (int i = start; !control.stop; i++) {
      int p = i & mask;
      long t0 = System.nanoTime();
      WorkerId chosen;
      try (Routing routing = router.select(prompts[p])) {
        chosen = routing.workerId();
      }
      long t1 = System.nanoTime();
      boolean recording = control.recording;
      if (recording && cpuFrom < 0) {
        cpuFrom = threads.getCurrentThreadCpuTime(); // the window's calls start with the next one
        continue;
      }
      if (!recording && cpuFrom >= 0 && cpuTo < 0) {
        cpuTo = threads.getCurrentThreadCpuTime();
      }
      if (recording) {
        histogram.recordValue(t1 - t0);
        count++;
        if (match == Match.HIT && chosen != hitOwners[p] && !chosen.equals(hitOwners[p])) {
          wrong++;
        }
      }
    }
    if (cpuFrom >= 0 && cpuTo < 0) {
      cpuTo = threads.getCurrentThreadCpuTime(); // stopped before a call saw the window close
    }
    misrouted[thread] = wrong;
    cpu[thread] = cpuFrom < 0 ? 0 : cpuTo - cpuFrom;
    return count;
  }

  /** Runs the curve and the bisection, printing a Markdown table. */
  List<Point> curve() throws InterruptedException {
    List<Point> points = new ArrayList<>();
    for (Match match : options.matches) {
      long pass = -1;
      long fail = -1;
      for (long rate : options.rates) {
        Point point = run(match, rate);
        print(point);
        points.add(point);
        if (rate == 0) {
          continue; // no ingestion: the baseline, not a point of the curve
        }
        long achieved = (long) point.achievedRate();
        if (point.micros(99) < options.p99LimitMicros) {
          pass = Math.max(pass, achieved);
        } else if (fail < 0 || achieved < fail) {
          fail = achieved;
        }
      }
      for (int step = 0; step < options.bisect && pass >= 0 && fail > pass; step++) {
        long rate = (pass + fail) / 2;
        Point point = run(match, rate);
        print(point);
        points.add(point);
        if (point.micros(99) < options.p99LimitMicros) {
          pass = Math.max(pass, (long) point.achievedRate());
        } else {
          fail = rate;
        }
      }
      System.out.printf(Locale.ROOT, "%s: highest ingestion rate with select p99 < %.0f us: %s%n", match,
          options.p99LimitMicros, pass < 0 ? "none measured" : String.format(Locale.ROOT, "%.2f M blocks/s", pass / 1e6));
    }
    return points;
  }

  private static void print(Point point) {
    System.out.println(point.row() + (point.misroutedHits() > 0 ? " misrouted hits: " + point.misroutedHits() : ""));
  }

  /** The run's settings, parsed from {@code key=value} arguments. */
  static final class Options {
    int indexedBlocks = 1_000_000;
    int workers = 64;
    int blocksPerEvent = 16;
    int selectThreads = 1;
    long[] rates = {0, UNPACED, 250_000, 500_000, 1_000_000, 2_000_000, 4_000_000};
    Match[] matches = {Match.HIT, Match.MISS}; // PARTIAL prompts are SameJvmAb's only
    double seconds = 3;
    double warmupSeconds = 2;
    int bisect = 3;
    double p99LimitMicros = 10;

    static Options parse(String... args) {
      Options o = new Options();
      for (String arg : args) {
        int eq = arg.indexOf('=');
        if (eq < 0) {
          throw new IllegalArgumentException("expected key=value but was " + arg);
        }
        String key = arg.substring(0, eq);
        String value = arg.substring(eq + 1);
        switch (key) {
          case "indexedBlocks" -> o.indexedBlocks = Integer.parseInt(value);
          case "workers" -> o.workers = Integer.parseInt(value);
          case "blocksPerEvent" -> o.blocksPerEvent = Integer.parseInt(value);
          case "selectThreads" -> o.selectThreads = Integer.parseInt(value);
          case "rates" -> o.rates = java.util.Arrays.stream(value.split(","))
              .mapToLong(rate -> rate.equals("max") ? UNPACED : parseRate(rate)).toArray();
          case "match" -> o.matches = java.util.Arrays.stream(value.split(",")).map(Match::valueOf)
              .toArray(Match[]::new);
          case "seconds" -> o.seconds = Double.parseDouble(value);
          case "warmup" -> o.warmupSeconds = Double.parseDouble(value);
          case "bisect" -> o.bisect = Integer.parseInt(value);
          case "p99LimitMicros" -> o.p99LimitMicros = Double.parseDouble(value);
          default -> throw new IllegalArgumentException("unknown option " + key);
        }
      }
      for (Match match : o.matches) {
        if (match != Match.HIT && match != Match.MISS) {
          throw new IllegalArgumentException("match must be HIT or MISS but was " + match);
        }
      }
      if (o.selectThreads <= 0) {
        throw new IllegalArgumentException("selectThreads must be positive but was " + o.selectThreads);
      }
      return o;
    }

    private static long parseRate(String rate) {
      long value = Long.parseLong(rate);
      if (value < 0) {
        throw new IllegalArgumentException("rates must be max, 0 (off) or positive but was " + rate);
      }
      return value;
    }
  }

  /**
   * Runs the curve.
   *
   * @param args {@code key=value} options, see the class comment
   * @throws InterruptedException if interrupted
   */
  public static void main(String[] args) throws InterruptedException {
    Options options = Options.parse(args);
    System.out.printf(Locale.ROOT, "indexedBlocks=%d workers=%d blocksPerEvent=%d selectThreads=%d seconds=%.1f%n",
        options.indexedBlocks, options.workers, options.blocksPerEvent, options.selectThreads, options.seconds);
    MixedLoad load = new MixedLoad(options);
    System.out.println("| Prompts | Target rate | Achieved blocks/s | select/s | p50 us | p99 us | p99.9 us | max us | samples"
        + " | select CPU us/call | ingest CPU ns/block |");
    System.out.println("|---|---|---|---|---|---|---|---|---|---|---|");
    load.curve();
  }
}
