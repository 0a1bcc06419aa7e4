package io.kvroute.events.zmq;

import static io.kvroute.events.zmq.Hex.H1;
import static io.kvroute.events.zmq.Hex.H2;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvroute.KvEvent;
import io.kvroute.KvEvent.AllBlocksCleared;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.StorageTier;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KvEventCodecTest {
  private static final BlockStored VECTOR_STORED_FULL = new BlockStored(new long[] {H1, H2}, null,
      Hex.vectorTokens(), 16, null, StorageTier.GPU, "full_attention", null);
  private static final BlockStored VECTOR_STORED_LEGACY = BlockStored.of(new long[] {H1, H2}, null,
      Hex.vectorTokens(), 16);

  @Test
  void vectorA_mapFormat_decodesToTheExpectedEvents() {
    byte[] payload = Hex.bytes(Hex.VECTOR_A);
    assertEquals(322, payload.length);
    DecodedBatch batch = KvEventCodec.decode(payload);
    assertEquals(1_700_000_000.0, batch.timestamp());
    assertEquals(0, batch.dataParallelRank());
    assertEquals(List.of(VECTOR_STORED_FULL, BlockRemoved.of(H1), AllBlocksCleared.INSTANCE), batch.events());
    assertEquals(0, batch.groupIndex(0));
    assertEquals(0, batch.groupIndex(1));
    assertEquals(-1, batch.groupIndex(2));
    assertEquals(0, batch.skippedEvents() + batch.invalidEvents());
  }

  @Test
  void vectorA_encodesByteForByte() {
    DecodedBatch batch = DecodedBatch.of(1_700_000_000.0,
        List.of(VECTOR_STORED_FULL, BlockRemoved.of(H1), AllBlocksCleared.INSTANCE), 0);
    assertEquals(Hex.VECTOR_A, Hex.of(KvEventCodec.encode(batch, WireFormat.MAP)));
  }

  @Test
  void vectorB_legacyArrays_decodeAndEncodeByteForByte() {
    byte[] payload = Hex.bytes(Hex.VECTOR_B);
    assertEquals(139, payload.length);
    DecodedBatch batch = KvEventCodec.decode(payload);
    assertEquals(List.of(VECTOR_STORED_LEGACY, BlockRemoved.of(H1), AllBlocksCleared.INSTANCE), batch.events());
    assertEquals(-1, batch.groupIndex(0));
    assertArrayEquals(payload, KvEventCodec.encode(batch, WireFormat.LEGACY_ARRAY));
  }

  @Test
  void vectorB2_twelveElementArrays_decodeAndEncodeByteForByte() {
    assertEquals(102, Hex.bytes(Hex.VECTOR_B2_STORED).length);
    assertEquals(29, Hex.bytes(Hex.VECTOR_B2_REMOVED).length);
    String hex = "93" + Hex.TS + "93" + Hex.VECTOR_B2_STORED + Hex.VECTOR_B2_REMOVED + "91B0416C6C426C6F636B73436C6561726564"
        + "00";
    DecodedBatch batch = KvEventCodec.decode(Hex.bytes(hex));
    assertEquals(List.of(VECTOR_STORED_FULL, BlockRemoved.of(H1), AllBlocksCleared.INSTANCE), batch.events());
    assertEquals(0, batch.groupIndex(0));
    assertEquals(0, batch.groupIndex(1));
    assertEquals(hex, Hex.of(KvEventCodec.encode(batch, WireFormat.LEGACY_ARRAY_FULL)));
  }

  @Test
  void vectorC1_binaryHash_usesItsLastEightBytesBigEndian() {
    String hex = "93" + Hex.TS + "91" + Hex.VECTOR_C1_EVENT + "00";
    assertEquals(89, Hex.bytes(Hex.VECTOR_C1_EVENT).length);
    DecodedBatch batch = KvEventCodec.decode(Hex.bytes(hex));
    assertEquals(List.of(BlockRemoved.of(0xABABABABABABABABL)), batch.events());
  }

  @Test
  void vectorC2_sglangSignedHash_hasTheSameBitsAsTheUnsignedOne() {
    DecodedBatch batch = KvEventCodec.decode(Hex.bytes(Hex.VECTOR_C2));
    assertEquals(45, Hex.bytes(Hex.VECTOR_C2).length);
    assertEquals(List.of(BlockStored.of(new long[] {H2}, 5L, new int[] {1, 2}, 2)), batch.events());
    assertEquals(-81985529216486896L, H2);
  }

  @Test
  void twoElementBatch_ofVllm09_hasNoRank() {
    // [ts, [["BlockStored", [-5], nil, [7, 8], 2, nil]]]: six fields, a negative fixint hash, no rank.
    String hex = "92" + Hex.TS + "91" + "96AB426C6F636B53746F72656491FBC0920708" + "02C0";
    DecodedBatch batch = KvEventCodec.decode(Hex.bytes(hex));
    assertNull(batch.dataParallelRank());
    assertEquals(List.of(BlockStored.of(new long[] {-5}, null, new int[] {7, 8}, 2)), batch.events());
  }

  /** Every legacy BlockStored length from 6 to 12 fields, plus trailing fields beyond the known ones. */
  @ParameterizedTest(name = "BlockStored array of {0} elements")
  @ValueSource(ints = {5, 6, 7, 8, 9, 10, 11, 12, 13, 15})
  void legacyStoredArraysOfEveryLength(int length) {
    MsgpackWriter w = new MsgpackWriter(64);
    w.writeArrayHeader(3);
    w.writeDouble(1.5);
    w.writeArrayHeader(1);
    w.writeArrayHeader(length);
    w.writeString("BlockStored");
    w.writeArrayHeader(1);
    w.writeUnsigned(H2);
    w.writeUnsigned(7);
    w.writeArrayHeader(2);
    w.writeInt(10);
    w.writeInt(11);
    w.writeInt(2);
    Object[] optional = {null, "CPU", "my-lora", "extra", 1, "sliding_window", 128, "trailing", "more", "x"};
    for (int i = 5; i < length; i++) {
      Object v = optional[i - 5];
      if (i == 8) { // extra_keys: one block with a multimodal identifier
        w.writeArrayHeader(1);
        w.writeArrayHeader(1);
        w.writeArrayHeader(2);
        w.writeString("00000000000000ff" + "a".repeat(48));
        w.writeInt(0);
      } else if (v == null) {
        w.writeNil();
      } else if (v instanceof String s) {
        w.writeString(s);
      } else {
        w.writeInt((Integer) v);
      }
    }
    w.writeInt(3);
    DecodedBatch batch = KvEventCodec.decode(w.toByteArray());
    BlockStored stored = (BlockStored) batch.events().get(0);
    assertArrayEquals(new long[] {H2}, stored.blockHashes());
    assertEquals(7L, stored.parentBlockHash());
    assertArrayEquals(new int[] {10, 11}, stored.tokenIds());
    assertEquals(2, stored.blockSize());
    assertEquals(length > 6 ? StorageTier.HOST : StorageTier.GPU, stored.tier());
    assertEquals(length > 7 ? "my-lora" : null, stored.loraName());
    assertEquals(length > 8 ? 0xffL : -1, length > 8 ? stored.extraKeysOf(0)[0] : -1);
    assertEquals(length > 9 ? 1 : -1, batch.groupIndex(0));
    assertEquals(length > 10 ? "sliding_window" : null, stored.cacheSpecKind());
    assertEquals(3, batch.dataParallelRank());
  }

  @Test
  void sglangEightElementStored_withMetadataMap_keepsTheCacheSalt() {
    // ["BlockStored", [1], nil, [5], 1, nil, "GPU", {"cache_salt": "s"}]
    String hex = "93" + Hex.TS + "91" + "98AB426C6F636B53746F726564910 1C09105 01C0A3475055 81AA63616368655F73616C74A173"
        + "00";
    DecodedBatch batch = KvEventCodec.decode(Hex.bytes(hex));
    long[][] salted = {{io.kvroute.BlockHasher.cacheSaltKey("s")}};
    assertEquals(List.of(new BlockStored(new long[] {1}, null, new int[] {5}, 1, null, StorageTier.GPU, null,
        salted)), batch.events());
  }

  @Test
  void removedArraysOfTwoToFourElements() {
    for (int length = 2; length <= 5; length++) {
      MsgpackWriter w = new MsgpackWriter(64);
      w.writeArrayHeader(3);
      w.writeDouble(0);
      w.writeArrayHeader(1);
      w.writeArrayHeader(length);
      w.writeString("BlockRemoved");
      w.writeArrayHeader(2);
      w.writeUnsigned(1);
      w.writeUnsigned(-1L);
      if (length > 2) {
        w.writeString("DISK");
      }
      if (length > 3) {
        w.writeInt(2);
      }
      if (length > 4) {
        w.writeString("LOCAL");
      }
      w.writeInt(0);
      DecodedBatch batch = KvEventCodec.decode(w.toByteArray());
      assertEquals(List.of(new BlockRemoved(new long[] {1, -1}, length > 2 ? StorageTier.DISK : StorageTier.GPU)),
          batch.events(), "length " + length);
      assertEquals(length > 3 ? 2 : -1, batch.groupIndex(0));
    }
  }

  @Test
  void mapEvents_ignoreUnknownKeys_andAcceptAnyKeyOrder() {
    MsgpackWriter w = new MsgpackWriter(64);
    w.writeArrayHeader(3);
    w.writeDouble(0);
    w.writeArrayHeader(1);
    w.writeMapHeader(9);
    w.writeString("locality");
    w.writeString("REMOTE");
    w.writeString("token_ids");
    w.writeArrayHeader(2);
    w.writeArrayHeader(2); // EAGLE bigrams
    w.writeInt(4);
    w.writeInt(5);
    w.writeArrayHeader(2);
    w.writeInt(5);
    w.writeInt(6);
    w.writeString("block_size");
    w.writeInt(2);
    w.writeInt(42); // a non-string key
    w.writeMapHeader(1);
    w.writeNil();
    w.writeNil();
    w.writeString("block_hashes");
    w.writeArrayHeader(1);
    w.writeBinary(new byte[] {1, 2, 3});
    w.writeString("type");
    w.writeString("BlockStored");
    w.writeString("lora_name");
    w.writeString("adapter");
    w.writeString("medium");
    w.writeString("CPU_PINNED");
    w.writeString("extra_keys");
    w.writeArrayHeader(1);
    w.writeArrayHeader(3);
    w.writeString("adapter");
    w.writeString("ffffffffffffffff" + "0".repeat(48));
    w.writeString("not-hex-" + "z".repeat(56));
    w.writeInt(0);
    DecodedBatch batch = KvEventCodec.decode(w.toByteArray());
    // vLLM's block-0 tuple is (lora_name, multimodal identifiers..., cache_salt): the last other string is the salt.
    long salt = io.kvroute.BlockHasher.cacheSaltKey("not-hex-" + "z".repeat(56));
    BlockStored expected = new BlockStored(new long[] {0x010203L}, null, new int[] {4, 5}, 2, "adapter",
        StorageTier.HOST, null, new long[][] {{-1L, salt}});
    assertEquals(List.of(expected), batch.events());
  }

  @Test
  void batchAsMap_isAccepted() {
    MsgpackWriter w = new MsgpackWriter(64);
    w.writeMapHeader(4);
    w.writeString("events");
    w.writeArrayHeader(1);
    w.writeMapHeader(1);
    w.writeString("type");
    w.writeString("AllBlocksCleared");
    w.writeString("future");
    w.writeArrayHeader(0);
    w.writeString("ts");
    w.writeInt(12);
    w.writeString("dp_rank");
    w.writeInt(4);
    DecodedBatch batch = KvEventCodec.decode(w.toByteArray());
    assertEquals(List.<KvEvent>of(AllBlocksCleared.INSTANCE), batch.events());
    assertEquals(12.0, batch.timestamp());
    assertEquals(4, batch.dataParallelRank());
  }

  @Test
  void unknownEventTypes_areSkippedAndCounted_malformedEventsAreDroppedAndCounted() {
    MsgpackWriter w = new MsgpackWriter(64);
    w.writeArrayHeader(3);
    w.writeDouble(0);
    w.writeArrayHeader(5);
    w.writeMapHeader(2); // unknown type
    w.writeString("type");
    w.writeString("BlockMoved");
    w.writeString("block_hashes");
    w.writeArrayHeader(0);
    w.writeArrayHeader(2); // unknown type, array form
    w.writeString("Snapshot");
    w.writeMapHeader(0);
    w.writeMapHeader(2); // stored with a string block size
    w.writeString("type");
    w.writeString("BlockStored");
    w.writeString("block_size");
    w.writeString("16");
    w.writeInt(7); // not an event at all
    w.writeArrayHeader(1);
    w.writeString("AllBlocksCleared");
    w.writeNil();
    DecodedBatch batch = KvEventCodec.decode(w.toByteArray());
    assertEquals(List.<KvEvent>of(AllBlocksCleared.INSTANCE), batch.events());
    assertEquals(2, batch.skippedEvents());
    assertEquals(2, batch.invalidEvents());
    assertNull(batch.dataParallelRank());
  }

  @Test
  void malformedPayloads_throwFormatException() {
    String[] bad = {
      "", // empty
      "C1", // never used
      "93", // truncated
      "91CB0000000000000000", // one element
      "93" + Hex.TS + "DDFFFFFFFF", // events array claiming 4 billion elements
      "93" + Hex.TS + "91DBFFFFFFFF41", // a string claiming 4 GiB
      "93" + Hex.TS + "9000" + "00", // trailing byte
      "93A1789000", // ts is a string
      "93" + Hex.TS + "90D0FF", // negative rank
      "93" + Hex.TS + "90CE00010000", // rank above 65535
      "93" + Hex.TS + "C0" + "00", // events nil
    };
    for (String hex : bad) {
      assertThrows(KvEventFormatException.class, () -> KvEventCodec.decode(Hex.bytes(hex)), hex);
    }
  }

  @Test
  void deepNesting_doesNotOverflowTheStack() {
    int depth = 200_000;
    byte[] payload = new byte[depth + 20];
    byte[] head = Hex.bytes("93" + Hex.TS + "91" + "92A17891");
    System.arraycopy(head, 0, payload, 0, head.length);
    for (int i = head.length; i < payload.length; i++) {
      payload[i] = (byte) 0x91;
    }
    assertThrows(KvEventFormatException.class, () -> KvEventCodec.decode(payload));
  }

  @Test
  void everyTruncationOfTheVectors_throwsFormatException() {
    for (String vector : new String[] {Hex.VECTOR_A, Hex.VECTOR_B, Hex.VECTOR_C2}) {
      byte[] full = Hex.bytes(vector);
      for (int len = 0; len < full.length; len++) {
        int n = len;
        assertThrows(KvEventFormatException.class, () -> KvEventCodec.decode(full, 0, n), "length " + len);
      }
    }
  }
}
