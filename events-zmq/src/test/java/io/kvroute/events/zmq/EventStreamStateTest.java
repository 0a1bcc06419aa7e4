package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.CandidateScore;
import io.kvroute.EventStreamState;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.RouteRequest;
import io.kvroute.Router;
import io.kvroute.Routing;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.EventSourceListener.PurgeReason;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.zeromq.ZContext;

/**
 * One {@link EventStream} driven frame by frame on the test thread, with a fake clock, its own {@link StreamCursor}
 * and {@link BatchApplier} feeding a real {@link Router}: the health states of the README's table (and what the
 * router makes of them), the listener's gap, purge and failure callbacks, and live frames that must be refused.
 * No live socket is opened; the one replay test connects a DEALER to a closed port, an engine that never answers.
 */
class EventStreamStateTest {
  private static final WorkerId W = WorkerId.of("engine");
  private static final int BLOCK = 4;
  private static final long MS = 1_000_000L;
  private static final long SILENT_AFTER = 5_000 * MS;
  private static final long STALE_AFTER = 2_000 * MS;
  private static final long PURGE_AFTER = 3_000 * MS;
  private static final long REPLAY_TIMEOUT = 100 * MS;
  private static final long COOLDOWN = 1_000 * MS;

  private final CursorHarness.FakeTicker ticker = new CursorHarness.FakeTicker();
  private final ZContext context = new ZContext();
  private final Router router = Router.newBuilder().blockSize(BLOCK).build();
  private final Recorder listener = new Recorder();
  private @Nullable EventStream stream;

  /** What the listener heard, in order. */
  private static final class Recorder implements EventSourceListener {
    final List<EventStreamState> states = new ArrayList<>();
    final List<String> gaps = new ArrayList<>();
    final List<PurgeReason> purges = new ArrayList<>();
    final List<String> decodeErrors = new ArrayList<>();
    final List<String> replayFailures = new ArrayList<>();

    @Override
    public void onStreamState(WorkerId worker, EventStreamState state) {
      states.add(state);
    }

    @Override
    public void onGap(WorkerId worker, long expected, long received) {
      gaps.add(worker + " " + expected + ".." + received);
    }

    @Override
    public void onPurged(WorkerId worker, PurgeReason reason) {
      purges.add(reason);
    }

    @Override
    public void onDecodeError(WorkerId worker, String reason) {
      decodeErrors.add(reason);
    }

    @Override
    public void onReplayFailed(WorkerId worker, String reason) {
      replayFailures.add(reason);
    }
  }

  @AfterEach
  void close() {
    if (stream != null) {
      stream.close(false);
    }
    context.close();
  }

  private EventStream open(@Nullable String replayEndpoint) {
    router.addWorker(Worker.of(W));
    StreamCursor.Settings settings = new StreamCursor.Settings(true, REPLAY_TIMEOUT, COOLDOWN, 10_000, 1 << 26,
        STALE_AFTER, PURGE_AFTER);
    EventStream.Shared shared = new EventStream.Shared(context, router.eventSink(), listener, settings, ticker,
        16 << 20, 1_000, 0, SILENT_AFTER, router, null, null);
    EventSourceConfig config = EventSourceConfig.of(W, "tcp://127.0.0.1:1").withReplayEndpoint(replayEndpoint);
    stream = new EventStream.EventSource(config, shared).streams.get(0);
    return stream;
  }

  private static int[] tokens(int batch) {
    return IntStream.range(batch * 1000, batch * 1000 + BLOCK).toArray();
  }

  /** Batch {@code seq}: one stored block of its own. */
  private static byte[] payload(long seq) {
    long hash = (seq + 1) * 0x9E3779B97F4A7C15L;
    return KvEventCodec.encode(seq + 1.0, List.of(BlockStored.of(new long[] {hash}, null, tokens((int) seq), BLOCK)),
        null, WireFormat.MAP);
  }

