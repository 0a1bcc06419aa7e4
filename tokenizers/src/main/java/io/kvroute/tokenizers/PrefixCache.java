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
 * <p>Entries are keyed by a 64-bit polynomial hash of the prefix and confirmed by comparing the text, so a hash
 * collision costs a miss, never a wrong answer. The cache holds at most {@code maxBytes} of prefix text and ids
 * (2 bytes a char, 4 an id), evicting the least recently used.
 */
final class PrefixCache {
  /** Encodes a piece of text without special tokens. */
  interface Encoder {
    int[] encode(String text);
  }

  private static final long PRIME = 0x100000001b3L;

  private final Map<Character, String[]> tokensByFirstChar;
  private final long maxBytes;
  private final LinkedHashMap<Long, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
  private long bytes;
  final AtomicLong lookups = new AtomicLong();
  final AtomicLong hits = new AtomicLong();
  final AtomicLong reusedTokens = new AtomicLong();
  final AtomicLong encodedChars = new AtomicLong();

  private record Entry(String prefix, int[] ids) {
    long bytes() {
      return 2L * prefix.length() + 4L * ids.length + 64;
    }
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
    // the last boundary before the end: a request that ends on a boundary has nothing after it to encode
    int last = bounds.length - 1;
    Entry hit = null;
    int hitIndex = -1;
    synchronized (entries) {
      for (int k = last; k >= 0; k--) {
        Entry e = entries.get(hashes[k]);
        if (e != null && e.prefix.length() == bounds[k] && text.startsWith(e.prefix)) {
          hit = e;
          hitIndex = k;
          break;
        }
      }
    }
    int hitEnd = hit == null ? 0 : bounds[hitIndex];
    int lastEnd = bounds[last];
    int[] head = hit == null ? new int[0] : hit.ids;
    if (hit != null) {
      hits.incrementAndGet();
      reusedTokens.addAndGet(head.length);
    }
    int[] middle = lastEnd > hitEnd ? encoder.encode(text.substring(hitEnd, lastEnd)) : new int[0];
    int[] tail = lastEnd < text.length() ? encoder.encode(text.substring(lastEnd)) : new int[0];
    encodedChars.addAndGet(text.length() - hitEnd);
    int[] prefixIds = head;
    if (middle.length > 0) {
      prefixIds = Arrays.copyOf(head, head.length + middle.length);
      System.arraycopy(middle, 0, prefixIds, head.length, middle.length);
      put(hashes[last], new Entry(text.substring(0, lastEnd), prefixIds));
    }
    int[] out = Arrays.copyOf(prefixIds, prefixIds.length + tail.length);
    System.arraycopy(tail, 0, out, prefixIds.length, tail.length);
    return out;
  }

  private void put(long key, Entry entry) {
    if (entry.bytes() > maxBytes) {
      return;
    }
    synchronized (entries) {
      Entry old = entries.put(key, entry);
      bytes += entry.bytes() - (old == null ? 0 : old.bytes());
      Iterator<Entry> it = entries.values().iterator();
      while (bytes > maxBytes && it.hasNext()) {
        Entry e = it.next();
        if (e == entry) {
          continue;
        }
        it.remove();
        bytes -= e.bytes();
      }
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
