package io.kvroute.events.zmq;

import io.kvroute.BlockHasher;
import io.kvroute.KvEvent;
import io.kvroute.KvEvent.AllBlocksCleared;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import io.kvroute.KvEventColumns;
import io.kvroute.StorageTier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Decodes and encodes the msgpack payloads of vLLM and SGLang KV event batches, byte-compatible with the engines;
 * stateless and thread-safe.
 *
 * <p><b>Decoding</b> accepts every shape the engines have sent:
 *
 * <ul>
 *   <li>the batch {@code [ts, events]} (vLLM before v0.9.1) or {@code [ts, events, data_parallel_rank, ...]}, and
 *       defensively a map with keys {@code ts}, {@code events} and {@code data_parallel_rank} (or {@code dp_rank},
 *       {@code attn_dp_rank});
 *   <li>events as tagged maps ({@code "type"} key, vLLM v0.26.0+ and SGLang after its switch; unknown keys are
 *       ignored) or as tagged arrays of any legacy length ({@code BlockStored} with 6 to 12 fields, SGLang's
 *       8-element variant with trailing metadata; trailing fields beyond the known ones are ignored);
 *   <li>block hashes as unsigned or signed integers of any width, or as {@code bin} (a sha256 digest: its last 8
 *       bytes, big-endian, as vLLM's integer form and llm-d do);
 *   <li>{@code medium} (mapped with {@link StorageTier#fromMedium}), {@code lora_name}, {@code group_idx},
 *       {@code kv_cache_spec_kind} and {@code extra_keys}: of the latter only 64-hex-character multimodal identifiers
 *       are kept, each as the unsigned 64-bit value of its first 16 hex digits (Dynamo's rule);
 *   <li>the cache salt: vLLM's as the string in block 0's {@code extra_keys} tuple that is neither the LoRA name
 *       (which comes first) nor a multimodal identifier; SGLang's as {@code metadata.cache_salt} (map events, or the
 *       map in the 8th element of its array form) or a {@code cache_salt} key. For an event starting a sequence (no
 *       parent) the salt's key ({@link io.kvroute.BlockHasher#cacheSaltKey}) joins block 0's extra keys, as the
 *       engines fold it into that block's hash, so salted blocks match only requests with the same {@link
 *       io.kvroute.RouteRequest.Builder#cacheSalt salt};
 *   <li>EAGLE bigram token ids (each token an array {@code [t, next]}) are reduced to their first elements, which are
 *       the block's own tokens; the look-ahead token is not needed for prefix matching.
 * </ul>
 *
 * <p>An event of an unknown type is skipped and counted in {@link DecodedBatch#skippedEvents()}; a well-formed
 * event whose required fields are missing or mistyped is dropped and counted in {@link
 * DecodedBatch#invalidEvents()}. A payload that is not msgpack, is truncated or is not a batch throws {@link
 * KvEventFormatException}. Every declared length is checked against the bytes present before anything is allocated,
 * so a decoder never allocates more than a small multiple of the payload size.
 */
public final class KvEventCodec {
  private static final byte[] TYPE = ascii("type");
  private static final byte[] BLOCK_HASHES = ascii("block_hashes");
  private static final byte[] PARENT_BLOCK_HASH = ascii("parent_block_hash");
  private static final byte[] TOKEN_IDS = ascii("token_ids");
  private static final byte[] BLOCK_SIZE = ascii("block_size");
  private static final byte[] MEDIUM = ascii("medium");
  private static final byte[] LORA_NAME = ascii("lora_name");
  private static final byte[] EXTRA_KEYS = ascii("extra_keys");
  private static final byte[] GROUP_IDX = ascii("group_idx");
  private static final byte[] KV_CACHE_SPEC_KIND = ascii("kv_cache_spec_kind");
  private static final byte[] METADATA = ascii("metadata");
  private static final byte[] CACHE_SALT = ascii("cache_salt");
  private static final byte[] TS = ascii("ts");
  private static final byte[] EVENTS = ascii("events");
  private static final byte[] DATA_PARALLEL_RANK = ascii("data_parallel_rank");
  private static final byte[] DP_RANK = ascii("dp_rank");
  private static final byte[] ATTN_DP_RANK = ascii("attn_dp_rank");
  private static final byte[] TAG_STORED = ascii("BlockStored");
  private static final byte[] TAG_REMOVED = ascii("BlockRemoved");
  // A removal as vLLM writes it: a map of 4 entries, "type": "BlockRemoved", then the key "block_hashes"; then the
  // key "medium", and the key "group_idx" (msgpack fixstr headers 0xA0 + length).
  private static final byte[] REMOVED_HEAD = concat(new byte[] {(byte) 0x84, (byte) 0xA4}, TYPE,
      new byte[] {(byte) 0xAC}, TAG_REMOVED, new byte[] {(byte) 0xAC}, BLOCK_HASHES);
  private static final byte[] MEDIUM_KEY = concat(new byte[] {(byte) 0xA6}, MEDIUM);
  private static final byte[] GROUP_KEY = concat(new byte[] {(byte) 0xA9}, GROUP_IDX);
  private static final byte[] TAG_CLEARED = ascii("AllBlocksCleared");
  // Media that StorageTier.fromMedium names, decoded without allocating a string.
  private static final String[] KNOWN_MEDIA = {"GPU", "CPU", "CPU_PINNED", "CPU_TIER1", "DEVICE", "CUDA", "HOST"};
  private static final byte[][] KNOWN_MEDIA_BYTES =
      java.util.Arrays.stream(KNOWN_MEDIA).map(KvEventCodec::ascii).toArray(byte[][]::new);
  // Events a batch's list is first sized for: its declared count, up to this bound (a count is untrusted input).
  private static final int PRESIZED_EVENTS = 1024;

  /** The largest data-parallel rank a batch may name. */
  static final int MAX_DATA_PARALLEL_RANK = 65_535;

  private static final int KIND_UNKNOWN = 0;
  private static final int KIND_STORED = 1;
  private static final int KIND_REMOVED = 2;
  private static final int KIND_CLEARED = 3;

  private static final int MAX_EXTRA_KEY_DEPTH = 4;
  private static final int MAX_SALT_BYTES = 4096;
  private static final int[] NO_GROUPS = new int[0];

  private KvEventCodec() {}

  /**
   * Decodes one batch payload.
   *
   * @param payload the message payload
   * @return the batch
   * @throws NullPointerException if {@code payload} is null
   * @throws KvEventFormatException if the payload is not a well-formed event batch
   */
  public static DecodedBatch decode(byte[] payload) {
    Objects.requireNonNull(payload, "payload");
    return decode(payload, 0, payload.length);
  }

  /**
   * Decodes the batch in {@code payload[offset, offset + length)}.
   *
   * @param payload the message payload
   * @param offset where the batch starts
   * @param length the batch's bytes
   * @return the batch
   * @throws NullPointerException if {@code payload} is null
   * @throws IndexOutOfBoundsException if the range lies outside {@code payload}
   * @throws KvEventFormatException if the bytes are not a well-formed event batch
   */
  public static DecodedBatch decode(byte[] payload, int offset, int length) {
    Objects.requireNonNull(payload, "payload");
    MsgpackReader reader = new MsgpackReader(payload, offset, length);
    if (reader.remaining() == 0) {
      throw MsgpackReader.error("empty payload");
    }
    Decoder decoder = new Decoder(reader);
    DecodedBatch batch = decoder.batch();
    if (reader.remaining() != 0) {
      throw MsgpackReader.error(reader.remaining() + " trailing bytes after the batch");
    }
    return batch;
  }

  /**
   * Decodes the batch in {@code payload[offset, offset + length)} straight into {@code into}, without building
   * event objects: the same events {@link #decode(byte[], int, int)} would return, appended to the columns in the
   * same order, each with its {@code group_idx}. {@code into} is not cleared first; on an exception it may hold the
   * events decoded before the error.
   *
   * @param payload the message payload
   * @param offset where the batch starts
   * @param length the batch's bytes
   * @param into the columns to append the events to
   * @return the batch's timestamp, rank and dropped-event counts
   * @throws NullPointerException if {@code payload} or {@code into} is null
   * @throws IndexOutOfBoundsException if the range lies outside {@code payload}
   * @throws KvEventFormatException if the bytes are not a well-formed event batch
   */
  public static BatchHeader decodeInto(byte[] payload, int offset, int length, KvEventColumns into) {
    Objects.requireNonNull(payload, "payload");
    Objects.requireNonNull(into, "into");
    MsgpackReader reader = new MsgpackReader(payload, offset, length);
    if (reader.remaining() == 0) {
      throw MsgpackReader.error("empty payload");
    }
    Decoder decoder = new Decoder(reader);
    decoder.columns = into;
    decoder.batch();
    into.discardOpen();
    if (reader.remaining() != 0) {
      throw MsgpackReader.error(reader.remaining() + " trailing bytes after the batch");
    }
    return new BatchHeader(decoder.timestamp, decoder.rank, decoder.skipped, decoder.invalid);
  }

  /**
   * Encodes a batch the way vLLM's msgspec encoder does.
   *
   * @param batch the batch
   * @param format the wire shape of its events
   * @return the msgpack payload
   * @throws NullPointerException if an argument is null
   */
  public static byte[] encode(DecodedBatch batch, WireFormat format) {
    Objects.requireNonNull(batch, "batch");
    Objects.requireNonNull(format, "format");
    return encode(batch.timestamp(), batch.events(), batch.dataParallelRank(), format);
  }

  static byte[] encode(double ts, List<? extends KvEvent> events, @Nullable Integer rank, WireFormat format) {
    MsgpackWriter w = new MsgpackWriter(64 + 64 * events.size());
    w.writeArrayHeader(3);
    w.writeDouble(ts);
    w.writeArrayHeader(events.size());
    for (KvEvent event : events) {
      Objects.requireNonNull(event, "event");
      if (format == WireFormat.MAP) {
        writeMapEvent(w, event);
      } else {
        writeArrayEvent(w, event, format == WireFormat.LEGACY_ARRAY_FULL);
      }
    }
    if (rank == null) {
      w.writeNil();
    } else {
      w.writeInt(rank);
    }
    return w.toByteArray();
  }

  private static void writeMapEvent(MsgpackWriter w, KvEvent event) {
    if (event instanceof BlockStored stored) {
      w.writeMapHeader(stored.cacheSpecKind() == null ? 10 : 11);
      w.writeString("type");
      w.writeString("BlockStored");
      w.writeString("block_hashes");
      writeHashes(w, stored.blockHashes());
      w.writeString("parent_block_hash");
      writeOptionalHash(w, stored.parentBlockHash());
      w.writeString("token_ids");
      writeTokens(w, stored.tokenIds());
      w.writeString("block_size");
      w.writeInt(stored.blockSize());
      w.writeString("lora_id");
      w.writeNil();
      w.writeString("medium");
      w.writeString(medium(stored.tier()));
      w.writeString("lora_name");
      writeOptionalString(w, stored.loraName());
      w.writeString("extra_keys");
      writeExtraKeys(w, stored);
      w.writeString("group_idx");
      w.writeInt(0);
      if (stored.cacheSpecKind() != null) {
        w.writeString("kv_cache_spec_kind");
        w.writeString(stored.cacheSpecKind());
      }
    } else if (event instanceof BlockRemoved removed) {
      w.writeMapHeader(4);
      w.writeString("type");
      w.writeString("BlockRemoved");
      w.writeString("block_hashes");
      writeHashes(w, removed.blockHashes());
      w.writeString("medium");
      w.writeString(medium(removed.tier()));
      w.writeString("group_idx");
      w.writeInt(0);
    } else {
      w.writeMapHeader(1);
      w.writeString("type");
      w.writeString("AllBlocksCleared");
    }
  }

  private static void writeArrayEvent(MsgpackWriter w, KvEvent event, boolean full) {
    if (event instanceof BlockStored stored) {
      w.writeArrayHeader(full ? 12 : 7);
      w.writeString("BlockStored");
      writeHashes(w, stored.blockHashes());
      writeOptionalHash(w, stored.parentBlockHash());
      writeTokens(w, stored.tokenIds());
      w.writeInt(stored.blockSize());
      w.writeNil();
      w.writeString(medium(stored.tier()));
      if (full) {
        writeOptionalString(w, stored.loraName());
        writeExtraKeys(w, stored);
        w.writeInt(0);
        writeOptionalString(w, stored.cacheSpecKind());
        w.writeNil();
      }
    } else if (event instanceof BlockRemoved removed) {
      w.writeArrayHeader(full ? 4 : 3);
      w.writeString("BlockRemoved");
      writeHashes(w, removed.blockHashes());
      w.writeString(medium(removed.tier()));
      if (full) {
        w.writeInt(0);
      }
    } else {
      w.writeArrayHeader(1);
      w.writeString("AllBlocksCleared");
    }
  }

  private static void writeHashes(MsgpackWriter w, long[] hashes) {
    w.writeArrayHeader(hashes.length);
    for (long h : hashes) {
      w.writeUnsigned(h);
    }
  }

  private static void writeOptionalHash(MsgpackWriter w, @Nullable Long hash) {
    if (hash == null) {
      w.writeNil();
    } else {
      w.writeUnsigned(hash);
    }
  }

  private static void writeTokens(MsgpackWriter w, int[] tokens) {
    w.writeArrayHeader(tokens.length);
    for (int t : tokens) {
      w.writeInt(t);
    }
  }

  private static void writeOptionalString(MsgpackWriter w, @Nullable String s) {
    if (s == null) {
      w.writeNil();
    } else {
      w.writeString(s);
    }
  }

  /** vLLM sends one entry per block, nil when the block has no extra keys; identifiers are 64 hex characters. */
  private static void writeExtraKeys(MsgpackWriter w, BlockStored stored) {
    int blocks = stored.blockHashes().length;
    long[][] keys = stored.extraKeys();
    w.writeArrayHeader(blocks);
    for (int i = 0; i < blocks; i++) {
      long[] block = keys != null && i < keys.length ? keys[i] : null;
      if (block == null) {
        w.writeNil();
      } else {
        w.writeArrayHeader(block.length);
        for (long key : block) {
          w.writeString(String.format(Locale.ROOT, "%016x", key) + "0".repeat(48));
        }
      }
    }
  }

  static String medium(StorageTier tier) {
    switch (tier) {
      case GPU:
        return "GPU";
      case HOST:
        return "CPU";
      default:
        return "STORAGE";
    }
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] concat(byte[]... parts) {
    int n = 0;
    for (byte[] part : parts) {
      n += part.length;
    }
    byte[] out = new byte[n];
    int at = 0;
    for (byte[] part : parts) {
      System.arraycopy(part, 0, out, at, part.length);
      at += part.length;
    }
    return out;
  }

  /** Decoding state for one payload. */
  private static final class Decoder {
    private final MsgpackReader r;
    private int skipped;
    private int invalid;
    // Set for decodeInto: block hashes and token ids go straight into these columns, and events are committed to
    // them instead of built as objects.
    private @Nullable KvEventColumns columns;
    private double timestamp;
    private @Nullable Integer rank;

    // Fields of the event being decoded.
    private int kind;
    private long @Nullable [] hashes;
    private boolean haveHashes;
    private boolean hasParent;
    private long parent;
    private int @Nullable [] tokens;
    private boolean haveTokens;
    private int blockSize;
    private @Nullable String medium;
    private @Nullable String loraName;
    private long @Nullable [][] extraKeys;
    private @Nullable List<String> block0Strings; // non-identifier strings of block 0's extra keys (vLLM)
    private @Nullable String cacheSalt; // SGLang's metadata.cache_salt
    private int groupIndex;
    private @Nullable String specKind;

    Decoder(MsgpackReader r) {
      this.r = r;
    }

    /** Decodes the batch: returns it, or, when decoding into columns, commits its events there and returns null. */
    @Nullable DecodedBatch batch() {
      double ts = 0;
      boolean haveTs = false;
      ArrayList<KvEvent> events = null;
      int[] groups = null;
      Integer rank = null;
      if (r.peekType() == MsgpackReader.ARRAY) {
        int n = r.readArrayHeader();
        if (n < 2) {
          throw MsgpackReader.error("a batch needs at least 2 elements but has " + n);
        }
        ts = r.readDouble();
        haveTs = true;
        events = new ArrayList<>(0);
        groups = events(columns == null ? events : null);
        if (n >= 3) {
          rank = rank();
        }
        for (int i = 3; i < n; i++) {
          r.skipValue();
        }
      } else if (r.peekType() == MsgpackReader.MAP) {
        int n = r.readMapHeader();
        for (int i = 0; i < n; i++) {
          if (r.peekType() != MsgpackReader.STRING) {
            r.skipValue();
            r.skipValue();
            continue;
          }
          int keyStart = r.position();
          if (r.readStringEquals(TS)) {
            ts = r.readDouble();
            haveTs = true;
            continue;
          }
          r.position(keyStart);
          if (r.readStringEquals(EVENTS)) {
            events = new ArrayList<>(0);
            groups = events(columns == null ? events : null);
            continue;
          }
          r.position(keyStart);
          if (r.readStringEquals(DATA_PARALLEL_RANK)) {
            rank = rank();
            continue;
          }
          r.position(keyStart);
          if (r.readStringEquals(DP_RANK)) {
            rank = rank();
            continue;
          }
          r.position(keyStart);
          if (r.readStringEquals(ATTN_DP_RANK)) {
            rank = rank();
            continue;
          }
          r.skipValue();
        }
        if (!haveTs || events == null) {
          throw MsgpackReader.error("a batch map needs the keys ts and events");
        }
      } else {
        throw MsgpackReader.error("a batch must be an array or a map");
      }
      this.timestamp = ts;
      this.rank = rank;
      return columns != null ? null : new DecodedBatch(ts, events, groups, rank, skipped, invalid);
    }

    private @Nullable Integer rank() {
      if (r.tryReadNil()) {
        return null;
      }
      return (int) r.readLong(0, MAX_DATA_PARALLEL_RANK, "data_parallel_rank");
    }

    /** Decodes the events into {@code out}, or, when null, into the columns; returns their group indexes. */
    private int[] events(@Nullable ArrayList<KvEvent> out) {
      int n = r.readArrayHeader();
      if (out == null) {
        for (int i = 0; i < n; i++) {
          int start = r.position();
          try {
            if (!event()) {
              skipped++;
            }
          } catch (KvEventFormatException e) {
            r.position(start);
            r.skipValue();
            invalid++;
          }
        }
        return NO_GROUPS;
      }
      // Sized for the declared count, up to a bound: n is untrusted, and counts declared events, not decoded ones.
      out.ensureCapacity(Math.min(n, PRESIZED_EVENTS));
      int[] groups = new int[Math.min(n, PRESIZED_EVENTS)];
      int count = 0;
      for (int i = 0; i < n; i++) {
        int start = r.position();
        KvEvent event;
        try {
          event();
          event = built;
        } catch (KvEventFormatException e) {
          // The event is malformed; resynchronise on its end. If even skipping fails, the payload is broken.
          r.position(start);
          r.skipValue();
          invalid++;
          continue;
        }
        if (event == null) {
          skipped++;
        } else {
          out.add(event);
          if (count == groups.length) {
            groups = Arrays.copyOf(groups, Math.max(16, count * 2));
          }
          groups[count++] = groupIndex;
        }
      }
      return count == groups.length ? groups : Arrays.copyOf(groups, count);
    }

    private @Nullable KvEvent built; // the event the last event() built, in object mode

    /** Decodes one event: builds it (into {@link #built}) or commits it to the columns; false if skipped. */
    private boolean event() {
      if (columns != null) {
        columns.discardOpen(); // what a malformed or skipped event before this one appended
        // A removal in vLLM's layout sets every field its commit reads (kind, haveHashes, medium, groupIndex), so
        // the rest are reset only for the other events: 13 stores fewer for most events of a stream.
        if (removalInVllmLayout()) {
          return build();
        }
      }
      built = null;
      kind = -1;
      hashes = null;
      haveHashes = false;
      hasParent = false;
      parent = 0;
      tokens = null;
      haveTokens = false;
      blockSize = -1;
      medium = null;
      loraName = null;
      extraKeys = null;
      block0Strings = null;
      cacheSalt = null;
      groupIndex = -1;
      specKind = null;
      int type = r.peekType();
      if (type == MsgpackReader.MAP) {
        mapEvent();
      } else if (type == MsgpackReader.ARRAY) {
        arrayEvent();
      } else {
        throw MsgpackReader.error("an event must be a map or an array");
      }
      return build();
    }

    /**
     * Decodes a removal written with exactly vLLM's keys in vLLM's order ({type: BlockRemoved, block_hashes,
     * medium, group_idx}: most events of a stream, one per evicted block) without looking each key up: the bytes up
     * to the hashes are compared at once, then each later key. Returns false, with nothing consumed or appended,
     * for any other event; the general path then decodes it, to the same result.
     */
    private boolean removalInVllmLayout() {
      int start = r.position();
      if (r.remaining() < REMOVED_HEAD.length || !r.regionEquals(start, REMOVED_HEAD)) {
        return false;
      }
      kind = KIND_REMOVED;
      if (usualRemovalTail(start + REMOVED_HEAD.length, r.remaining() - REMOVED_HEAD.length)) {
        return true;
      }
      r.position(start + REMOVED_HEAD.length);
      hashes();
      if (r.remaining() >= MEDIUM_KEY.length && r.regionEquals(r.position(), MEDIUM_KEY)) {
        r.position(r.position() + MEDIUM_KEY.length);
        medium = medium();
        if (r.remaining() >= GROUP_KEY.length && r.regionEquals(r.position(), GROUP_KEY)) {
          r.position(r.position() + GROUP_KEY.length);
          groupIndex = optionalGroup();
          return true;
        }
      }
      r.position(start); // another layout: start over the general way
      columns.discardOpen();
      kind = -1;
      haveHashes = false;
      medium = null;
      return false;
    }

    /**
     * The rest of a removal in vLLM's layout, from {@code at} ({@code left} bytes on), when it is what vLLM writes:
     * one hash in 8 bytes (uint 64 or int 64), the medium {@code "GPU"} or nil, the group a positive fixint or
     * nil. Reads at fixed offsets and moves the reader once, at the end (each read through the reader's methods
     * stores and reloads its position, a chain of dependent steps through memory); appends the hash and sets what
     * {@link #build} commits, as the general path would. Returns false, with nothing consumed or appended, for
     * anything else.
     */
    private boolean usualRemovalTail(int at, int left) {
      int longest = 10 + MEDIUM_KEY.length + 4 + GROUP_KEY.length + 1;
      if (left < longest || r.byteAt(at) != (byte) 0x91) {
        return false;
      }
      int hashHead = r.byteAt(at + 1) & 0xFF;
      if (hashHead != 0xCF && hashHead != 0xD3) {
        return false;
      }
      long hash = r.longAt(at + 2);
      int q = at + 10;
      if (!r.regionEquals(q, MEDIUM_KEY)) {
        return false;
      }
      q += MEDIUM_KEY.length;
      String usualMedium;
      int mediumHead = r.byteAt(q) & 0xFF;
      if (mediumHead == 0xC0) {
        usualMedium = null;
        q++;
      } else if (mediumHead == 0xA3 && r.byteAt(q + 1) == 'G' && r.byteAt(q + 2) == 'P' && r.byteAt(q + 3) == 'U') {
        usualMedium = KNOWN_MEDIA[0];
        q += 4;
      } else {
        return false;
      }
      if (!r.regionEquals(q, GROUP_KEY)) {
        return false;
      }
      q += GROUP_KEY.length;
      int groupHead = r.byteAt(q) & 0xFF;
      if (groupHead > 0x7F && groupHead != 0xC0) {
        return false;
      }
      columns.appendHash(hash);
      haveHashes = true;
      medium = usualMedium;
      groupIndex = groupHead == 0xC0 ? -1 : groupHead;
      r.position(q + 1);
      return true;
    }

    private void mapEvent() {
      int n = r.readMapHeader();
      for (int i = 0; i < n; i++) {
        if (r.peekType() != MsgpackReader.STRING) {
          r.skipValue();
          r.skipValue();
          continue;
        }
        int len = r.readStringHeader();
        int keyStart = r.position();
        r.skipBytes(len);
        if (keyIs(keyStart, len, TYPE)) {
          kind = tag();
        } else if (keyIs(keyStart, len, BLOCK_HASHES)) {
          hashes = hashes();
        } else if (keyIs(keyStart, len, PARENT_BLOCK_HASH)) {
          optionalParent();
        } else if (keyIs(keyStart, len, TOKEN_IDS)) {
          tokens = tokens();
        } else if (keyIs(keyStart, len, BLOCK_SIZE)) {
          blockSize = (int) r.readLong(0, Integer.MAX_VALUE, "block_size");
        } else if (keyIs(keyStart, len, MEDIUM)) {
          medium = medium();
        } else if (keyIs(keyStart, len, LORA_NAME)) {
          loraName = optionalString();
        } else if (keyIs(keyStart, len, EXTRA_KEYS)) {
          extraKeys = extraKeys();
        } else if (keyIs(keyStart, len, GROUP_IDX)) {
          groupIndex = optionalGroup();
        } else if (keyIs(keyStart, len, KV_CACHE_SPEC_KIND)) {
          specKind = optionalString();
        } else if (keyIs(keyStart, len, METADATA)) {
          metadata();
        } else if (keyIs(keyStart, len, CACHE_SALT)) {
          cacheSalt = optionalString();
        } else {
          r.skipValue();
        }
      }
      if (kind == -1) {
        throw MsgpackReader.error("an event map has no type");
      }
    }

    private boolean keyIs(int start, int len, byte[] key) {
      return len == key.length && r.regionEquals(start, key);
    }

    private void arrayEvent() {
      int n = r.readArrayHeader();
      if (n == 0) {
        throw MsgpackReader.error("an event array is empty");
      }
      kind = tag();
      int i = 1;
      if (kind == KIND_STORED) {
        if (n < 5) {
          throw MsgpackReader.error("a BlockStored array needs at least 5 elements but has " + n);
        }
        hashes = hashes();
        optionalParent();
        tokens = tokens();
        blockSize = (int) r.readLong(0, Integer.MAX_VALUE, "block_size");
        i = 5;
        if (i < n) { // lora_id, deprecated
          r.skipValue();
          i++;
        }
        if (i < n) {
          medium = medium();
          i++;
        }
        if (i < n) { // lora_name; SGLang's metadata map sits here in its 8-element form
          if (r.peekType() == MsgpackReader.MAP) {
            metadata();
          } else {
            loraName = optionalString();
          }
          i++;
        }
        if (i < n) {
          extraKeys = extraKeys();
          i++;
        }
        if (i < n) {
          groupIndex = optionalGroup();
          i++;
        }
        if (i < n) {
          specKind = optionalString();
          i++;
        }
      } else if (kind == KIND_REMOVED) {
        if (n < 2) {
          throw MsgpackReader.error("a BlockRemoved array needs at least 2 elements but has " + n);
        }
        hashes = hashes();
        i = 2;
        if (i < n) {
          medium = medium();
          i++;
        }
        if (i < n) {
          groupIndex = optionalGroup();
          i++;
        }
      }
      for (; i < n; i++) {
        r.skipValue();
      }
    }

    private int tag() {
      if (r.peekType() != MsgpackReader.STRING) {
        throw MsgpackReader.error("an event type must be a string");
      }
      int len = r.readStringHeader();
      int start = r.position();
      r.skipBytes(len);
      if (keyIs(start, len, TAG_STORED)) {
        return KIND_STORED;
      }
      if (keyIs(start, len, TAG_REMOVED)) {
        return KIND_REMOVED;
      }
      if (keyIs(start, len, TAG_CLEARED)) {
        return KIND_CLEARED;
      }
      return KIND_UNKNOWN;
    }

    /** Builds (or commits) the decoded event; false for an event of an unknown type. */
    private boolean build() {
      switch (kind) {
        case KIND_STORED:
          if (!haveHashes || !haveTokens || blockSize < 0) {
            throw MsgpackReader.error("a BlockStored event needs block_hashes, token_ids and block_size");
          }
          String salt = salt();
          long[][] keys = extraKeys;
          int blocks = columns == null ? hashes.length : columns.openHashes();
          if (salt != null && !hasParent && blocks > 0) {
            keys = BlockHasher.withCacheSalt(keys, salt);
          }
          if (columns != null) {
            columns.commitStored(hasParent, parent, blockSize, StorageTier.fromMedium(medium), loraName, specKind,
                keys, groupIndex);
          } else {
            built = new BlockStored(hashes, hasParent ? Long.valueOf(parent) : null, tokens, blockSize, loraName,
                StorageTier.fromMedium(medium), specKind, keys);
          }
          return true;
        case KIND_REMOVED:
          if (!haveHashes) {
            throw MsgpackReader.error("a BlockRemoved event needs block_hashes");
          }
          if (columns != null) {
            columns.commitRemoved(StorageTier.fromMedium(medium), groupIndex);
          } else {
            built = new BlockRemoved(hashes, StorageTier.fromMedium(medium));
          }
          return true;
        case KIND_CLEARED:
          if (columns != null) {
            columns.commitCleared(groupIndex);
          } else {
            built = AllBlocksCleared.INSTANCE;
          }
          return true;
        default:
          return false;
      }
    }

    /** The block hashes: an array, or, decoding into columns, appended there (null returned). */
    private long @Nullable [] hashes() {
      int n = r.readArrayHeader();
      haveHashes = true;
      if (columns != null) {
        columns.discardOpenHashes(); // a repeated key: the last one counts, as in object mode
        for (int i = r.readInt64Run(n, columns); i < n; i++) {
          columns.appendHash(hash());
        }
        return null;
      }
      long[] out = new long[n];
      for (int i = 0; i < n; i++) {
        out[i] = hash();
      }
      return out;
    }

    private void optionalParent() {
      if (r.tryReadNil()) {
        hasParent = false;
        parent = 0;
      } else {
        parent = hash();
        hasParent = true;
      }
    }

    private long hash() {
      int type = r.peekType();
      if (type == MsgpackReader.INTEGER) {
        return r.readLong();
      }
      if (type == MsgpackReader.BINARY) {
        int n = r.readBinaryHeader();
        if (n == 0) {
          throw MsgpackReader.error("an empty binary block hash");
        }
        int end = r.position() + n;
        long v = 0;
        for (int i = Math.max(r.position(), end - 8); i < end; i++) {
          v = (v << 8) | (r.byteAt(i) & 0xFFL);
        }
        r.skipBytes(n);
        return v;
      }
      throw MsgpackReader.error("a block hash must be an integer or binary");
    }

    /** The token ids: an array, or, decoding into columns, appended there (null returned). */
    private int @Nullable [] tokens() {
      int n = r.readArrayHeader();
      haveTokens = true;
      KvEventColumns into = columns;
      if (into != null) {
        into.discardOpenTokens(); // a repeated key: the last one counts, as in object mode
      }
      int[] out = into == null ? new int[n] : null;
      for (int i = into == null ? 0 : r.readUint32Run(n, into); i < n; i++) {
        int token;
        long plain = r.readUint32OrMinusOne(); // the common case, every id in [0, 2^32) (stored as its low 32 bits)
        if (plain >= 0) {
          token = (int) plain;
        } else if (r.peekType() == MsgpackReader.ARRAY) { // EAGLE bigram [token, next token]
          int pair = r.readArrayHeader();
          if (pair == 0) {
            throw MsgpackReader.error("an empty bigram token");
          }
          token = token();
          for (int j = 1; j < pair; j++) {
            r.skipValue();
          }
        } else {
          token = token();
        }
        if (out != null) {
          out[i] = token;
        } else {
          into.appendToken(token);
        }
      }
      return out;
    }

    private int token() {
      return (int) r.readLong(Integer.MIN_VALUE, 0xFFFF_FFFFL, "token id");
    }

    /**
     * The medium of an event: one of the names {@link StorageTier#fromMedium} knows, matched in place (ignoring
     * case, as it does) so that the common event allocates no string; any other string is read as such.
     */
    private @Nullable String medium() {
      if (r.peekType() != MsgpackReader.STRING) {
        r.skipValue();
        return null;
      }
      int start = r.position();
      int len = r.readStringHeader();
      int at = r.position();
      for (int m = 0; m < KNOWN_MEDIA.length; m++) {
        if (asciiEqualsIgnoreCase(at, len, KNOWN_MEDIA_BYTES[m])) {
          r.skipBytes(len);
          return KNOWN_MEDIA[m];
        }
      }
      r.position(start);
      return r.readString();
    }

    private boolean asciiEqualsIgnoreCase(int at, int len, byte[] upper) {
      if (len != upper.length) {
        return false;
      }
      for (int i = 0; i < len; i++) {
        int c = r.byteAt(at + i);
        if (c >= 'a' && c <= 'z') {
          c -= 'a' - 'A';
        }
        if (c != upper[i]) {
          return false;
        }
      }
      return true;
    }

    private @Nullable String optionalString() {
      int type = r.peekType();
      if (type == MsgpackReader.STRING) {
        return r.readString();
      }
      r.skipValue(); // nil, or a type we do not use (SGLang's metadata map in the lora_name slot)
      return null;
    }

    private int optionalGroup() {
      if (r.peekType() == MsgpackReader.INTEGER) {
        long v = r.readLong();
        return v < 0 || v > Integer.MAX_VALUE || r.lastIntegerWasLargeUnsigned() ? -1 : (int) v;
      }
      r.skipValue();
      return -1;
    }

    private long @Nullable [][] extraKeys() {
      if (r.peekType() != MsgpackReader.ARRAY) {
        r.skipValue();
        return null;
      }
      int n = r.readArrayHeader();
      long[][] out = new long[n][];
      boolean any = false;
      long[] scratch = new long[4];
      for (int i = 0; i < n; i++) {
        if (r.tryReadNil()) {
          continue;
        }
        int[] count = {0};
        if (i == 0 && r.peekType() == MsgpackReader.ARRAY) {
          scratch = collectBlock0(scratch, count);
        } else {
          scratch = collect(scratch, count, 0);
        }
        if (count[0] > 0) {
          out[i] = Arrays.copyOf(scratch, count[0]);
          any = true;
        }
      }
      return any ? out : null;
    }

    /** Like {@link #collect} for block 0's tuple, also keeping its other top-level strings (LoRA name, salt). */
    private long[] collectBlock0(long[] into, int[] count) {
      int n = r.readArrayHeader();
      for (int i = 0; i < n; i++) {
        if (r.peekType() == MsgpackReader.STRING) {
          int start = r.position();
          int len = r.readStringHeader();
          int at = r.position();
          boolean identifier = len == 64 && isHex(at, 64);
          r.position(start);
          if (!identifier && len <= MAX_SALT_BYTES) {
            if (block0Strings == null) {
              block0Strings = new ArrayList<>(2);
            }
            block0Strings.add(r.readString());
            continue;
          }
        }
        into = collect(into, count, 1);
      }
      return into;
    }

    /** SGLang's {@code metadata} map: its {@code cache_salt}. */
    private void metadata() {
      if (r.peekType() != MsgpackReader.MAP) {
        r.skipValue();
        return;
      }
      int n = r.readMapHeader();
      for (int i = 0; i < n; i++) {
        if (r.peekType() != MsgpackReader.STRING) {
          r.skipValue();
          r.skipValue();
          continue;
        }
        int len = r.readStringHeader();
        int keyStart = r.position();
        r.skipBytes(len);
        if (keyIs(keyStart, len, CACHE_SALT)) {
          cacheSalt = optionalString();
        } else {
          r.skipValue();
        }
      }
    }

    /**
     * The event's cache salt: SGLang's explicit one, else vLLM's, which is the last string of block 0's extra keys
     * once the LoRA name (first, when the request has an adapter) is set aside.
     */
    private @Nullable String salt() {
      if (cacheSalt != null && !cacheSalt.isEmpty()) {
        return cacheSalt;
      }
      List<String> strings = block0Strings;
      if (strings == null) {
        return null;
      }
      int from = loraName != null && !strings.isEmpty() && strings.get(0).equals(loraName) ? 1 : 0;
      String salt = strings.size() > from ? strings.get(strings.size() - 1) : null;
      return salt == null || salt.isEmpty() ? null : salt;
    }

    /** Collects 64-hex-character identifiers from one value, descending into arrays up to a fixed depth. */
    private long[] collect(long[] into, int[] count, int depth) {
      int type = r.peekType();
      if (type == MsgpackReader.STRING) {
        int len = r.readStringHeader();
        int start = r.position();
        r.skipBytes(len);
        if (len == 64 && isHex(start, 64)) {
          if (count[0] == into.length) {
            into = Arrays.copyOf(into, into.length * 2);
          }
          into[count[0]++] = Long.parseUnsignedLong(asciiString(start, 16), 16);
        }
      } else if (type == MsgpackReader.ARRAY && depth < MAX_EXTRA_KEY_DEPTH) {
        int n = r.readArrayHeader();
        for (int i = 0; i < n; i++) {
          into = collect(into, count, depth + 1);
        }
      } else {
        r.skipValue();
      }
      return into;
    }

    private boolean isHex(int start, int len) {
      for (int i = 0; i < len; i++) {
        int c = r.byteAt(start + i);
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
          return false;
        }
      }
      return true;
    }

    private String asciiString(int start, int len) {
      char[] chars = new char[len];
      for (int i = 0; i < len; i++) {
        chars[i] = (char) r.byteAt(start + i);
      }
      return new String(chars);
    }
  }
}