  private static List<byte[]> frames(byte[] seqFrame, byte[] payload) {
    return List.of("".getBytes(StandardCharsets.UTF_8), seqFrame, payload);
  }

  private void live(EventStream s, long seq) {
    s.onLiveMessage(frames(KvEventPublisher.seqBytes(seq), payload(seq)));
    s.reportState();
  }

  private void tick(EventStream s, long nanos) {
    ticker.now += nanos;
    s.cursor.tick();
    s.applier.tick();
    s.reportState();
  }

  /** Whether the router scores the worker by its own predictions, as it does for SILENT, BROKEN and UNKNOWN. */
  private boolean routerScoresByPredictions() {
    try (Routing r = router.select(RouteRequest.newBuilder(tokens(99)).explain(true).build())) {
      CandidateScore score = r.explanation().stream().filter(c -> c.worker().equals(W)).findFirst().orElseThrow();
      return score.approximate();
    }
  }

  /**
   * The README's health table walked through in order: UNKNOWN before any batch; LIVE once one is applied; SILENT
   * when connected without a batch for longer than silentAfter; LIVE again on the next batch (a gap without replay
   * purges, then applies the batch after it: LIVE); disconnected, LIVE until staleAfter, then BROKEN (stale), purged
   * after purgeAfter more; reconnected with nothing applied since the purge, still BROKEN; LIVE with the next batch.
   * Each change reaches the listener once and the router: it scores the worker by predictions exactly while the
   * stream is UNKNOWN, SILENT or BROKEN.
   */
  @Test
  void theStatesFollowTheStream_andReachTheListenerAndTheRouter() {
    EventStream s = open(null);
    s.reportState();
    assertEquals(EventStreamState.UNKNOWN, s.state());
    assertTrue(routerScoresByPredictions(), "no event yet");

    s.cursor.onConnected();
    live(s, 0);
    assertEquals(EventStreamState.LIVE, s.state());
    assertFalse(routerScoresByPredictions(), "live");

    tick(s, SILENT_AFTER);
    assertEquals(EventStreamState.LIVE, s.state(), "silent only after more than silentAfter");
    tick(s, 1);
    assertEquals(EventStreamState.SILENT, s.state());
    assertTrue(routerScoresByPredictions(), "silent");

    live(s, 1);
    assertEquals(EventStreamState.LIVE, s.state());
    assertFalse(routerScoresByPredictions());

    live(s, 3); // 2 was lost and there is no replay endpoint
    assertEquals(List.of(W + " 2..3"), listener.gaps, "the gap: batches 2 to 3 - 1 not seen");
    assertEquals(List.of(PurgeReason.GAP_NOT_RECOVERABLE), listener.purges);
    assertEquals(EventStreamState.LIVE, s.state(), "the batch after the gap was applied");
    assertEquals(3, s.health().lastSequence());

    s.cursor.onDisconnected();
    tick(s, STALE_AFTER - 1);
    assertEquals(EventStreamState.LIVE, s.state(), "disconnected, not yet stale");
    assertFalse(s.health().connected());
    tick(s, 1);
    assertEquals(EventStreamState.BROKEN, s.state());
    assertTrue(s.health().stale());
    assertTrue(routerScoresByPredictions(), "broken");
    tick(s, PURGE_AFTER - 1);
    assertEquals(List.of(PurgeReason.GAP_NOT_RECOVERABLE), listener.purges, "not yet purged");
    tick(s, 1);
    assertEquals(List.of(PurgeReason.GAP_NOT_RECOVERABLE, PurgeReason.DISCONNECTED), listener.purges);

    s.cursor.onConnected();
    s.reportState();
    assertFalse(s.health().stale());
    assertEquals(EventStreamState.BROKEN, s.state(), "purged, and nothing applied since");
    assertTrue(routerScoresByPredictions());
    live(s, 4);
    assertEquals(EventStreamState.LIVE, s.state());
    assertFalse(routerScoresByPredictions());

    assertEquals(List.of(EventStreamState.LIVE, EventStreamState.SILENT, EventStreamState.LIVE,
        EventStreamState.BROKEN, EventStreamState.LIVE), listener.states, "each change reported once");
    assertEquals(List.of(), listener.decodeErrors);
    assertEquals(2, s.health().purges());
  }

