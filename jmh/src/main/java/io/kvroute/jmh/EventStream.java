package io.kvroute.jmh;

import io.kvroute.KvEvent;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.DecodedBatch;
import io.kvroute.events.zmq.KvEventCodec;
import io.kvroute.events.zmq.WireFormat;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A cyclic stream of vLLM KV event batches that leaves an index at its size over one cycle; immutable after
 * construction, so thread-safe to read.
 *
 * <p>The stream cycles over {@value #PROMPTS} prompts of 2,048 tokens ({@value #PROMPT_BLOCKS} blocks) spread
 * round-robin over the workers: every prompt is stored, as {@code BlockStored} events of {@code blocksPerEvent}
 * blocks chained by parent hash, then evicted, as vLLM reports evictions, one {@code BlockRemoved} event per block,
 * leaves first. Each batch (one ZeroMQ message) holds one prompt's 128 stores or 128 removals, encoded as vLLM
 * v0.26+ does (tagged maps, integer hashes). Every batch is kept both encoded and decoded.
 */
final class EventStream {
  static final int PROMPTS = 256;
  static final int PROMPT_BLOCKS = 2048 / Workload.BLOCK_SIZE;

  final WorkerId[] senders = new WorkerId[2 * PROMPTS];
  final byte[][] payloads = new byte[2 * PROMPTS][];
  final List<List<KvEvent>> decoded = new ArrayList<>(2 * PROMPTS);
  final int[] eventCounts = new int[2 * PROMPTS];
  private final int blocksPerEvent;

  EventStream(List<WorkerId> ids, int blocksPerEvent, SplittableRandom random) {
    if (blocksPerEvent <= 0 || PROMPT_BLOCKS % blocksPerEvent != 0) {
      throw new IllegalArgumentException("blocksPerEvent must divide " + PROMPT_BLOCKS + " but was " + blocksPerEvent);
    }
    this.blocksPerEvent = blocksPerEvent;
    List<WorkerId> workersOf = new ArrayList<>(PROMPTS);
    List<long[]> hashesOf = new ArrayList<>(PROMPTS);
    List<int[]> tokensOf = new ArrayList<>(PROMPTS);
    for (int p = 0; p < PROMPTS; p++) {
      workersOf.add(ids.get(p % ids.size()));
      hashesOf.add(Workload.engineHashes(random, PROMPT_BLOCKS));
      tokensOf.add(Workload.tokens(random, PROMPT_BLOCKS * Workload.BLOCK_SIZE));
    }
    for (int p = 0; p < PROMPTS; p++) {
      message(workersOf.get(p), stores(hashesOf.get(p), tokensOf.get(p)));
    }
    for (int p = 0; p < PROMPTS; p++) {
      message(workersOf.get(p), removals(hashesOf.get(p)));
    }
  }

  /** The number of batches in one cycle. */
  int size() {
    return payloads.length;
  }

  /** Encodes the next message of the stream, as vLLM would publish it, and keeps its decoded form. */
  private void message(WorkerId worker, List<KvEvent> events) {
    int index = decoded.size();
    senders[index] = worker;
    payloads[index] = KvEventCodec.encode(DecodedBatch.of(1.7e9 + index, events, 0), WireFormat.MAP);
    List<KvEvent> roundTripped = KvEventCodec.decode(payloads[index]).events();
    if (!roundTripped.equals(events)) {
      throw new IllegalStateException("the codec does not round-trip message " + index);
    }
    decoded.add(roundTripped);
    eventCounts[index] = events.size();
  }

  private List<KvEvent> stores(long[] hashes, int[] tokens) {
    List<KvEvent> events = new ArrayList<>();
    for (int from = 0; from < hashes.length; from += blocksPerEvent) {
      long[] blocks = Arrays.copyOfRange(hashes, from, from + blocksPerEvent);
      int[] blockTokens = Arrays.copyOfRange(tokens, from * Workload.BLOCK_SIZE,
          (from + blocksPerEvent) * Workload.BLOCK_SIZE);
      events.add(KvEvent.BlockStored.of(blocks, from == 0 ? null : hashes[from - 1], blockTokens,
          Workload.BLOCK_SIZE));
    }
    return events;
  }

  private static List<KvEvent> removals(long[] hashes) {
    List<KvEvent> events = new ArrayList<>(hashes.length);
    for (int i = hashes.length - 1; i >= 0; i--) {
      events.add(KvEvent.BlockRemoved.of(hashes[i]));
    }
    return events;
  }
}
