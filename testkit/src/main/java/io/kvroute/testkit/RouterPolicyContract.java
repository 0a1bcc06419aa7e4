package io.kvroute.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.CandidateScore;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract every {@link RouterPolicy} keeps, as an abstract JUnit 5 test; not thread-safe (JUnit creates an
 * instance per test). Extend it and return your policy from {@link #policy()}; every test runs over
 * {@link #seeds()} seeded random clusters and request streams through a real {@link Router}.
 *
 * <pre>{@code
 * class MostCachedPolicyTest extends RouterPolicyContract {
 *   @Override
 *   protected RouterPolicy policy() {
 *     return new MostCachedPolicy();
 *   }
 * }
 * }</pre>
 *
 * <p>The contract: the policy returns an index in range (the router throws otherwise), so every request goes to a
 * registered worker and, when the request names allowed workers, to one of them; an explanation marks exactly one
 * candidate chosen; a lone candidate is always chosen; and once every handle is closed no load stays booked on any
 * worker, whatever mix of first tokens and closes came before.
 */
public abstract class RouterPolicyContract {
  /**
   * The policy under test; called once per test, so a stateful policy starts fresh.
   *
   * @return a new instance of the policy
   */
  protected abstract RouterPolicy policy();

  /**
   * The seeds the tests run over; override for more or fewer.
   *
   * @return the seeds
   */
  protected static Stream<Arguments> seeds() {
    return LongStream.range(0, 8).mapToObj(Arguments::of);
  }

  /**
   * The router the tests route through; override to add settings the policy needs.
   *
   * @param policy the policy under test
   * @param seed the test's seed
   * @return a router builder, with the policy, a fake ticker and the seed
   */
  protected Router.Builder router(RouterPolicy policy, long seed) {
    return Router.newBuilder().policy(policy).randomSeed(seed).ticker(new FakeTicker());
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void choosesAnAllowedWorkerAndLeavesNoLoadBehind(long seed) {
    RouterPolicy policy = policy();
    String name = policy.name();
    SplittableRandom random = new SplittableRandom(seed);
    Router router = router(policy, seed).build();
    int workers = 1 + random.nextInt(12);
    List<WorkerId> ids = new ArrayList<>();
    for (int i = 0; i < workers; i++) {
      WorkerId id = new WorkerId("w" + i, random.nextInt(2));
      ids.add(id);
      router.addWorker(Worker.of(id));
    }
    int[][] prefixes = new int[4][];
    for (int p = 0; p < prefixes.length; p++) {
      prefixes[p] = Fixtures.prompt(seed * 10 + p, 64 + random.nextInt(512));
      router.eventSink().apply(ids.get(random.nextInt(workers)), Fixtures.storedFor(prefixes[p],
          router.blockSize(), p));
    }
    List<Routing> open = new ArrayList<>();
    Set<WorkerId> chosen = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      int[] prompt = Fixtures.concat(prefixes[random.nextInt(prefixes.length)], Fixtures.prompt(i, 1
          + random.nextInt(100)));
      boolean explain = random.nextInt(4) == 0;
      RouteRequest.Builder request = RouteRequest.newBuilder(prompt).explain(explain);
      Set<WorkerId> allowed = null;
      if (random.nextInt(5) == 0) {
        allowed = new HashSet<>(List.of(ids.get(random.nextInt(workers)), ids.get(random.nextInt(workers))));
        request.allowedWorkers(allowed);
      }
      Routing routing = router.select(request.build());
      assertTrue(ids.contains(routing.workerId()), name + " chose unknown " + routing.workerId());
      if (allowed != null) {
        assertTrue(allowed.contains(routing.workerId()), name + " ignored the allow-list " + allowed);
      }
      assertTrue(routing.matchedBlocks() >= 0 && routing.matchedBlocks() <= prompt.length / router.blockSize());
      if (explain) {
        assertEquals(1, routing.explanation().stream().filter(CandidateScore::chosen).count(),
            name + " explanation " + routing.explanation());
      }
      chosen.add(routing.workerId());
      open.add(routing);
      if (random.nextBoolean()) {
        open.get(random.nextInt(open.size())).firstToken();
      }
      if (open.size() > 8) {
        open.remove(random.nextInt(open.size())).close();
      }
    }
    open.forEach(Routing::close);
    for (WorkerId id : ids) {
      assertEquals(0, router.activeRequests(id), name + " left requests booked on " + id);
      assertEquals(0, router.pendingPrefillTokens(id), name + " left prefill booked on " + id);
    }
    assertFalse(chosen.isEmpty());
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aSingleCandidateIsAlwaysChosen(long seed) {
    Router router = router(policy(), seed).build();
    router.addWorker(Worker.of(WorkerId.of("only")));
    for (int i = 0; i < 20; i++) {
      try (Routing r = router.select(Fixtures.prompt(seed + i, 1 + i * 7))) {
        assertEquals(WorkerId.of("only"), r.workerId());
      }
    }
  }
}
