package io.kvroute.transport.okhttp;

import static io.kvroute.transport.okhttp.TestSupport.MODEL;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.HealthState;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.RoutingException;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.KvEventSubscriber;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import okio.BufferedSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * Fault injection on loopback: three simulated vLLM workers, each in its own JVM, behind a real {@link Router}
 * (kvAware), the real KV event subscriber over ZeroMQ, the metrics scraper, the tokenizer and the forwarder, all
 * over real HTTP. Workers are killed with SIGKILL between requests and mid-stream, hung with SIGSTOP, slowed,
 * restarted on the same ports with a cold cache, started with their event port wrong, and all killed at once.
 *
 * <p>For each fault: what the client sees (every outcome is classified), that no request reached an engine twice
 * (each request's {@code X-Request-Id} is counted by the workers themselves), that requests served by healthy
 * workers were not held up (no such request waited a full idle budget; their p50/p99 are reported against the
 * no-fault run, not asserted), and how long recovery took. The measured numbers go to
 * {@code target/fault-report.md}, the source of {@code docs/FAULTS.md}.
 *
 * <p>Budgets are the defaults scaled down so that the suite runs in well under a minute; the ratios between them
 * are the defaults'. Sim workers run 20 times faster than model time.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FaultInjectionTest {
  private static final Duration CONNECT = Duration.ofSeconds(1);
  private static final Duration FIRST_BYTE = Duration.ofSeconds(1);
  private static final Duration IDLE = Duration.ofSeconds(3);
  private static final Duration TOKENIZE = Duration.ofMillis(500);
  private static final Duration BACKOFF = Duration.ofMillis(250);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(2);
  private static final String FAST = "20";
  private static final int PREFIXES = 6;

  private static final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
  private static final java.util.Queue<Transition> transitions = new java.util.concurrent.ConcurrentLinkedQueue<>();

  private record Transition(long nanos, WorkerId worker, HealthState to, String reason) {}

  /** Milliseconds from {@code sinceNanos} until {@code worker} first became {@code to}, or -1. */
  private static long msUntil(WorkerId worker, HealthState to, long sinceNanos) {
    return transitions.stream().filter(t -> t.worker.equals(worker) && t.to == to && t.nanos >= sinceNanos)
        .mapToLong(t -> (t.nanos - sinceNanos) / 1_000_000).min().orElse(-1);
  }
  private static final AtomicLong ids = new AtomicLong();
  private static final StringBuilder report = new StringBuilder();
  private static final List<SimProcess> processes = new ArrayList<>();
  private static final Map<String, SimProcess> sims = new HashMap<>();
  private static Router router;
  private static KvEventSubscriber events;
  private static EngineMetricsScraper scraper;
  private static RoutingForwarder forwarder;
  private static Stats baseline;

  @BeforeAll
  static void start() throws Exception {
    router = Router.newBuilder().policy(RouterPolicy.kvAware()).blockSize(16)
        .ejectionBackoff(BACKOFF, MAX_BACKOFF)
        .listener(new io.kvroute.RouterListener() {
          @Override
          public void onHealthChanged(WorkerId worker, HealthState from, HealthState to, String reason) {
            transitions.add(new Transition(System.nanoTime(), worker, to, reason));
          }
        })
        .build();
    events = KvEventSubscriber.newBuilder().sink(router.eventSink()).reportTo(router).build();
    events.start();
    ExecutorService starter = Executors.newFixedThreadPool(3);
    List<Future<SimProcess>> starting = new ArrayList<>();
    for (String name : List.of("w0", "w1", "w2")) {
      starting.add(starter.submit(() -> SimProcess.start(name, received, "--speedup", FAST)));
    }
    for (Future<SimProcess> f : starting) {
      register(f.get(90, TimeUnit.SECONDS), true);
    }
    starter.shutdown();
    scraper = EngineMetricsScraper.newBuilder(router).interval(Duration.ofMillis(200)).timeout(TOKENIZE).build();
    scraper.start();
    forwarder = RoutingForwarder.newBuilder(router)
        .tokenizer(OkHttpTokenizer.newBuilder().router(router).timeout(TOKENIZE).build())
        .connectTimeout(CONNECT).firstByteTimeout(FIRST_BYTE).idleTimeout(IDLE).responseTimeout(IDLE)
        .build();
    report.append("| Fault | Client sees | Duplicates | Healthy p50 / p99 / max (ms) | Recovery |\n")
        .append("|---|---|---|---|---|\n");
  }

  private static void register(SimProcess sim, boolean subscribe) {
    processes.add(sim);
    sims.put(sim.name, sim);
    router.addWorker(Worker.newBuilder(WorkerId.of(sim.name)).endpoint(Worker.HTTP, sim.http()).model(MODEL).build());
    if (subscribe) {
      events.addWorker(WorkerId.of(sim.name), sim.events(), sim.replay(), "kv-events", 1);
    }
  }

  @AfterAll
  static void stop() throws IOException {
    if (scraper != null) {
      scraper.close();
    }
    if (events != null) {
      events.close();
    }
    processes.forEach(SimProcess::destroy);
    Path out = Path.of("target", "fault-report.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, report.toString());
    System.out.println("\n" + report);
  }

  // ---- the faults ----

  @Test
  @Order(1)
  void noFault() throws Exception {
    load(30, 4, shared(8)); // warm the caches and the JIT
    List<Outcome> run = load(90, 4, shared(8));
    assertAll(run, o -> o.ok(), "every request succeeds");
    baseline = Stats.of(run, o -> o.ok());
    assertNoDuplicates();
    row("none (baseline)", count(run), baseline, "-");
  }

  @Test
  @Order(2)
  void killBetweenRequests() throws Exception {
    WorkerId w0 = WorkerId.of("w0");
    long killed = System.nanoTime();
    sims.get("w0").kill9(); // idle: no request in flight
    List<Outcome> run = load(60, 4, shared(8));
    // A request written onto a connection kept alive to the dead process fails after it was sent: it is not
    // resent (the engine might have read it), as nginx does not resend a POST; the pool is then evicted, so at
    // most the requests in flight at that moment (the concurrency) see it.
    Predicate<Outcome> staleConnection = o -> o.kind.equals("typed 502 CONNECTION_LOST") && w0.equals(o.worker);
    assertAll(run, o -> (o.ok() && !o.worker.equals(w0)) || staleConnection.test(o),
        "every request succeeds elsewhere, or fails on a stale connection to the dead worker");
    assertTrue(run.stream().filter(staleConnection).count() <= 4, count(run));
    long retried = run.stream().filter(o -> o.failedOver).count();
    assertEquals(HealthState.EJECTED, router.health(w0));
    assertNoDuplicates();
    Stats healthy = Stats.of(run, o -> o.ok());
    assertBounded(healthy);
    row("kill -9 between requests", count(run) + "; " + retried + " routed again after connection refused",
        healthy, "ejected " + msUntil(w0, HealthState.EJECTED, killed) + " ms after the kill");
  }

  @Test
  @Order(3)
  void restartWithColdCache() throws Exception {
    SimProcess w0 = sims.get("w0");
    w0.restart("--speedup", FAST); // same ports, empty cache; the subscriber reconnects by itself
    long recovery = awaitServing(WorkerId.of("w0"));
    List<Outcome> run = load(60, 4, shared(8));
    assertAll(run, o -> o.ok(), "every request succeeds");
    assertNoDuplicates();
    Stats healthy = Stats.of(run, o -> o.ok());
    assertBounded(healthy);
    row("restart with a cold cache (same ports)", count(run), healthy,
        recovery + " ms from READY to its first served request");
  }

  @Test
  @Order(4)
  void killMidStream() throws Exception {
    WorkerId w0 = WorkerId.of("w0");
    SimProcess sim = sims.get("w0");
    ExecutorService longs = Executors.newFixedThreadPool(2);
    List<Future<Outcome>> streams = new ArrayList<>();
    AtomicInteger firstTokens = new AtomicInteger();
    AtomicLong killedAt = new AtomicLong();
    for (int i = 0; i < 2; i++) {
      String prompt = TestSupport.words("long" + i, 40);
      streams.add(longs.submit(() -> send(prompt, 4000, Set.of(w0), firstTokens)));
    }
    ExecutorService background = Executors.newSingleThreadExecutor();
    Future<List<Outcome>> run = background.submit(() -> load(60, 3, shared(8)));
    TestSupport.await(() -> firstTokens.get() == 2, "both long streams to stream");
    killedAt.set(System.nanoTime());
    long killed = killedAt.get();
    sim.kill9();
    List<Outcome> cut = new ArrayList<>();
    for (Future<Outcome> f : streams) {
      cut.add(f.get(30, TimeUnit.SECONDS));
    }
    longs.shutdown();
    List<Outcome> others = run.get(60, TimeUnit.SECONDS);
    background.shutdown();
    for (Outcome o : cut) {
      assertEquals("cut", o.kind, "a stream whose worker died mid-way must break, never end cleanly: " + o);
      assertEquals(w0, o.worker);
    }
    long noticedMs = cut.stream().mapToLong(o -> (o.endNanos - killedAt.get()) / 1_000_000).max().orElse(-1);
    assertAll(others, o -> o.ok() || w0.equals(o.worker), "only requests at the killed worker fail");
    assertNoDuplicates();
    Stats healthy = Stats.of(others, o -> o.ok());
    assertBounded(healthy);
    row("kill -9 mid-stream", "the 2 streams at it break (IOException after " + noticedMs
        + " ms, no [DONE]); others: " + count(others), healthy, "ejected "
        + msUntil(w0, HealthState.EJECTED, killed) + " ms after the kill; restarted for the next rows");
    sim.restart("--speedup", FAST);
    awaitServing(w0);
  }

  @Test
  @Order(5)
  void hangWithSigstop() throws Exception {
    WorkerId w1 = WorkerId.of("w1");
    SimProcess sim = sims.get("w1");
    ExecutorService background = Executors.newSingleThreadExecutor();
    Future<List<Outcome>> run = background.submit(() -> load(90, 4, shared(8)));
    Thread.sleep(150);
    long stopped = System.nanoTime();
    sim.stop();
    List<Outcome> outcomes = run.get(60, TimeUnit.SECONDS);
    background.shutdown();
    HealthState during = router.health(w1);
    sim.resume();
    long recovery = awaitServing(w1);
    assertAll(outcomes, o -> o.ok() || w1.equals(o.worker), "only requests at the hung worker fail");
    assertTrue(during == HealthState.EJECTED || during == HealthState.SUSPECT, String.valueOf(during));
    assertNoDuplicates();
    Stats healthy = Stats.of(outcomes, o -> o.ok() && !w1.equals(o.worker));
    assertBounded(healthy);
    long slowTokenizing = outcomes.stream().filter(o -> o.ok() && o.millis >= TOKENIZE.toMillis()).count();
    row("hang (SIGSTOP)", count(outcomes) + "; " + slowTokenizing + " healthy requests waited a "
        + TOKENIZE.toMillis() + " ms tokenizer budget", healthy, "suspect after " + msUntil(w1,
        HealthState.SUSPECT, stopped) + " ms, ejected after " + msUntil(w1, HealthState.EJECTED, stopped) + " ms; "
        + recovery + " ms from SIGCONT to its first served request");
  }

  @Test
  @Order(6)
  void slowWorker() throws Exception {
    WorkerId w2 = WorkerId.of("w2");
    SimProcess sim = sims.get("w2");
    sim.restart("--speedup", "1"); // 20 times slower than the others
    awaitServing(w2);
    List<Outcome> run = load(90, 4, shared(8));
    assertAll(run, o -> o.ok(), "every request succeeds");
    assertNoDuplicates();
    Stats healthy = Stats.of(run, o -> o.ok() && !w2.equals(o.worker));
    assertBounded(healthy);
    Stats slow = Stats.of(run, o -> o.ok() && w2.equals(o.worker));
    row("slow worker (20x slower)", count(run) + "; " + slow.n + " of " + run.size() + " at the slow worker (p99 "
        + slow.p99 + " ms)", healthy, "-");
    sim.restart("--speedup", FAST);
    awaitServing(w2);
  }

  @Test
  @Order(7)
  void eventPortWrong() throws Exception {
    SimProcess w3 = SimProcess.start("w3", received, "--speedup", FAST);
    register(w3, false);
    // Its events are subscribed on a port nothing publishes on: its index stays empty.
    events.addWorker(WorkerId.of("w3"), TestSupport.deadEndpoint().toString().replace("http", "tcp"), null, "kv-events", 1);
    try {
      awaitServing(WorkerId.of("w3"));
      int prefixes = 24;
      Map<Integer, WorkerId> first = new HashMap<>();
      List<Outcome> all = new ArrayList<>();
      long repeatsKept = 0;
      String tag = "fresh" + ids.incrementAndGet() + "-";
      for (int round = 0; round < 3; round++) {
        int r = round;
        List<Outcome> run = load(prefixes, 4, i -> TestSupport.words(tag + i + "w", 96) + " " + TestSupport.words(
            "q" + r + "x" + i, 8));
        for (Outcome o : run) {
          if (round == 0) {
            first.put(o.index, o.worker);
          } else if (o.worker != null && o.worker.equals(first.get(o.index))) {
            repeatsKept++;
          }
        }
        all.addAll(run);
      }
      assertAll(all, o -> o.ok(), "every request succeeds");
      long atW3 = first.values().stream().filter(WorkerId.of("w3")::equals).count();
      assertTrue(atW3 <= prefixes * 0.6, "the event-less worker drew " + atW3 + " of " + prefixes
          + " new prefixes (black-holed)");
      assertNoDuplicates();
      Stats healthy = Stats.of(all, o -> o.ok());
      assertBounded(healthy);
      row("event port wrong (a 4th worker)", count(all) + "; it drew " + atW3 + " of " + prefixes
          + " new prefixes (fair share " + prefixes / 4 + "); " + repeatsKept + " of " + 2 * prefixes
          + " repeats went where their prefix went", healthy, "-");
    } finally {
      events.removeWorker(WorkerId.of("w3"));
      router.removeWorker(WorkerId.of("w3"));
      w3.kill9();
    }
  }

  @Test
  @Order(8)
  void allWorkersDown() throws Exception {
    for (String name : List.of("w0", "w1", "w2")) {
      sims.get(name).kill9();
    }
    List<Outcome> down = load(40, 2, shared(8));
    for (Outcome o : down) {
      assertTrue(o.kind.startsWith("typed"), "a typed failure, fast: " + o);
      assertTrue(o.millis < CONNECT.toMillis() + TOKENIZE.toMillis(), "waited: " + o);
    }
    Map<String, Long> kinds = down.stream().collect(Collectors.groupingBy(o -> o.kind, Collectors.counting()));
    assertNoDuplicates();
    long restartedAt = System.nanoTime();
    ExecutorService starter = Executors.newFixedThreadPool(3);
    List<Future<?>> restarting = new ArrayList<>();
    for (String name : List.of("w0", "w1", "w2")) {
      restarting.add(starter.submit(() -> {
        sims.get(name).restart("--speedup", FAST);
        return null;
      }));
    }
    for (Future<?> f : restarting) {
      f.get(90, TimeUnit.SECONDS);
    }
    starter.shutdown();
    long ready = (System.nanoTime() - restartedAt) / 1_000_000;
    long recovery = awaitAnyServing();
    List<Outcome> after = load(60, 4, shared(8));
    assertAll(after, o -> o.ok(), "every request succeeds once the workers are back");
    assertNoDuplicates();
    Stats healthy = Stats.of(after, o -> o.ok());
    row("all workers down", new java.util.TreeMap<>(kinds) + ", max " + down.stream().mapToLong(o -> o.millis)
        .max().orElse(0) + " ms each", healthy, recovery + " ms from the restarted workers' READY (" + ready
        + " ms to start them) to the first served request");
    for (String name : List.of("w0", "w1", "w2")) {
      assertEquals(0, router.activeRequests(WorkerId.of(name)), "a booking was never released");
    }
  }

  // ---- load and measurement ----

  /** The article-like workload: {@value #PREFIXES} shared 96-word system prompts, each request its own question. */
  private static IntFunction<String> shared(int questionWords) {
    return i -> TestSupport.words("sys" + (i % PREFIXES) + "w", 96) + " "
        + TestSupport.words("u" + ids.incrementAndGet() + "q", questionWords);
  }

  /** One request's outcome as the client saw it. */
  private static final class Outcome {
    int index;
    String id;
    @Nullable WorkerId worker;
    String kind; // "ok", "cut" (the body broke after the headers), "typed <status> <reason>", "other <exception>"
    long millis;
    long endNanos;
    boolean failedOver;

    boolean ok() {
      return kind.equals("ok");
    }

    @Override
    public String toString() {
      return id + " " + kind + " at " + worker + " in " + millis + " ms";
    }
  }

  private static List<Outcome> load(int n, int concurrency, IntFunction<String> prompts) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(concurrency);
    AtomicInteger next = new AtomicInteger();
    List<Outcome> outcomes = Collections.synchronizedList(new ArrayList<>());
    List<Future<?>> clients = new ArrayList<>();
    for (int c = 0; c < concurrency; c++) {
      clients.add(pool.submit(() -> {
        for (int i; (i = next.getAndIncrement()) < n; ) {
          Outcome o = send(prompts.apply(i), 8, null, null);
          o.index = i;
          outcomes.add(o);
        }
        return null;
      }));
    }
    for (Future<?> f : clients) {
      f.get(60, TimeUnit.SECONDS);
    }
    pool.shutdown();
    List<Outcome> sorted = new ArrayList<>(outcomes);
    sorted.sort((a, b) -> Integer.compare(a.index, b.index));
    return sorted;
  }

  /** Sends one streamed completion and reads it to its end. */
  private static Outcome send(String prompt, int maxTokens, @Nullable Set<WorkerId> allowed,
      @Nullable AtomicInteger firstTokens) {
    Outcome o = new Outcome();
    o.id = "r" + ids.incrementAndGet();
    byte[] body = ("{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prompt + "\",\"max_tokens\":" + maxTokens
        + ",\"stream\":true}").getBytes(StandardCharsets.UTF_8);
    ForwardRequest.Builder request = ForwardRequest.newBuilder("/v1/completions", body).header("X-Request-Id", o.id);
    if (allowed != null) {
      request.routeOptions(b -> b.allowedWorkers(allowed));
    }
    long start = System.nanoTime();
    ForwardedResponse response = null;
    try {
      response = forwarder.forward(request.build());
      o.worker = response.workerId();
      o.failedOver = !response.failedWorkers().isEmpty();
      BufferedSource source = response.body().source();
      StringBuilder text = new StringBuilder();
      for (String line; (line = source.readUtf8Line()) != null; ) {
        text.append(line).append('\n');
        if (firstTokens != null && line.startsWith("data: {") && text.indexOf("data: {") == text.lastIndexOf(
            "data: {")) {
          firstTokens.incrementAndGet();
        }
      }
      o.kind = response.code() == 200 && text.toString().endsWith("data: [DONE]\n\n") ? "ok"
          : "other status " + response.code() + " " + text;
    } catch (RoutingException e) {
      o.kind = "typed " + e.httpStatus() + " " + e.reason();
      if (e instanceof UpstreamException u) {
        o.worker = u.workerId();
      }
    } catch (IOException e) {
      o.kind = "cut";
    } catch (RuntimeException e) {
      o.kind = "other " + e;
    } finally {
      if (response != null) {
        response.close();
      }
      o.endNanos = System.nanoTime();
      o.millis = (o.endNanos - start) / 1_000_000;
    }
    return o;
  }

  /** Sends fresh-prefix requests until one is served by {@code worker}; returns the milliseconds it took. */
  private static long awaitServing(WorkerId worker) throws Exception {
    long start = System.nanoTime();
    while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20)) {
      Outcome o = send(TestSupport.words("probe" + ids.incrementAndGet() + "w", 40), 2, Set.of(worker), null);
      if (o.ok()) {
        return (System.nanoTime() - start) / 1_000_000;
      }
      Thread.sleep(20);
    }
    fail(worker + " did not serve again within 20 s; health " + router.health(worker));
    return -1;
  }

  private static long awaitAnyServing() throws Exception {
    long start = System.nanoTime();
    while (System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20)) {
      if (send(TestSupport.words("any" + ids.incrementAndGet() + "w", 40), 2, null, null).ok()) {
        return (System.nanoTime() - start) / 1_000_000;
      }
      Thread.sleep(20);
    }
    fail("no worker served again within 20 s");
    return -1;
  }

  private static void assertAll(List<Outcome> outcomes, Predicate<Outcome> expected, String what) {
    List<Outcome> wrong = outcomes.stream().filter(expected.negate()).toList();
    assertTrue(wrong.isEmpty(), what + "; but: " + wrong);
    assertFalse(outcomes.isEmpty());
  }

  /** No request reached an engine twice: every id the workers logged, they logged once. */
  private static void assertNoDuplicates() {
    List<String> twice = received.entrySet().stream().filter(e -> e.getValue().get() > 1)
        .map(e -> e.getKey() + " x" + e.getValue().get()).toList();
    assertTrue(twice.isEmpty(), "requests that reached an engine twice: " + twice);
  }

  /**
   * A generous bound that only a real hang breaks: no request served by a healthy worker waited a full idle budget
   * (the budget a hung worker costs); the 2x-of-baseline comparison is reported, not asserted.
   */
  private static void assertBounded(Stats healthy) {
    assertTrue(healthy.max < IDLE.toMillis(), "a request to a healthy worker waited " + healthy.max + " ms");
  }

  private static String count(List<Outcome> outcomes) {
    Map<String, Long> kinds = outcomes.stream().collect(Collectors.groupingBy(o -> o.kind.startsWith("other")
        ? "other" : o.kind, java.util.TreeMap::new, Collectors.counting()));
    return kinds.toString().replace("{", "").replace("}", "").replace("=", ": ");
  }

  private static void row(String fault, String client, Stats healthy, String recovery) {
    report.append("| ").append(fault).append(" | ").append(client).append(" | ")
        .append(received.values().stream().filter(c -> c.get() > 1).count()).append(" | ")
        .append(healthy.p50).append(" / ").append(healthy.p99).append(" / ").append(healthy.max)
        .append(baseline == null || baseline == healthy ? "" : String.format(java.util.Locale.ROOT,
            " (p99 %.1fx baseline)", healthy.p99 / (double) Math.max(1, baseline.p99)))
        .append(" | ").append(recovery).append(" |\n");
  }

  /** Latency percentiles of the outcomes a predicate selects. */
  private record Stats(int n, long p50, long p99, long max) {
    static Stats of(List<Outcome> outcomes, Predicate<Outcome> which) {
      long[] ms = outcomes.stream().filter(which).mapToLong(o -> o.millis).sorted().toArray();
      if (ms.length == 0) {
        return new Stats(0, 0, 0, 0);
      }
      return new Stats(ms.length, ms[(int) Math.ceil(0.5 * ms.length) - 1],
          ms[(int) Math.ceil(0.99 * ms.length) - 1], ms[ms.length - 1]);
    }
  }
}
