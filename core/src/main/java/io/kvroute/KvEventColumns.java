package io.kvroute;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A batch of one worker's KV events held in reusable primitive columns, the allocation-free form of a
 * {@code List<KvEvent>}; not thread-safe: one producer fills it, then a {@link KvEventSink#applyColumns} call reads
 * it, then it is {@linkplain #clear cleared} and filled again.
 *
 * <p>An event source that decodes engine messages (the ZeroMQ subscriber's codec) appends each event's block
 * hashes and token ids straight into the shared columns, then commits the event with its scalar fields, so a
 * batch of ordinary events costs no allocation at all once the columns have grown to the batch size. Rare
 * per-event objects (a LoRA name, multimodal extra keys, a cache spec kind) are kept by reference.
 *
 * <p>Events are added in two steps: {@link #appendHash} and {@link #appendToken} add to the <em>open</em> event,
 * then one of {@link #commitStored}, {@link #commitRemoved} or {@link #commitCleared} closes it (or
 * {@link #discardOpen} drops what was appended, for an event found malformed half-way). {@link #event(int)} and
 * {@link #toEvents()} give the events as {@link KvEvent} objects for code that wants them.
 */
public final class KvEventColumns {
  static final byte STORED = 1;
  static final byte REMOVED = 2;
  static final byte CLEARED = 3;
  private static final StorageTier[] TIERS = StorageTier.values();

  private int size;
  private byte[] kinds = new byte[16];
  private byte[] tiers = new byte[16];
  private boolean[] hasParent = new boolean[16];
  private long[] parents = new long[16];
  private int[] blockSizes = new int[16];
  private int[] groups = new int[16];
  private int[] hashStart = new int[17]; // event i's hashes are [hashStart[i], hashStart[i + 1])
  private int[] tokenStart = new int[17];
  private @Nullable Object[] extras = new Object[16]; // per event: null, or an Extra (LoRA, extra keys, spec kind)
  private @Nullable KvEvent[] originals = new KvEvent[16]; // per event: the object it was copied from, if any
  private long[] hashes = new long[256];
  private int hashCount;
  private int[] tokens = new int[4096];
  private int tokenCount;

  /** Creates empty columns. */
  public KvEventColumns() {}

  /** Removes every event, keeping the columns' capacity. */
  public void clear() {
    Arrays.fill(extras, 0, size, null);
    Arrays.fill(originals, 0, size, null);
    size = 0;
    hashCount = 0;
    tokenCount = 0;
  }

  /**
   * The number of committed events.
   *
   * @return the events in the batch
   */
  public int size() {
    return size;
  }

  /**
   * Appends a block hash to the open event.
   *
   * @param hash the engine's block hash
   */
  public void appendHash(long hash) {
    if (hashCount == hashes.length) {
      hashes = Arrays.copyOf(hashes, hashCount * 2);
    }
    hashes[hashCount++] = hash;
  }

  /**
   * Appends a token id to the open event.
   *
   * @param token the token id
   */
  public void appendToken(int token) {
    if (tokenCount == tokens.length) {
      tokens = Arrays.copyOf(tokens, tokenCount * 2);
    }
    tokens[tokenCount++] = token;
  }

  /**
   * The block hashes appended to the open event so far.
   *
   * @return their number
   */
  public int openHashes() {
    return hashCount - hashStart[size];
  }

  /**
   * The token ids appended to the open event so far.
   *
   * @return their number
   */
  public int openTokens() {
    return tokenCount - tokenStart[size];
  }

  /** Drops the open event's block hashes, as when its hashes field is sent twice and the last one counts. */
  public void discardOpenHashes() {
    hashCount = hashStart[size];
  }

  /** Drops the open event's token ids. */
  public void discardOpenTokens() {
    tokenCount = tokenStart[size];
  }

  /** Drops everything appended to the open event. */
  public void discardOpen() {
    discardOpenHashes();
    discardOpenTokens();
  }

  /**
   * Commits the open event as a store ({@link KvEvent.BlockStored}) of its appended hashes and tokens.
   *
   * @param hasParent whether the event names a parent block
   * @param parent the parent's engine hash, when {@code hasParent}
   * @param blockSize tokens per block, as the engine sent it (not negative)
   * @param tier the tier the blocks were stored in
   * @param loraName the LoRA adapter, or null
   * @param cacheSpecKind the KV cache spec kind, or null
   * @param extraKeys per-block multimodal keys, or null
   * @param group the engine's cache group index, or -1
   * @throws IllegalArgumentException if {@code blockSize} is negative
   */
  public void commitStored(boolean hasParent, long parent, int blockSize, StorageTier tier,
      @Nullable String loraName, @Nullable String cacheSpecKind, long @Nullable [][] extraKeys, int group) {
    if (blockSize < 0) {
      throw new IllegalArgumentException("blockSize must not be negative but was " + blockSize);
    }
    int i = open(STORED, tier, group);
    this.hasParent[i] = hasParent;
    this.parents[i] = hasParent ? parent : 0;
    this.blockSizes[i] = blockSize;
    if (loraName != null || cacheSpecKind != null || extraKeys != null) {
      extras[i] = new Extra(loraName, cacheSpecKind, extraKeys);
    }
    close(i);
  }

  /**
   * Commits the open event as a removal ({@link KvEvent.BlockRemoved}) of its appended hashes; its tokens are
   * dropped.
   *
   * @param tier the tier the blocks were removed from
   * @param group the engine's cache group index, or -1
   */
  public void commitRemoved(StorageTier tier, int group) {
    discardOpenTokens();
    close(open(REMOVED, tier, group));
  }

  /**
   * Commits the open event as {@link KvEvent.AllBlocksCleared}; what was appended to it is dropped.
   *
   * @param group the engine's cache group index, or -1
   */
  public void commitCleared(int group) {
    discardOpen();
    close(open(CLEARED, StorageTier.GPU, group));
  }

  /**
   * Appends an event object (its arrays are copied).
   *
   * @param event the event
   */
  public void add(KvEvent event) {
    Objects.requireNonNull(event, "event");
    discardOpen();
    if (event instanceof KvEvent.BlockStored stored) {
      appendAll(stored.blockHashes());
      int[] ids = stored.tokenIds();
      ensureTokens(ids.length);
      System.arraycopy(ids, 0, tokens, tokenCount, ids.length);
      tokenCount += ids.length;
      Long parent = stored.parentBlockHash();
      commitStored(parent != null, parent == null ? 0 : parent, stored.blockSize(), stored.tier(),
          stored.loraName(), stored.cacheSpecKind(), stored.extraKeys(), -1);
    } else if (event instanceof KvEvent.BlockRemoved removed) {
      appendAll(removed.blockHashes());
      commitRemoved(removed.tier(), -1);
    } else {
      commitCleared(-1);
    }
    originals[size - 1] = event;
  }

  /**
   * The event at {@code index} as an object: the one it was added as, if any, else a new one.
   *
   * @param index the event's position
   * @return the event
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public KvEvent event(int index) {
    Objects.checkIndex(index, size);
    KvEvent original = originals[index];
    if (original != null) {
      return original;
    }
    switch (kinds[index]) {
      case STORED:
        return new KvEvent.BlockStored(Arrays.copyOfRange(hashes, hashStart[index], hashStart[index + 1]),
            hasParent[index] ? parents[index] : null,
            Arrays.copyOfRange(tokens, tokenStart[index], tokenStart[index + 1]), blockSizes[index],
            loraName(index), tier(index), cacheSpecKind(index), extraKeys(index));
      case REMOVED:
        return new KvEvent.BlockRemoved(Arrays.copyOfRange(hashes, hashStart[index], hashStart[index + 1]),
            tier(index));
      default:
        return KvEvent.AllBlocksCleared.INSTANCE;
    }
  }

  /**
   * The events as objects, in order.
   *
   * @return a new list
   */
  public List<KvEvent> toEvents() {
    List<KvEvent> events = new ArrayList<>(size);
    for (int i = 0; i < size; i++) {
      events.add(event(i));
    }
    return events;
  }

  /**
   * The engine's cache group index of the event at {@code index}.
   *
   * @param index the event's position
   * @return the group, or -1 when it was not sent
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public int group(int index) {
    Objects.checkIndex(index, size);
    return groups[index];
  }

  /**
   * The blocks the event at {@code index} names (stored or removed); 0 for a clear.
   *
   * @param index the event's position
   * @return its block hashes' count
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public int blocks(int index) {
    Objects.checkIndex(index, size);
    return hashStart[index + 1] - hashStart[index];
  }

  /**
   * Whether the event at {@code index} is a store ({@link KvEvent.BlockStored}).
   *
   * @param index the event's position
   * @return whether it is a store
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public boolean isStored(int index) {
    Objects.checkIndex(index, size);
    return kinds[index] == STORED;
  }

  /**
   * Whether the event at {@code index} is a removal.
   *
   * @param index the event's position
   * @return whether it is a removal
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public boolean isRemoved(int index) {
    Objects.checkIndex(index, size);
    return kinds[index] == REMOVED;
  }

  /**
   * The KV cache spec kind of the store at {@code index}.
   *
   * @param index the event's position
   * @return the kind, or null when not sent (or not a store)
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public @Nullable String cacheSpecKind(int index) {
    Objects.checkIndex(index, size);
    Object extra = extras[index];
    return extra == null ? null : ((Extra) extra).specKind;
  }

  /**
   * Whether the event at {@code index}, if a store, counts toward prefixes, as
   * {@link KvEvent.BlockStored#countsTowardPrefix()} says of its cache spec kind.
   *
   * @param index the event's position
   * @return whether its blocks belong to a group that prefixes match
   * @throws IndexOutOfBoundsException if there is no such event
   */
  public boolean countsTowardPrefix(int index) {
    return KvEvent.BlockStored.countsTowardPrefix(cacheSpecKind(index));
  }

  /**
   * Removes the events for which {@code drop[i]} is true, keeping the others in order.
   *
   * @param drop one flag per event
   * @throws IllegalArgumentException if {@code drop} is shorter than {@link #size()}
   */
  public void removeIf(boolean[] drop) {
    if (drop.length < size) {
      throw new IllegalArgumentException("drop has " + drop.length + " flags for " + size + " events");
    }
    int kept = 0;
    int hashAt = 0;
    int tokenAt = 0;
    for (int i = 0; i < size; i++) {
      int hashEnd = hashStart[i + 1];
      int tokenEnd = tokenStart[i + 1];
      if (!drop[i]) {
        int h = hashEnd - hashStart[i];
        int t = tokenEnd - tokenStart[i];
        System.arraycopy(hashes, hashStart[i], hashes, hashAt, h);
        System.arraycopy(tokens, tokenStart[i], tokens, tokenAt, t);
        kinds[kept] = kinds[i];
        tiers[kept] = tiers[i];
        hasParent[kept] = hasParent[i];
        parents[kept] = parents[i];
        blockSizes[kept] = blockSizes[i];
        groups[kept] = groups[i];
        extras[kept] = extras[i];
        originals[kept] = originals[i];
        hashStart[kept] = hashAt;
        tokenStart[kept] = tokenAt;
        hashAt += h;
        tokenAt += t;
        kept++;
      }
    }
    Arrays.fill(extras, kept, size, null);
    Arrays.fill(originals, kept, size, null);
    size = kept;
    hashCount = hashAt;
    tokenCount = tokenAt;
    hashStart[kept] = hashAt;
    tokenStart[kept] = tokenAt;
  }

  @Override
  public String toString() {
    return "KvEventColumns{events=" + size + ", hashes=" + hashCount + ", tokens=" + tokenCount + "}";
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Read by KvIndexer (same package); indexes are trusted.

  byte kind(int i) {
    return kinds[i];
  }

  StorageTier tier(int i) {
    return TIERS[tiers[i]];
  }

  int tierOrdinal(int i) {
    return tiers[i];
  }

  boolean hasParent(int i) {
    return hasParent[i];
  }

  long parent(int i) {
    return parents[i];
  }

  int blockSize(int i) {
    return blockSizes[i];
  }

  long[] hashes() {
    return hashes;
  }

  int hashStart(int i) {
    return hashStart[i];
  }

  int[] tokens() {
    return tokens;
  }

  int tokenStart(int i) {
    return tokenStart[i];
  }

  int tokenCount(int i) {
    return tokenStart[i + 1] - tokenStart[i];
  }

  @Nullable String loraName(int i) {
    Object extra = extras[i];
    return extra == null ? null : ((Extra) extra).loraName;
  }

  long @Nullable [][] extraKeys(int i) {
    Object extra = extras[i];
    return extra == null ? null : ((Extra) extra).extraKeys;
  }

  /** The extra keys of block {@code block} of event {@code i}, or null; as {@link KvEvent.BlockStored#extraKeysOf}. */
  long @Nullable [] extraKeysOf(int i, int block) {
    long[][] keys = extraKeys(i);
    return keys == null || block >= keys.length ? null : keys[block];
  }


  private void appendAll(long[] values) {
    if (hashCount + values.length > hashes.length) {
      hashes = Arrays.copyOf(hashes, Math.max(hashCount + values.length, hashes.length * 2));
    }
    System.arraycopy(values, 0, hashes, hashCount, values.length);
    hashCount += values.length;
  }

  private void ensureTokens(int more) {
    if (tokenCount + more > tokens.length) {
      tokens = Arrays.copyOf(tokens, Math.max(tokenCount + more, tokens.length * 2));
    }
  }

  private int open(byte kind, StorageTier tier, int group) {
    Objects.requireNonNull(tier, "tier");
    if (size == kinds.length) {
      int n = size * 2;
      kinds = Arrays.copyOf(kinds, n);
      tiers = Arrays.copyOf(tiers, n);
      hasParent = Arrays.copyOf(hasParent, n);
      parents = Arrays.copyOf(parents, n);
      blockSizes = Arrays.copyOf(blockSizes, n);
      groups = Arrays.copyOf(groups, n);
      extras = Arrays.copyOf(extras, n);
      originals = Arrays.copyOf(originals, n);
      hashStart = Arrays.copyOf(hashStart, n + 1);
      tokenStart = Arrays.copyOf(tokenStart, n + 1);
    }
    int i = size;
    kinds[i] = kind;
    tiers[i] = (byte) tier.ordinal();
    hasParent[i] = false;
    parents[i] = 0;
    blockSizes[i] = 0;
    groups[i] = group;
    extras[i] = null;
    originals[i] = null;
    return i;
  }

  private void close(int i) {
    size = i + 1;
    hashStart[size] = hashCount;
    tokenStart[size] = tokenCount;
  }

  private record Extra(@Nullable String loraName, @Nullable String specKind, long @Nullable [][] extraKeys) {}
}
