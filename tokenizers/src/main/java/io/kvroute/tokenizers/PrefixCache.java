package io.kvroute.tokenizers;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Remembers the token ids of rendered chat prefixes that end at a segment boundary, so that a conversation grown by
 * a message encodes only its new text; thread-safe (one short lock around the map, none while encoding).
 *
 * <p>Why it is exact: Hugging Face tokenizers first split a text at every match of a non-normalized added token
 * (leftmost-longest), then normalize, pre-tokenize and encode each piece on its own. A position right after such a
 * match is therefore a boundary no later stage crosses: {@code encode(t) == encode(t[0:b]) ++ encode(t[b:])}. This
 * holds unless a stage treats a text's first piece differently (Metaspace's {@code prepend_scheme: "first"}), an
 * added token strips whitespace or matches single words only (its match would depend on text past the boundary),
 * or the post-processor adds tokens (only encodings without special tokens are cached). {@link #usable} checks the
 * first three from the tokenizer's files; callers handle the last.
 *
 * <p>Each encoded text leaves entries for its last {@link #STORED_BOUNDARIES} boundaries, sharing the text and its
 * ids. Entries are keyed by a 64-bit polynomial hash of the prefix and confirmed by comparing the text, so a hash
 * collision costs a miss, never a wrong answer. The cache holds at most {@code maxBytes} of texts and ids (2 bytes a
 * char, 4 an id, counted once per text) and entries, evicting the least recently used.
 */
final class PrefixCache {
  /** Encodes a piece of text without special tokens. */
  interface Encoder {
    int[] encode(String text);
  }

  private static final long PRIME = 0x100000001b3L;

  /**
   * How many of a text's last boundaries get an entry: enough to reach back past the final message and the
   * generation prompt (Qwen's ChatML writes 2 special tokens a message, Llama 3 writes 3), so that a sibling request
   * (the same history with another last message, a regenerated turn) re-uses the history too.
   */
  static final int STORED_BOUNDARIES = 8;

  private final Map<Character, String[]> tokensByFirstChar;
  private final long maxBytes;
  private final LinkedHashMap<Long, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
  private long bytes;
  final AtomicLong lookups = new AtomicLong();
  final AtomicLong hits = new AtomicLong();
  final AtomicLong reusedTokens = new AtomicLong();
  final AtomicLong encodedChars = new AtomicLong();

  /** One encoded text, shared by the entries of its boundaries; counted once while any entry holds it. */
  private static final class Group {
    final String text;
    final int[] ids;
    int refs;

    Group(String text, int[] ids) {
      this.text = text;
      this.ids = ids;
    }

    long bytes() {
      return 2L * text.length() + 4L * ids.length + 64;
    }
  }

  /** The first {@code chars} of a group's text encode to its first {@code tokens} ids. */
  private record Entry(Group group, int chars, int tokens) {
    static final long BYTES = 96;
  }

  /**
   * Whether the tokenizer's pieces between added-token matches are encoded independently (see the class comment).
   */
  static boolean usable(TokenizerFiles files) {
    if (files.firstPieceSpecial) {
      return false;
    }
    for (TokenizerFiles.AddedToken t : files.addedTokens) {
      if (!t.normalized() && (t.lstrip() || t.rstrip() || t.singleWord())) {
        return false;
      }
    }
    return files.addedTokens.stream().anyMatch(t -> !t.normalized() && !t.content().isEmpty());
  }

  PrefixCache(List<TokenizerFiles.AddedToken> addedTokens, long maxBytes) {
    Map<Character, List<String>> byFirst = new HashMap<>();
    for (TokenizerFiles.AddedToken t : addedTokens) {
      if (!t.normalized() && !t.content().isEmpty()) {
        List<String> list = byFirst.computeIfAbsent(t.content().charAt(0), c -> new ArrayList<>());
        if (!list.contains(t.content())) {
          list.add(t.content());
        }
      }
    }
    Map<Character, String[]> sorted = new HashMap<>();
    byFirst.forEach((c, list) -> {
      list.sort((a, b) -> Integer.compare(b.length(), a.length())); // longest first: leftmost-longest
      sorted.put(c, list.toArray(new String[0]));
    });
    this.tokensByFirstChar = sorted;
    this.maxBytes = maxBytes;
  }

  /** The ends of the leftmost-longest added-token matches in {@code text}, ascending. */
  int[] boundaries(String text) {
    int[] out = new int[8];
    int n = 0;
    int i = 0;
    int len = text.length();
    while (i < len) {
      String[] candidates = tokensByFirstChar.get(text.charAt(i));
      int end = -1;
      if (candidates != null) {
        for (String t : candidates) {
          if (text.startsWith(t, i)) {
            end = i + t.length();
            break;
          }
        }
      }
      if (end < 0) {
        i++;
        continue;
      }
      if (n == out.length) {
        out = Arrays.copyOf(out, n * 2);
      }
      out[n++] = end;
      i = end;
    }
    return Arrays.copyOf(out, n);
  }

  /** Encodes {@code text} without special tokens, reusing the longest cached prefix that ends at a boundary. */
  int[] encode(String text, Encoder encoder) {
    lookups.incrementAndGet();
    int[] bounds = boundaries(text);
    if (bounds.length == 0) {
      encodedChars.addAndGet(text.length());
      return encoder.encode(text);
    }
    long[] hashes = new long[bounds.length];
    long h = 0;
    int at = 0;
    for (int k = 0; k < bounds.length; k++) {
      for (; at < bounds[k]; at++) {
        h = h * PRIME + text.charAt(at);
      }
      hashes[k] = h ^ ((long) bounds[k] << 40);
    }
    Entry hit = null;
    int hitIndex = -1;
    synchronized (entries) {
      for (int k = bounds.length - 1; k >= 0; k--) {
        Entry e = entries.get(hashes[k]);
        if (e != null && e.chars == bounds[k] && text.regionMatches(0, e.group.text, 0, e.chars)) {
          hit = e;
          hitIndex = k;
          break;
        }
      }
    }
    int hitEnd = hit == null ? 0 : bounds[hitIndex];
    int headTokens = hit == null ? 0 : hit.tokens;
    if (hit != null) {
      hits.incrementAndGet();
      reusedTokens.addAndGet(headTokens);
    }
    encodedChars.addAndGet(text.length() - hitEnd);
    // encode piece by piece up to each stored boundary, so that each gets its id count
    int firstStored = Math.max(hitIndex + 1, bounds.length - STORED_BOUNDARIES);
    int storedCount = bounds.length - firstStored;
    int[][] pieces = new int[storedCount + 1][];
    int[] tokensAt = new int[storedCount];
    int from = hitEnd;
    int total = headTokens;
    for (int j = 0; j < storedCount; j++) {
      int to = bounds[firstStored + j];
      pieces[j] = to > from ? encoder.encode(text.substring(from, to)) : new int[0];
      total += pieces[j].length;
      tokensAt[j] = total;
      from = to;
    }
    pieces[storedCount] = from < text.length() ? encoder.encode(text.substring(from)) : new int[0];
    total += pieces[storedCount].length;
    int[] ids = new int[total];
    if (hit != null) {
      System.arraycopy(hit.group.ids, 0, ids, 0, headTokens);
    }
    int pos = headTokens;
    for (int[] piece : pieces) {
      System.arraycopy(piece, 0, ids, pos, piece.length);
      pos += piece.length;
    }
    if (storedCount > 0) {
      Group group = new Group(text, ids);
      if (group.bytes() + Entry.BYTES <= maxBytes) {
        synchronized (entries) {
          for (int j = 0; j < storedCount; j++) {
            int k = firstStored + j;
            put(hashes[k], new Entry(group, bounds[k], tokensAt[j]));
          }
          evict(group);
        }
      }
    }
    return storedCount > 0 ? ids.clone() : ids; // the cache keeps its own copy
  }

  /** Under the lock. */
  private void put(long key, Entry entry) {
    if (entry.group.refs++ == 0) {
      bytes += entry.group.bytes();
    }
    bytes += Entry.BYTES;
    Entry old = entries.put(key, entry);
    if (old != null) {
      release(old);
    }
  }

  private void release(Entry e) {
    bytes -= Entry.BYTES;
    if (--e.group.refs == 0) {
      bytes -= e.group.bytes();
    }
  }

  /** Evicts least recently used entries until the bound holds, sparing {@code keep}'s. Under the lock. */
  private void evict(Group keep) {
    Iterator<Entry> it = entries.values().iterator();
    while (bytes > maxBytes && it.hasNext()) {
      Entry e = it.next();
      if (e.group == keep) {
        continue;
      }
      it.remove();
      release(e);
    }
  }

  int size() {
    synchronized (entries) {
      return entries.size();
    }
  }

  long bytes() {
    synchronized (entries) {
      return bytes;
    }
  }
}
