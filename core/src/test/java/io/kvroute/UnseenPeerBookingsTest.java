package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A replica's estimate of the bookings its peers are making that no delivery has brought yet: each of its own
 * bookings younger than the port's delivery window counts {@link SharedLoad#peerCount} more times in the pending
 * prefill tokens and active requests its policy sees, and only while it is younger than the window.
 */
class UnseenPeerBookingsTest {
  private static final WorkerId W0 = WorkerId.of("w0");
  private static final WorkerId W1 = WorkerId.of("w1");
  private static final long WINDOW = 100_000; // 0.1 ms

  /** A port that shares nothing but says how many peers it has and how late they see this replica's bookings. */
  private static final class ClaimingPort implements SharedLoad {
    private final int peers;
    private final long window;

    ClaimingPort(int peers, long window) {
      this.peers = peers;
      this.window = window;
    }

    @Override
    public void start(RemoteLoad view) {}

    @Override
    public void booked(long id, WorkerId worker, long prefill, long[] hashes, int blocks, boolean predicted) {}

    @Override
    public void firstToken(long id) {}

    @Override
    public void closed(long id) {}

    @Override
    public int peerCount() {
      return peers;
    }

    @Override
    public long deliveryWindowNanos() {
      return window;
    }
  }

  /** Routes each request to the next scripted worker and records what it saw: "worker prefill/active" per candidate. */
  private static final class ScriptedPolicy implements RouterPolicy {
    private final List<WorkerId> script;
    final List<String> seen = new ArrayList<>();
    private int next;

    ScriptedPolicy(WorkerId... script) {
      this.script = List.of(script);
    }

    @Override
    public int select(Candidates candidates) {
      WorkerId target = script.get(next++);
      StringBuilder view = new StringBuilder();
      int chosen = -1;
      for (int i = 0; i < candidates.size(); i++) {
        WorkerId id = candidates.worker(i).id();
        view.append(i == 0 ? "" : " ").append(id).append(' ').append(candidates.prefillTokens(i)).append('/')
            .append(candidates.activeRequests(i));
        if (id.equals(target)) {
          chosen = i;
        }
      }
      seen.add(view.toString());
      return chosen;
    }
  }

  /** The script of the tests: A (100 tokens) on w0 at 0, B (60) on w1 at 50 us, C (40) on w0 at 100 us, D at 300. */
  private static List<String> run(SharedLoad port, List<Routing> routings) {
    ScriptedPolicy policy = new ScriptedPolicy(W0, W1, W0, W1);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(1).sharedLoad(port).build();
    router.addWorker(Worker.of(W0));
    router.addWorker(Worker.of(W1));
    routings.add(router.select(Fixtures.prompt(1, 100)));
    ticker.advance(Duration.ofNanos(WINDOW / 2));
    routings.add(router.select(Fixtures.prompt(2, 60)));
    ticker.advance(Duration.ofNanos(WINDOW / 2));
    routings.add(router.select(Fixtures.prompt(3, 40)));
    ticker.advance(Duration.ofNanos(2 * WINDOW));
    routings.add(router.select(Fixtures.prompt(4, 20)));
    return policy.seen;
  }

  @Test
  void ownBookingsYoungerThanTheWindowCountOncePerPeerMoreThenOnce() {
    List<Routing> routings = new ArrayList<>();
    List<String> seen = run(new ClaimingPort(3, WINDOW), routings);
    // Nothing cached anywhere (no KV events, no earlier prompt shares a block), so each booking's prefill is its
    // whole prompt. At 50 us A (0 us) is young: 1 + 3 = 4 times its 100 tokens and 1 request. At 100 us A is one
    // window old, so counted once (its peers' bookings of that moment would have arrived), while B (50 us) is young.
    // At 300 us nothing is young: the real load only.
    assertEquals(List.of(
        "w0 0/0 w1 0/0",
        "w0 400/4 w1 0/0",
        "w0 100/1 w1 240/4",
        "w0 140/2 w1 60/1"), seen);
    // The load a request is learned against (its time to first token) is the real one, never the estimate.
    assertEquals(100, routings.get(2).queuedPrefillTokens());
    assertEquals(1, routings.get(2).activeAtAdmission());
  }

  @Test
  void oneRouterAPortAloneOrWithoutAWindowSeeExactlyTheRealLoad() {
    List<String> real = List.of(
        "w0 0/0 w1 0/0",
        "w0 100/1 w1 0/0",
        "w0 100/1 w1 60/1",
        "w0 140/2 w1 60/1");
    assertEquals(real, run(SharedLoad.NONE, new ArrayList<>()), "one router");
    assertEquals(real, run(new ClaimingPort(0, WINDOW), new ArrayList<>()), "a port with no peers");
    assertEquals(real, run(new ClaimingPort(3, 0), new ArrayList<>()), "a port whose peers see bookings at once");
  }

  @Test
  void releasedAndReAddedWorkersDropTheirYoungBookings() {
    ScriptedPolicy policy = new ScriptedPolicy(W0, W0, W0);
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).randomSeed(1)
        .sharedLoad(new ClaimingPort(1, WINDOW)).build();
    router.addWorker(Worker.of(W0));
    router.select(Fixtures.prompt(1, 100));
    // w0 removed and added again within the window: its new registration starts with no load, young or not.
    router.removeWorker(W0);
    router.addWorker(Worker.of(W0));
    router.select(Fixtures.prompt(2, 50));
    ticker.advance(Duration.ofNanos(WINDOW / 2));
    router.select(Fixtures.prompt(3, 10));
    assertEquals(List.of("w0 0/0", "w0 0/0", "w0 100/2"), policy.seen,
        "only the new registration's booking (50 tokens) counts, twice while young");
  }
}
