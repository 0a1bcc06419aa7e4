package io.kvroute.events.zmq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.StorageTier;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ArrayValue;
import org.msgpack.value.MapValue;
import org.msgpack.value.Value;
import org.msgpack.value.ValueFactory;

/**
 * Round trips of random batches, cross-checked against msgpack-core, an independent msgpack implementation: what
 * msgpack-core writes (with its own integer encodings) the codec reads, and what the codec writes msgpack-core reads
 * back field for field.
 */
class KvEventCodecPropertyTest {
  static Stream<Long> seeds() {
    return LongStream.range(1, 9).boxed();
  }

  static List<KvEvent> randomEvents(SplittableRandom r, boolean rich) {
    List<KvEvent> events = new ArrayList<>();
    int n = r.nextInt(6);
    String[] kinds = {null, "full_attention", "mla_attention"};
    for (int i = 0; i < n; i++) {
      int type = r.nextInt(10);
      if (type < 6) {
        int blocks = r.nextInt(4);
        int blockSize = 1 + r.nextInt(20);
        long[] hashes = r.longs(blocks).toArray();
        int[] tokens = r.ints((long) blocks * blockSize, 0, Integer.MAX_VALUE).toArray();
        Long parent = r.nextBoolean() ? null : r.nextLong();
        StorageTier tier = StorageTier.values()[r.nextInt(3)];
        long[][] extra = null;
        if (rich && blocks > 0 && r.nextBoolean()) {
          extra = new long[blocks][];
          extra[r.nextInt(blocks)] = r.longs(1 + r.nextInt(2)).toArray();
        }
        events.add(rich
            ? new BlockStored(hashes, parent, tokens, blockSize, r.nextBoolean() ? null : "lora-" + r.nextInt(9),
                tier, kinds[r.nextInt(kinds.length)], extra)
            : new BlockStored(hashes, parent, tokens, blockSize, null, tier, null, null));
      } else if (type < 9) {
        events.add(new BlockRemoved(r.longs(r.nextInt(5)).toArray(), StorageTier.values()[r.nextInt(3)]));
      } else {
        events.add(KvEvent.AllBlocksCleared.INSTANCE);
      }
    }
    return events;
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void roundTrip_inEveryFormat(long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 200; i++) {
      for (WireFormat format : WireFormat.values()) {
        boolean rich = format != WireFormat.LEGACY_ARRAY;
        List<KvEvent> events = randomEvents(r, rich);
        Integer rank = r.nextBoolean() ? null : r.nextInt(64);
        DecodedBatch batch = DecodedBatch.of(r.nextDouble() * 2e9, events, rank);
        byte[] bytes = KvEventCodec.encode(batch, format);
        DecodedBatch decoded = KvEventCodec.decode(bytes);
        assertEquals(batch, decoded, format + " " + i);
        assertArrayEquals(bytes, KvEventCodec.encode(decoded, format));
      }
    }
  }

