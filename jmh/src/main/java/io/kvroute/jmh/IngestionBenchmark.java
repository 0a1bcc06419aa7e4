package io.kvroute.jmh;

import io.kvroute.KvEvent;
import io.kvroute.KvEventColumns;
import io.kvroute.KvEventSink;
import io.kvroute.KvIndex;
import io.kvroute.Router;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.events.zmq.BatchHeader;
import io.kvroute.events.zmq.DecodedBatch;
import io.kvroute.events.zmq.KvEventCodec;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Event ingestion on one core: vLLM KV event batches decoded from msgpack ({@link KvEventCodec#decode(byte[])})
 * and applied to a router's index through {@link Router#eventSink()}, as the ZeroMQ subscriber does.
 *
 * <p>The index is first populated with {@code indexedBlocks} blocks. The stream then cycles over 256 prompts of
 * 2,048 tokens (128 blocks each) spread over the workers: every prompt is stored, as {@code BlockStored} events of
 * {@code blocksPerEvent} blocks chained by parent hash, then evicted, as vLLM reports evictions, one
 * {@code BlockRemoved} event per block, leaves first. Each batch (one ZeroMQ message) holds one prompt's 128 stores
 * or 128 removals, encoded as vLLM v0.26+ does (tagged maps, integer hashes), so the index stays at its size and
 * half the block operations are stores (which hash their 16 tokens) and half removals.
 *
 * <p>The secondary scores count the work: {@code blocks} is block operations (stores plus removals) per second, the
 * unit of the target and of Dynamo's figures; {@code events} is events per second. {@link #applyDecoded} and
 * {@link #decode} split the cost between the index and the codec. Single-threaded: the index applies events under
 * an exclusive lock, so one thread measures one core's share, and the stream must be applied in order.
 * <pre>
 * java -jar jmh/target/benchmarks.jar IngestionBenchmark -prof gc -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@Threads(1)
@State(Scope.Benchmark)
public class IngestionBenchmark {
  static final int PROMPTS = EventStream.PROMPTS;
  static final int PROMPT_BLOCKS = EventStream.PROMPT_BLOCKS;

  @Param({"1000000"})
  int indexedBlocks;

  @Param({"64"})
  int workers;

  /** Blocks per {@code BlockStored} event: 1 as in decode steps, 16 or 128 as in chunked or whole prefills. */
  @Param({"1", "16", "128"})
  int blocksPerEvent;

  KvIndex indexer;
  KvEventSink sink;
  WorkerId[] senders;
  byte[][] payloads;
  List<List<KvEvent>> decoded;
  int[] eventCounts;
  final KvEventColumns columns = new KvEventColumns();
  int next;

  @Setup(Level.Trial)
  public void setUp() {
    if (PROMPT_BLOCKS % blocksPerEvent != 0) {
      throw new IllegalArgumentException("blocksPerEvent must divide " + PROMPT_BLOCKS);
    }
    Router router = Router.newBuilder().randomSeed(Workload.SEED).build();
    List<WorkerId> ids = Workload.workers(workers);
    ids.forEach(id -> router.addWorker(Worker.of(id)));
    indexer = router.indexer();
    sink = router.eventSink();
    SplittableRandom random = new SplittableRandom(Workload.SEED);
    Workload.populate(sink, ids, indexedBlocks, PROMPT_BLOCKS, 0, random);
    EventStream stream = new EventStream(ids, blocksPerEvent, random);
    senders = stream.senders;
    payloads = stream.payloads;
    decoded = stream.decoded;
    eventCounts = stream.eventCounts;
  }

  /** Counts the work done; JMH reports each field per second. */
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  @State(Scope.Thread)
  public static class Work {
    public long blocks;
    public long events;

    void add(int eventCount) {
      blocks += PROMPT_BLOCKS;
      events += eventCount;
    }
  }

  /** Decodes one batch and applies it: the subscriber's whole path after the socket. */
  @Benchmark
  public int decodeAndApply(Work work) {
    int i = advance();
    List<KvEvent> events = KvEventCodec.decode(payloads[i]).events();
    sink.applyAll(senders[i], events);
    work.add(events.size());
    return events.size();
  }

  /** Applies one batch decoded beforehand: the index's share. */
  @Benchmark
  public int applyDecoded(Work work) {
    int i = advance();
    sink.applyAll(senders[i], decoded.get(i));
    work.add(eventCounts[i]);
    return eventCounts[i];
  }

  /** Decodes one batch without applying it: the codec's share. The index does not change. */
  @Benchmark
  public DecodedBatch decode(Work work) {
    int i = advance();
    work.add(eventCounts[i]);
    return KvEventCodec.decode(payloads[i]);
  }

  /**
   * Decodes one batch straight into reused columns ({@link KvEventCodec#decodeInto}) and applies them
   * ({@link KvEventSink#applyColumns}): the subscriber's path after the socket, without event objects.
   */
  @Benchmark
  public int decodeIntoIndex(Work work) {
    int i = advance();
    byte[] payload = payloads[i];
    columns.clear();
    KvEventCodec.decodeInto(payload, 0, payload.length, columns);
    sink.applyColumns(senders[i], columns);
    work.add(columns.size());
    return columns.size();
  }

  /** Decodes one batch into reused columns without applying it: the columnar codec's share and its garbage. */
  @Benchmark
  public BatchHeader decodeColumns(Work work) {
    int i = advance();
    byte[] payload = payloads[i];
    columns.clear();
    BatchHeader header = KvEventCodec.decodeInto(payload, 0, payload.length, columns);
    work.add(columns.size());
    return header;
  }

  private int advance() {
    int i = next;
    next = i + 1 == payloads.length ? 0 : i + 1;
    return i;
  }
}
