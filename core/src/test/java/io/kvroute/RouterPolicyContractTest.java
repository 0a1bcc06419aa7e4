package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The contract every built-in policy keeps, checked over seeded random clusters and request streams. */
class RouterPolicyContractTest {
  static Stream<Arguments> policies() {
    List<Arguments> cases = new ArrayList<>();
    for (long seed = 0; seed < 8; seed++) {
      cases.add(Arguments.of("roundRobin", RouterPolicy.roundRobin(), seed));
      cases.add(Arguments.of("random", RouterPolicy.random(), seed));
      cases.add(Arguments.of("leastLoaded", RouterPolicy.leastLoaded(), seed));
      cases.add(Arguments.of("kvAware", RouterPolicy.kvAware(), seed));
      cases.add(Arguments.of("kvAware(T=0.5)", RouterPolicy.kvAware(KvAwareConfig.DEFAULT.withTemperature(0.5)),
          seed));
      cases.add(Arguments.of("approximate", RouterPolicy.approximate(), seed));
      cases.add(Arguments.of("cacheAffinity", RouterPolicy.cacheAffinity(), seed));
      cases.add(Arguments.of("predictedTtft", RouterPolicy.predictedTtft(), seed));
    }
    return cases.stream();
  }

  @ParameterizedTest(name = "{0} seed {2}")
  @MethodSource("policies")
  void choosesAnAllowedWorkerAndLeavesNoLoadBehind(String name, RouterPolicy policy, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    Router router = Router.newBuilder().policy(policy).randomSeed(seed).ticker(new FakeTicker()).build();
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
      router.eventSink().apply(ids.get(random.nextInt(workers)), Fixtures.storedFor(prefixes[p], 16, p));
    }
    List<Routing> open = new ArrayList<>();
    Set<WorkerId> chosen = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      int[] prompt = Fixtures.concat(prefixes[random.nextInt(prefixes.length)], Fixtures.prompt(i, 1
          + random.nextInt(100)));
      RouteRequest.Builder request = RouteRequest.newBuilder(prompt).explain(random.nextInt(4) == 0);
      Set<WorkerId> allowed = null;
      if (random.nextInt(5) == 0) {
        allowed = new HashSet<>(List.of(ids.get(random.nextInt(workers)), ids.get(random.nextInt(workers))));
        request.allowedWorkers(allowed);
      }
      Routing routing = router.select(request.build());
      assertTrue(ids.contains(routing.workerId()), name + " chose unknown " + routing.workerId());
      if (allowed != null) {
        assertTrue(allowed.contains(routing.workerId()), name + " ignored the allow-list");
      }
      assertTrue(routing.matchedBlocks() >= 0 && routing.matchedBlocks() <= prompt.length / 16);
      if (request.build().explain()) {
        assertEquals(1, routing.explanation().stream().filter(CandidateScore::chosen).count());
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
    assertTrue(!chosen.isEmpty());
  }

  @ParameterizedTest(name = "{0} seed {2}")
  @MethodSource("policies")
  void aSingleCandidateIsAlwaysChosen(String name, RouterPolicy policy, long seed) {
    Router router = Router.newBuilder().policy(policy).randomSeed(seed).build();
    router.addWorker(Worker.of(WorkerId.of("only")));
    for (int i = 0; i < 20; i++) {
      try (Routing r = router.select(Fixtures.prompt(seed + i, 1 + i * 7))) {
        assertEquals(WorkerId.of("only"), r.workerId());
      }
    }
  }
}