  /** msgpack-core writes events with its own encodings (signed int64 hashes, str8 tags); the codec reads them. */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void readsWhatMsgpackCoreWrites(long seed) throws IOException {
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 200; i++) {
      List<KvEvent> events = randomEvents(r, false);
      boolean asMaps = r.nextBoolean();
      MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
      packer.packArrayHeader(3);
      packer.packFloat((float) 1.5); // float32, which vLLM never sends but msgpack allows
      packer.packArrayHeader(events.size());
      for (KvEvent e : events) {
        if (e instanceof BlockStored s) {
          List<Value[]> fields = List.of(
              new Value[] {ValueFactory.newString("block_hashes"), hashes(s.blockHashes())},
              new Value[] {ValueFactory.newString("parent_block_hash"), s.parentBlockHash() == null
                  ? ValueFactory.newNil() : ValueFactory.newInteger(s.parentBlockHash())},
              new Value[] {ValueFactory.newString("token_ids"), ints(s.tokenIds())},
              new Value[] {ValueFactory.newString("block_size"), ValueFactory.newInteger(s.blockSize())},
              new Value[] {ValueFactory.newString("lora_id"), ValueFactory.newNil()},
              new Value[] {ValueFactory.newString("medium"), ValueFactory.newString(KvEventCodec.medium(s.tier()))});
          pack(packer, "BlockStored", fields, asMaps);
        } else if (e instanceof BlockRemoved rm) {
          pack(packer, "BlockRemoved", List.of(
              new Value[] {ValueFactory.newString("block_hashes"), hashes(rm.blockHashes())},
              new Value[] {ValueFactory.newString("medium"), ValueFactory.newString(KvEventCodec.medium(rm.tier()))}),
              asMaps);
        } else {
          pack(packer, "AllBlocksCleared", List.of(), asMaps);
        }
      }
      packer.packInt(2);
      DecodedBatch decoded = KvEventCodec.decode(packer.toByteArray());
      assertEquals(events, decoded.events());
      assertEquals(1.5, decoded.timestamp());
      assertEquals(2, decoded.dataParallelRank());
    }
  }

  private static void pack(MessageBufferPacker packer, String tag, List<Value[]> fields, boolean asMap)
      throws IOException {
    if (asMap) {
      packer.packMapHeader(fields.size() + 1);
      packer.packString("type");
      packer.packString(tag);
      for (Value[] f : fields) {
        packer.packValue(f[0]);
        packer.packValue(f[1]);
      }
    } else {
      packer.packArrayHeader(fields.size() + 1);
      packer.packString(tag);
      for (Value[] f : fields) {
        packer.packValue(f[1]);
      }
    }
  }

  private static Value hashes(long[] hashes) {
    List<Value> values = new ArrayList<>();
    for (long h : hashes) {
      values.add(ValueFactory.newInteger(h)); // signed, as SGLang sends them
    }
    return ValueFactory.newArray(values);
  }

  private static Value ints(int[] ints) {
    List<Value> values = new ArrayList<>();
    for (int v : ints) {
      values.add(ValueFactory.newInteger(v));
    }
    return ValueFactory.newArray(values);
  }

  /** msgpack-core reads what the codec writes: same structure, unsigned 64-bit hashes intact. */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void msgpackCoreReadsWhatTheCodecWrites(long seed) throws IOException {
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < 100; i++) {
      List<KvEvent> events = randomEvents(r, true);
      byte[] bytes = KvEventCodec.encode(DecodedBatch.of(3.25, events, 1), WireFormat.MAP);
      try (MessageUnpacker unpacker = MessagePack.newDefaultUnpacker(bytes)) {
        ArrayValue batch = unpacker.unpackValue().asArrayValue();
        assertEquals(3, batch.size());
        assertEquals(3.25, batch.get(0).asFloatValue().toDouble());
        assertEquals(1, batch.get(2).asIntegerValue().toInt());
        ArrayValue list = batch.get(1).asArrayValue();
        assertEquals(events.size(), list.size());
        for (int e = 0; e < events.size(); e++) {
          MapValue map = list.get(e).asMapValue();
          String type = map.map().get(ValueFactory.newString("type")).asStringValue().asString();
          assertEquals(events.get(e).getClass().getSimpleName(), type);
          if (events.get(e) instanceof BlockStored s) {
            ArrayValue hashes = map.map().get(ValueFactory.newString("block_hashes")).asArrayValue();
            for (int h = 0; h < s.blockHashes().length; h++) {
              // msgspec writes every non-negative int unsigned: the value read is the unsigned hash
              assertEquals(Long.toUnsignedString(s.blockHashes()[h]),
                  hashes.get(h).asIntegerValue().asBigInteger().toString());
            }
            assertEquals(s.tokenIds().length, map.map().get(ValueFactory.newString("token_ids")).asArrayValue()
                .size());
          }
        }
      }
    }
  }

  /** A header declaring 2^32 - 1 elements (or bytes) must fail before allocating anything of that size. */
  @Test
  void hugeDeclaredLengths_allocateNothingProportional() {
    com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    String[] payloads = {
      "93" + Hex.TS + "DDFFFFFFFF00", // events: array32
      "93" + Hex.TS + "91DFFFFFFFFF00", // event: map32
      "93" + Hex.TS + "9192AB426C6F636B53746F726564DDFFFFFFFF", // block_hashes array32
      "93" + Hex.TS + "91DBFFFFFFFF00", // str32
      "93" + Hex.TS + "91C6FFFFFFFF00", // bin32
    };
    for (String hex : payloads) {
      byte[] payload = Hex.bytes(hex);
      KvEventCodec.decode(Hex.bytes(Hex.VECTOR_A)); // warm up the code paths
      assertThrows(KvEventFormatException.class, () -> KvEventCodec.decode(payload));
      long before = threads.getThreadAllocatedBytes(Thread.currentThread().getId());
      for (int i = 0; i < 10; i++) {
        assertThrows(KvEventFormatException.class, () -> KvEventCodec.decode(payload));
      }
      long allocated = threads.getThreadAllocatedBytes(Thread.currentThread().getId()) - before;
      assertTrue(allocated < 1 << 20, hex + " allocated " + allocated + " bytes");
    }
  }
}
