package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the router tells a learning policy, and when: an engine report with the blocks booked on its worker and
 * cached there at the report's instant ({@link ReportLearning}, this router's bookings and its peers'), and a peer's
 * first token and close with their times measured from the noted booking's arrival ({@link PeerLearning}). The
 * expected values are counted from the prompts: a prompt of {@code 16 k} tokens books {@code k} distinct blocks.
 */
class LearningHooksTest {
  private static final WorkerId A = WorkerId.of("a");
  private static final WorkerId B = WorkerId.of("b");

  /** Routes everything to the first candidate and records what it is told, as "worker booked cached" lines. */
  private static final class Recording implements RouterPolicy, ReportLearning, PeerLearning {
    final List<String> heard = new ArrayList<>();

    @Override
    public int select(Candidates candidates) {
      return 0;
    }

    @Override
    public synchronized void loadReported(WorkerId worker, EngineLoad load, long bookedBlocks, long cachedBlocks) {
      heard.add("report " + worker + " " + bookedBlocks + " " + cachedBlocks);
    }

    @Override
    public synchronized void peerBooked(WorkerId worker, int blocks, int warmBlocks, long warmKey,
        boolean newPrefix, long nowNanos) {
      heard.add("booked " + worker + " " + blocks);
    }

    @Override
    public synchronized void peerStepEnded(WorkerId worker, long nowNanos) {}

    @Override
    public synchronized void peerFirstToken(WorkerId worker, long queuedPrefillTokens, int activeRequests,
        long prefillTokens, long elapsedNanos) {
      heard.add("firstToken " + worker + " " + queuedPrefillTokens + " " + activeRequests + " " + prefillTokens + " "
          + elapsedNanos);
    }

    @Override
    public synchronized void peerClosed(WorkerId worker, long elapsedNanos, long nowNanos) {
      heard.add("closed " + worker + " " + elapsedNanos);
    }

    List<String> take() {
      List<String> out = List.copyOf(heard);
      heard.clear();
      return out;
    }
  }

  private static long[] keys(int[] prompt) {
    long[] hashes = BlockHasher.of(16).sequenceHashes(prompt);
    long[] keys = new long[RemoteLoad.loadKeyCount(hashes.length)];
    RemoteLoad.loadKeys(hashes, hashes.length, keys);
    return keys;
  }

  @Test
  void aReportIsComparedWithTheBlocksBookedAndCachedAtItsArrival() {
    Recording policy = new Recording();
    Router router = Router.newBuilder().policy(policy).build();
    router.addWorker(Worker.of(A));
    router.addWorker(Worker.of(B));
    router.reportEventStream(A, EventStreamState.LIVE);
    router.reportEventStream(B, EventStreamState.LIVE);
    router.eventSink().apply(A, Fixtures.storedFor(Fixtures.prompt(1, 16 * 20), 16, 7)); // 20 blocks cached on a
    Routing own = router.select(Fixtures.prompt(2, 16 * 10)); // 10 blocks booked on a by this router
    assertEquals(A, own.workerId());
    int[] peers = Fixtures.prompt(3, 16 * 16);
    router.remoteLoad().booked("peer", 1, A, 100, 16, keys(peers), keys(peers).length); // and 16 by a peer
    assertEquals(List.of(), policy.take(), "a snapshot's booking (no note) teaches the policy nothing");

    router.updateLoad(A, new EngineLoad(2, 0, 0.5, 0));
    router.updateLoad(B, new EngineLoad(0, 0, 0.0, 0));
    assertEquals(List.of("report a 26 20", "report b 0 0"), policy.take());
    own.close();
    router.updateLoad(A, new EngineLoad(1, 0, 0.3, 0));
    assertEquals(List.of("report a 16 20"), policy.take(), "this router's closed request holds nothing");
    router.remoteLoad().dropReplica("peer");
    router.updateLoad(A, new EngineLoad(0, 0, 0.2, 0));
    assertEquals(List.of("report a 0 20"), policy.take(), "nor the dropped peer's");
    assertFalse(router.updateLoad(WorkerId.of("unknown"), new EngineLoad(0, 0, 0, 0)));
    assertEquals(List.of(), policy.take());
  }

  /**
   * A peer's noted booking on a, with 100 prompt tokens to prefill, arrives while this router has one request of
   * 160 uncached tokens open there: the first token 30 ms after the booking's arrival teaches (queued 160, active
   * 1, own 100, 30 ms), the close 70 ms later a 100 ms service time. A booking delivered without a note (a
   * snapshot's) teaches neither.
   */
  @Test
  void aPeersFirstTokenAndCloseAreTimedFromItsBookingsArrival() {
    Recording policy = new Recording();
    FakeTicker ticker = new FakeTicker();
    Router router = Router.newBuilder().policy(policy).ticker(ticker).build();
    router.addWorker(Worker.of(A));
    Routing own = router.select(Fixtures.prompt(2, 160));
    int[] prompt = Fixtures.prompt(3, 16 * 8);
    long[] keys = keys(prompt);
    router.remoteLoad().booked("peer", 1, A, 100, 8, keys, keys.length, 0, 0, false);
    router.remoteLoad().booked("peer", 2, A, 50, 8, keys, keys.length); // a snapshot's
    ticker.advance(Duration.ofMillis(30));
    router.remoteLoad().firstToken("peer", 1);
    router.remoteLoad().firstToken("peer", 2);
    ticker.advance(Duration.ofMillis(70));
    router.remoteLoad().closed("peer", 1);
    router.remoteLoad().closed("peer", 2);
    assertArrayEquals(new String[] {"booked a 8", "firstToken a 160 1 100 " + Duration.ofMillis(30).toNanos(),
        "closed a " + Duration.ofMillis(100).toNanos()}, policy.take().toArray());
    own.close();
  }
}
