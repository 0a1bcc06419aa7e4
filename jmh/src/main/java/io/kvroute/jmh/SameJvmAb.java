package io.kvroute.jmh;

import io.kvroute.BlockHasher;
import io.kvroute.EventStreamState;
import io.kvroute.KvEventColumns;
import io.kvroute.KvEventSink;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventCodec;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.IntToDoubleFunction;

/**
 * Old code against new in one JVM, for a machine shared with other work, where two JMH runs minutes apart differ
 * by more than the change being measured. Each version gets its own class loader (child-first: that version's
 * {@code core} and {@code events-zmq} classes, and this module's classes for the drivers below); the versions then
 * run in short interleaved rounds, in alternating order, and each reports its best, 25th-percentile and median
 * round. The best round is the one least disturbed by other tenants; compare versions, not absolute figures.
 *
 * <pre>
 * # build the base in a scratch copy: git archive main | tar -x -C /tmp/base; (cd /tmp/base; mvn -q -pl jmh -am package -DskipTests)
 * DEPS=fastutil-core.jar:zero-allocation-hashing.jar:jspecify.jar   # from ~/.m2
 * java -Xms3g -Xmx3g -XX:+AlwaysPreTouch -cp jmh/target/classes io.kvroute.jmh.SameJvmAb \
 *     select MISS 512 400 300 \
 *     base=jmh/target/classes:/tmp/base/core/target/classes:/tmp/base/events-zmq/target/classes:$DEPS \
 *     new=jmh/target/classes:core/target/classes:events-zmq/target/classes:$DEPS
 * </pre>
 * Arguments: the driver ({@code select}: {@code select} plus {@code close} of 2,048-token prompts, 64 workers, 1M
 * indexed blocks, ns per call; {@code hash}: {@link BlockHasher#sequenceHashes} of a 2,048-token prompt, ns per
 * prompt; {@code decode} / {@code ingest}: a 128-block batch of 16-block events decoded into columns, and applied
 * to a 1M-block index, ns per block ({@code decodeStores} / {@code decodeRemovals}: only the stream's store or
 * removal batches decoded); {@code apply}: the same batches decoded beforehand, applied only;
 * {@code applyStores} / {@code applyRemovals}: the whole cycle applied as {@code apply} does, only its store or
 * its removal batches timed, ns per block of those),
 * {@code HIT}, {@code MISS} or (for {@code select}) {@code PARTIAL} (one worker holds the prompt to a random
 * depth, from one block to all but the last, and no worker the rest), distinct prompts (1: in cache, 512: cold),
 * rounds, calls per round, then
 * {@code name=classpath} per version. With {@code -Dab.cpu=true} a round is timed by the thread's CPU time
 * rather than the wall clock (on a machine whose cores are oversubscribed); {@code -Dab.blocks=N} indexes N blocks
 * instead of 1M before the drivers run (at 10,000 the tables fit in cache: what is left is the CPU's work).
 */
public final class SameJvmAb {
  private SameJvmAb() {}

