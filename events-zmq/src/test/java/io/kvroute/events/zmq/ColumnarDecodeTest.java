package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvroute.BlockHasher;
import io.kvroute.IndexInvariants;
import io.kvroute.KvEvent;
import io.kvroute.KvEventColumns;
import io.kvroute.KvIndexer;
import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link KvEventCodec#decodeInto} (events straight into reused columns) against {@link KvEventCodec#decode} (event
 * objects), the path it replaces in the subscriber: the same events, groups, header and errors on random batches
 * in every wire format and on mutated payloads; and an index fed the columns ends exactly as one fed the objects.
 */
class ColumnarDecodeTest {
  static Stream<Arguments> seeds() {
    return LongStream.range(0, 6).mapToObj(i -> Arguments.of("seed " + (70 + i), 70L + i));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void decodeIntoGivesTheEventsDecodeGives(String name, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    KvEventColumns columns = new KvEventColumns(); // reused across batches, as the subscriber does
    for (int i = 0; i < 300; i++) {
      for (WireFormat format : WireFormat.values()) {
        List<KvEvent> events = KvEventCodecPropertyTest.randomEvents(r, format != WireFormat.LEGACY_ARRAY);
        Integer rank = r.nextBoolean() ? null : r.nextInt(64);
        byte[] bytes = KvEventCodec.encode(DecodedBatch.of(r.nextDouble() * 2e9, events, rank), format);
        columns.clear();
        assertSame(name + " " + format + " " + i, bytes, columns);
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void mutatedPayloadsFailOrDecodeAlikeBothWays(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<byte[]> corpus = DecoderFuzzTest.corpus(random);
    KvEventColumns columns = new KvEventColumns();
    int decoded = 0;
    for (int i = 0; i < 20_000; i++) {
      byte[] payload = DecoderFuzzTest.mutate(corpus.get(random.nextInt(corpus.size())), random);
      columns.clear();
      decoded += assertSame(name + " payload " + i, payload, columns) ? 1 : 0;
    }
    assertEquals(true, decoded > 1_000, "some mutated payloads still decode: " + decoded);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void anIndexFedColumnsEndsAsOneFedObjects(String name, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    KvIndexer objects = KvIndexer.newBuilder().blockSize(16).maxEntries(3_000).build();
    KvIndexer columnar = KvIndexer.newBuilder().blockSize(16).maxEntries(3_000).build();
    WorkerId[] workers = {WorkerId.of("a"), WorkerId.of("b"), new WorkerId("b", 1)};
    EngineModel[] engines = new EngineModel[workers.length];
    for (int w = 0; w < workers.length; w++) {
      engines[w] = new EngineModel(random.nextLong(), 16, 400);
    }
    KvEventColumns columns = new KvEventColumns();
    List<int[]> roots = new ArrayList<>();
    for (int i = 0; i < 400; i++) {
      int w = random.nextInt(workers.length);
      List<KvEvent> batch = engines[w].nextBatch();
      byte[] payload = KvEventCodec.encode(DecodedBatch.of(i, batch, null), WireFormat.values()[i % 3]);
      objects.applyAll(workers[w], KvEventCodec.decode(payload).events());
      columns.clear();
      KvEventCodec.decodeInto(payload, 0, payload.length, columns);
      columnar.applyColumns(workers[w], columns);
      for (KvEvent e : batch) {
        if (e instanceof KvEvent.BlockStored s && s.parentBlockHash() == null && roots.size() < 200) {
          roots.add(s.tokenIds());
        }
      }
    }
    assertEquals(objects.stats(), columnar.stats(), name);
    IndexInvariants.check(columnar);
    BlockHasher hasher = BlockHasher.of(16);
    for (int[] tokens : roots) {
      long[] query = hasher.sequenceHashes(tokens);
      assertEquals(objects.findMatches(query), columnar.findMatches(query), name);
    }
  }

  /**
   * Removals written key by key, in vLLM's layout (which the columnar decoder reads without looking keys up) and
   * in near misses of it: other key orders, a missing or extra key, other values for medium and group_idx (nil,
   * large, negative, a string), one or several hashes, a hash of the wrong type; every batch decodes the same both
   * ways.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("seeds")
  void removalsInAndNearVllmsLayoutDecodeTheSameBothWays(String name, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    KvEventColumns columns = new KvEventColumns();
    int decoded = 0;
    for (int i = 0; i < 300; i++) {
      int events = 1 + r.nextInt(6);
      MsgpackWriter w = new MsgpackWriter(256);
      w.writeArrayHeader(3);
      w.writeDouble(i);
      w.writeArrayHeader(events);
      for (int e = 0; e < events; e++) {
        writeRemoval(w, r);
      }
      w.writeNil();
      columns.clear();
      if (assertSame(name + " batch " + i, w.toByteArray(), columns)) {
        decoded++;
      }
    }
    assertEquals(true, decoded > 100, "most batches decode: " + decoded);
  }

  private static void writeRemoval(MsgpackWriter w, SplittableRandom r) {
    List<String> keys = new ArrayList<>(List.of("type", "block_hashes", "medium", "group_idx"));
    int variant = r.nextInt(6);
    if (variant == 1) {
      java.util.Collections.swap(keys, 1 + r.nextInt(3), 1 + r.nextInt(3)); // another order (or the same)
    } else if (variant == 2) {
      keys.remove(2 + r.nextInt(2)); // medium or group_idx missing
    } else if (variant == 3) {
      keys.add(r.nextInt(keys.size() + 1), r.nextBoolean() ? "lora_name" : "medium"); // an extra or repeated key
    }
    w.writeMapHeader(keys.size());
    for (String key : keys) {
      w.writeString(key);
      switch (key) {
        case "type":
          w.writeString(r.nextInt(10) == 0 ? "BlockStored" : "BlockRemoved");
          break;
        case "block_hashes":
          int n = r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(3);
          w.writeArrayHeader(n);
          for (int h = 0; h < n; h++) {
            int form = r.nextInt(30);
            if (form == 0) {
              w.writeString("not a hash");
            } else if (form < 4) { // small, as an engine's minimal encoding writes such a hash: not 8 bytes
              w.writeUnsigned(r.nextInt(1 << (8 * form)));
            } else if (form < 7) {
              w.writeInt(-1 - r.nextLong(Long.MAX_VALUE)); // a negative hash (int 64, or shorter when small)
            } else {
              w.writeUnsigned(r.nextLong());
            }
          }
          break;
        case "medium":
          String[] media = {"GPU", "CPU", "cpu", "DISK", "LMCACHE", "a medium"};
          if (r.nextInt(8) == 0) {
            w.writeNil();
          } else {
            w.writeString(media[r.nextInt(media.length)]);
          }
          break;
        case "group_idx":
          long[] groups = {0, 0, 1, 7, -1, Integer.MAX_VALUE + 1L, Long.MIN_VALUE};
          int g = r.nextInt(groups.length + 1);
          if (g == groups.length) {
            w.writeNil();
          } else {
            w.writeInt(groups[g]);
          }
          break;
        default:
          w.writeNil();
      }
    }
  }

  /** Decodes both ways; asserts they agree (both fail, or the same batch); returns whether it decoded. */
  private static boolean assertSame(String name, byte[] payload, KvEventColumns columns) {
    DecodedBatch expected;
    try {
      expected = KvEventCodec.decode(payload);
    } catch (KvEventFormatException e) {
      try {
        KvEventCodec.decodeInto(payload, 0, payload.length, columns);
      } catch (KvEventFormatException again) {
        assertEquals(e.getMessage(), again.getMessage(), name);
        return false;
      }
      throw new AssertionError(name + ": decode threw " + e.getMessage() + " but decodeInto did not");
    }
    BatchHeader header = KvEventCodec.decodeInto(payload, 0, payload.length, columns);
    assertEquals(expected.events(), columns.toEvents(), name);
    assertEquals(expected.timestamp(), header.timestamp(), name);
    assertEquals(expected.dataParallelRank(), header.dataParallelRank(), name);
    assertEquals(expected.skippedEvents(), header.skippedEvents(), name);
    assertEquals(expected.invalidEvents(), header.invalidEvents(), name);
    for (int i = 0; i < columns.size(); i++) {
      assertEquals(expected.groupIndex(i), columns.group(i), name + " group of event " + i);
    }
    return true;
  }
}