  /**
   * A gap with a replay endpoint that never answers: REPLAYING while the request is out, asked once more over a new
   * connection after one timeout, failed after the second (purged, the held batch applied), and then cooling for
   * the cooldown, during which the next gap purges instead of replaying.
   */
  @Test
  void anUnansweredReplayFails_purges_andCoolsDownForTheCooldown() throws IOException {
    int port;
    try (ServerSocket closed = new ServerSocket(0)) {
      port = closed.getLocalPort(); // closed again at once: nothing answers there
    }
    EventStream s = open("tcp://127.0.0.1:" + port);
    s.cursor.onConnected();
    live(s, 0);
    live(s, 2);
    assertEquals(EventStreamState.REPLAYING, s.state());
    assertTrue(s.health().replaying());
    assertFalse(s.health().cooling());
    tick(s, REPLAY_TIMEOUT);
    assertTrue(s.health().replaying(), "asked again once");
    assertEquals(List.of(), listener.replayFailures);
    tick(s, REPLAY_TIMEOUT);
    assertEquals(1, listener.replayFailures.size(), listener.replayFailures.toString());
    assertFalse(s.health().replaying());
    assertTrue(s.health().cooling(), "cooling after a failed replay");
    assertEquals(List.of(PurgeReason.REPLAY_FAILED), listener.purges);
    assertEquals(2, s.health().lastSequence(), "the held batch was applied after the purge");
    assertEquals(EventStreamState.LIVE, s.state());

    live(s, 4); // a gap while cooling: purged, not replayed
    assertFalse(s.health().replaying());
    assertEquals(List.of(PurgeReason.REPLAY_FAILED, PurgeReason.GAP_NOT_RECOVERABLE), listener.purges);
    tick(s, COOLDOWN - 1);
    assertTrue(s.health().cooling());
    tick(s, 1);
    assertFalse(s.health().cooling(), "the cooldown is over");
    live(s, 6);
    assertTrue(s.health().replaying(), "gaps are replayed again");
  }

  /**
   * Live frames that are not {@code [topic, 8-byte seq, payload]} with a sequence number below 2^63 are counted as
   * decode errors and change nothing: not the position, not the index, no gap, no purge, no restart. The next good
   * batch then follows on without a gap.
   */
  @Test
  void malformedLiveFrames_areCountedAndChangeNothing() {
    EventStream s = open(null);
    s.cursor.onConnected();
    live(s, 0);
    byte[] nine = Arrays.copyOf(KvEventPublisher.seqBytes(1), 9); // starts with a valid 1
    List<List<byte[]>> bad = List.of(
        frames(nine, payload(1)),
        frames(Arrays.copyOf(KvEventPublisher.seqBytes(1), 7), payload(1)),
        frames(KvEventPublisher.seqBytes(Long.MIN_VALUE), payload(1)), // 2^63
        frames(KvEventPublisher.seqBytes(-1), payload(1)), // 2^64 - 1
        List.of(KvEventPublisher.seqBytes(1), payload(1)),
        List.of(new byte[0], KvEventPublisher.seqBytes(1), payload(1), new byte[0]));
    for (List<byte[]> frames : bad) {
      s.onLiveMessage(frames);
    }
    assertEquals(bad.size(), listener.decodeErrors.size(), listener.decodeErrors.toString());
    assertEquals(0, s.health().lastSequence(), "position unchanged");
    assertEquals(List.of(), listener.purges);
    assertEquals(List.of(), listener.gaps);
    assertEquals(0, s.cursor.restarts);
    assertEquals(1, router.indexer().entriesOf(W), "only batch 0's block");
    live(s, 1);
    assertEquals(List.of(), listener.gaps);
    assertEquals(2, router.indexer().entriesOf(W));
  }
}