  /**
   * Runs the comparison.
   *
   * @param args see the class description
   * @throws Exception if a version cannot be loaded
   */
  public static void main(String[] args) throws Exception {
    String driver = args[0];
    String match = args[1];
    int distinct = Integer.parseInt(args[2]);
    int rounds = Integer.parseInt(args[3]);
    int reps = Integer.parseInt(args[4]);
    List<String> names = new ArrayList<>();
    List<IntToDoubleFunction> drivers = new ArrayList<>();
    for (int i = 5; i < args.length; i++) {
      String[] nameAndPath = args[i].split("=", 2);
      ClassLoader loader = new ChildFirst(urls(nameAndPath[1]), SameJvmAb.class.getClassLoader().getParent());
      Class<?> type = loader.loadClass(Driver.class.getName());
      names.add(nameAndPath[0]);
      drivers.add((IntToDoubleFunction) type.getConstructor(String.class, String.class, int.class)
          .newInstance(driver, match, distinct));
    }
    int warm = rounds / 5;
    double[][] results = new double[drivers.size()][rounds - warm];
    for (int r = 0; r < rounds; r++) {
      for (int k = 0; k < drivers.size(); k++) {
        int which = r % 2 == 0 ? k : drivers.size() - 1 - k;
        double v = drivers.get(which).applyAsDouble(reps);
        if (r >= warm) {
          results[which][r - warm] = v;
        }
      }
    }
    System.out.printf(Locale.ROOT, "%s %s distinct=%d, %d rounds of %d, load %.1f%n", driver, match, distinct,
        rounds, reps, ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    for (int k = 0; k < drivers.size(); k++) {
      double[] s = results[k];
      Arrays.sort(s);
      System.out.printf(Locale.ROOT, "%-10s best %9.1f  p25 %9.1f  median %9.1f ns%n", names.get(k), s[0],
          s[s.length / 4], s[s.length / 2]);
    }
  }

  static URL[] urls(String path) throws MalformedURLException {
    List<URL> urls = new ArrayList<>();
    for (String p : path.split(File.pathSeparator)) {
      urls.add(new File(p).toURI().toURL());
    }
    return urls.toArray(URL[]::new);
  }

  /** Loads its own copy of every class it can find before asking its parent (the platform loader). */
  static final class ChildFirst extends URLClassLoader {
    ChildFirst(URL[] urls, ClassLoader parent) {
      super(urls, parent);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null && !name.startsWith("java.")) {
          try {
            c = findClass(name);
          } catch (ClassNotFoundException e) {
            c = null; // not in this version's path: the parent's
          }
        }
        if (c == null) {
          c = super.loadClass(name, false);
        }
        if (resolve) {
          resolveClass(c);
        }
        return c;
      }
    }
  }

  /** One version's workload, built by its own loader; {@link #applyAsDouble} runs a round and returns ns per op. */
  public static final class Driver implements IntToDoubleFunction {
    // -Dab.cpu=true: time each round by the thread's CPU time instead of the wall clock, so that a round in which
    // the thread waited for a core (a machine shared with other work) does not count that wait.
    private static final boolean CPU_TIME = Boolean.getBoolean("ab.cpu");
    private static final java.lang.management.ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private final String kind;
    private final int[][] prompts;
    private final long[] hashes = new long[2048 / Workload.BLOCK_SIZE];
    private final BlockHasher hasher = BlockHasher.of(Workload.BLOCK_SIZE);
    private final KvEventColumns columns = new KvEventColumns();
    private Router router;
    private KvEventSink sink;
    private WorkerId[] senders = new WorkerId[0];
    private byte[][] payloads = new byte[0][];
    private KvEventColumns[] decoded = new KvEventColumns[0];
    private int next;
    private long sink0;
    private final Routing[] open = new Routing[64];

    /**
     * Builds the workload.
     *
     * @param kind {@code select}, {@code hash}, {@code decode} or {@code ingest}
     * @param match {@code HIT} or {@code MISS}
     * @param distinct distinct prompts, a power of two up to 512
     */
    public Driver(String kind, String match, int distinct) {
      this.kind = kind;
      SplittableRandom random = new SplittableRandom(Workload.SEED);
      if (kind.startsWith("approx")) {
        // SharedLoadBenchmark.select's state with sync=NONE: an approximate-mode router, 16 workers, 2,048-token
        // prompts, 64 requests in flight (the benchmark's peer) beside the measured one. "approx": 512 random
        // prompts (each repeats every 512 selections); "approxShared": 16 kinds of 1,024-token prefix, each with 32
        // random 1,024-token tails; "approxTails": the same prefixes with a fresh random tail on every request;
        // "approxChat": conversations of 16 turns of 128 tokens, 32 conversations.
        router = Router.newBuilder().policy(io.kvroute.RouterPolicy.approximate()).randomSeed(Workload.SEED).build();
        for (WorkerId id : Workload.workers(16)) {
          router.addWorker(Worker.of(id));
        }
        prompts = new int[512][];
        int[][] prefixes = new int[32][];
        for (int i = 0; i < prefixes.length; i++) {
          prefixes[i] = Workload.tokens(random, kind.equals("approxChat") ? 2048 : 1024);
        }
        for (int i = 0; i < prompts.length; i++) {
          if (kind.equals("approx")) {
            prompts[i] = Workload.tokens(random, 2048);
          } else if (kind.equals("approxShared") || kind.equals("approxTails")) {
            int[] p = Arrays.copyOf(prefixes[i % 16], 2048);
            System.arraycopy(Workload.tokens(random, 1024), 0, p, 1024, 1024);
            prompts[i] = p;
          } else { // turn t of conversation c: its first 128 * (t + 1) tokens, routed in conversation order
            int c = i / 16;
            int t = i % 16;
            prompts[(i % 16) * 32 + c] = Arrays.copyOf(prefixes[c], 128 * (t + 1));
          }
        }
        return;
      }
      router = Router.newBuilder().randomSeed(Workload.SEED).build();
      sink = router.eventSink();
      if (kind.equals("hash")) {
        prompts = new int[64][];
        for (int i = 0; i < prompts.length; i++) {
          prompts[i] = Workload.tokens(random, 2048);
        }
        return;
      }
      List<WorkerId> ids = Workload.workers(64);
      for (WorkerId id : ids) {
        router.addWorker(Worker.of(id));
        if (kind.equals("select")) {
          router.reportEventStream(id, EventStreamState.LIVE);
        }
      }
      int[][] indexed = Workload.populate(sink, ids, Integer.getInteger("ab.blocks", 1_000_000),
          2048 / Workload.BLOCK_SIZE, Workload.MAX_PROMPTS, random);
      boolean partial = match.equals("PARTIAL");
      prompts = Workload.prompts(partial ? Match.HIT : Match.valueOf(match), indexed, 2048, distinct, random);
      if (partial) { // an indexed prompt's first blocks (a random depth, at least one, not all), then random tokens
        for (int i = 0; i < prompts.length; i++) {
          int[] prompt = Workload.tokens(random, 2048);
          int held = (1 + random.nextInt(2048 / Workload.BLOCK_SIZE - 1)) * Workload.BLOCK_SIZE;
          System.arraycopy(prompts[i], 0, prompt, 0, held);
          prompts[i] = prompt;
        }
      }
      if (!kind.equals("select")) {
        EventStream stream = new EventStream(ids, 16, random);
        senders = stream.senders;
        payloads = stream.payloads;
        if (kind.startsWith("apply")) { // each batch decoded into columns of its own beforehand
          decoded = new KvEventColumns[payloads.length];
          for (int i = 0; i < payloads.length; i++) {
            decoded[i] = new KvEventColumns();
            KvEventCodec.decodeInto(payloads[i], 0, payloads[i].length, decoded[i]);
          }
        }
      }
    }

    @Override
    public double applyAsDouble(int reps) {
      long start = CPU_TIME ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
      long ops = reps;
      switch (kind) {
        case "approx":
        case "approxShared":
        case "approxChat":
        case "approxTails":
          for (int i = 0; i < reps; i++) {
            int at = next++;
            int slot = at & 63;
            if (open[slot] != null) {
              open[slot].close();
            }
            int[] prompt = prompts[at & (prompts.length - 1)];
            if (kind.equals("approxTails")) { // a fresh tail each time (the stored one salted): nothing repeats
              prompt = prompt.clone();
              int salt = (at + 1) << 8;
              for (int t = 1024; t < prompt.length; t++) {
                prompt[t] ^= salt;
              }
            }
            Routing routing = router.select(prompt);
            routing.firstToken();
            open[slot] = routing;
            sink0 += routing.matchedBlocks();
          }
          break;
        case "select":
          for (int i = 0; i < reps; i++) {
            try (Routing routing = router.select(prompts[next++ & (prompts.length - 1)])) {
              sink0 += routing.matchedBlocks();
            }
          }
          break;
        case "hash":
          for (int i = 0; i < reps; i++) {
            int[] prompt = prompts[next++ & 63];
            hasher.sequenceHashes(prompt, prompt.length, null, null, hashes);
            sink0 += hashes[hashes.length - 1];
          }
          break;
        case "applyStores":
        case "applyRemovals": {
          // The whole cycle applied, as "apply" does, but only the store (or removal) batches timed: the stream's
          // first half stores, its second half removes; the thread's CPU time read around each batch (with or
          // without -Dab.cpu).
          ops = 0;
          boolean stores = kind.equals("applyStores");
          long timed = 0;
          for (int i = 0; i < reps; i++) {
            int at = next;
            next = at + 1 == payloads.length ? 0 : at + 1;
            boolean mine = (at < payloads.length / 2) == stores;
            long t0 = mine ? THREADS.getCurrentThreadCpuTime() : 0;
            sink.applyColumns(senders[at], decoded[at]);
            if (mine) {
              timed += THREADS.getCurrentThreadCpuTime() - t0;
              ops += EventStream.PROMPT_BLOCKS;
            }
          }
          return (double) timed / Math.max(1, ops);
        }
        case "apply":
          ops = 0;
          for (int i = 0; i < reps; i++) {
            int at = next;
            next = at + 1 == payloads.length ? 0 : at + 1;
            sink.applyColumns(senders[at], decoded[at]);
            ops += EventStream.PROMPT_BLOCKS;
          }
          break;
        default:
          ops = 0;
          // decodeStores / decodeRemovals: only the stream's store batches (its first half) or its removal batches
          int cycle = kind.equals("decodeStores") || kind.equals("decodeRemovals") ? payloads.length / 2
              : payloads.length;
          int offset = kind.equals("decodeRemovals") ? cycle : 0;
          for (int i = 0; i < reps; i++) {
            int at = next;
            next = at + 1 == cycle ? 0 : at + 1;
            at += offset;
            columns.clear();
            KvEventCodec.decodeInto(payloads[at], 0, payloads[at].length, columns);
            if (kind.equals("ingest")) {
              sink.applyColumns(senders[at], columns);
            }
            ops += EventStream.PROMPT_BLOCKS;
          }
      }
      long end = CPU_TIME ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
      return (double) (end - start) / ops;
    }

    @Override
    public String toString() {
      return "Driver{" + kind + ", " + sink0 + "}";
    }
  }
}
