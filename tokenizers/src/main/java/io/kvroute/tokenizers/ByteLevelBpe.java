package io.kvroute.tokenizers;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import it.unimi.dsi.fastutil.longs.Long2LongOpenHashMap;
import it.unimi.dsi.fastutil.objects.Object2IntOpenHashMap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A pure-Java encoder for the byte-level BPE {@code tokenizer.json} configuration of GPT-4-style models (Qwen2/3,
 * Llama 3), id for id what the Hugging Face {@code tokenizers} library computes; thread-safe (immutable tables and
 * a concurrent word cache).
 *
 * <p>It runs the library's pipeline for exactly this configuration, and {@link #create} refuses every other one
 * (the caller then uses the native library):
 *
 * <ol>
 *   <li>Added tokens: the text is split at the leftmost-longest match of any added token (none may be normalized,
 *       strip whitespace or match single words only); a match becomes its id.
 *   <li>Normalizer: none, or NFC.
 *   <li>Pre-tokenizer: {@code Sequence[Split(Regex, Isolated), ByteLevel(add_prefix_space=false, use_regex=false)]}
 *       with the regex of Qwen2/3 (digits one by one) or of Llama 3 (digits in runs of up to three), recognized by
 *       its exact text and run by a hand-written scanner ({@link #nextPiece}) that makes the same choices as the
 *       regex's ordered alternatives.
 *   <li>Model: BPE without dropout, subword prefix or suffix, byte fallback, with every byte's character in the
 *       vocabulary; {@code ignore_merges} honoured; merges applied lowest rank first, leftmost first among equal
 *       ranks, with the library's own queue discipline (a queued merge is skipped when the pair it was queued for
 *       no longer yields its token).
 *   <li>Post-processor: none, ByteLevel (adds nothing), TemplateProcessing for a single sequence (special tokens
 *       around {@code $A}), or a Sequence of those.
 * </ol>
 *
 * <p>A bounded cache maps a pre-tokenized word to its ids, as the library's BPE cache does.
 */
final class ByteLevelBpe implements TextEncoder {
  /** The Split regex of Qwen2/Qwen3 and Llama 3 with {@value #DIGITS} standing for the digit alternative. */
  private static final String PATTERN_TEMPLATE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
      + "DIGITS| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  private static final String DIGITS = "DIGITS";
  /** Words longer than this (in chars) are not cached (the library's own cache bound is 256). */
  static final int MAX_CACHED_WORD = 256;
  /** Entries of the word cache before it is cleared. */
  static final int WORD_CACHE_ENTRIES = 1 << 16;

  private static final int L = 1; // \p{L}
  private static final int N = 2; // \p{N}
  private static final int S = 4; // \s
  private static final int CRLF = 8; // \r or \n (also S)
  private static final byte[] ASCII_CLASS = new byte[128];

  static {
    for (int c = 0; c < 128; c++) {
      ASCII_CLASS[c] = (byte) classOf(c);
    }
  }

  private final int maxDigits;
  private final boolean nfc;
  private final boolean ignoreMerges;
  private final Object2IntOpenHashMap<String> vocab;
  private final int[] byteIds = new int[256];
  /** (left id &lt;&lt; 32 | right id) to (rank &lt;&lt; 32 | merged id). */
  private final Long2LongOpenHashMap merges;
  private final AddedTokenMatcher added;
  private final int[] prefix;
  private final int[] suffix;
  private final ConcurrentHashMap<String, int[]> cache = new ConcurrentHashMap<>();
  private final AtomicInteger cacheSize = new AtomicInteger();
  private final Fallback fallback;
  private volatile boolean closed;

  /**
   * Encodes a text holding a code point unassigned in Unicode 13.0 (see {@link UnicodeClasses}), or refuses it.
   */
  interface Fallback {
    int[] encode(String text, boolean addSpecialTokens, int codePoint);

    /** Frees what the fallback holds. */
    default void close() {}
  }

  /** The fallback that refuses: for {@link HfTokenizer.Engine#JAVA}. */
  static final Fallback REFUSE = (text, special, cp) -> {
    throw new UnsupportedOperationException(String.format("the text holds U+%04X, which is not assigned in "
        + "Unicode 13.0, the version of the pure-Java encoder's tables", cp));
  };

  private ByteLevelBpe(int maxDigits, boolean nfc, boolean ignoreMerges, Object2IntOpenHashMap<String> vocab,
      Long2LongOpenHashMap merges, AddedTokenMatcher added, int[] prefix, int[] suffix, Fallback fallback) {
    this.fallback = fallback;
    this.maxDigits = maxDigits;
    this.nfc = nfc;
    this.ignoreMerges = ignoreMerges;
    this.vocab = vocab;
    this.merges = merges;
    this.added = added;
    this.prefix = prefix;
    this.suffix = suffix;
  }

  /** What {@link #create} returns: the encoder, or why this configuration is not supported. */
  record Result(@Nullable ByteLevelBpe encoder, @Nullable String unsupported) {}

  /**
   * Builds the encoder if the {@code tokenizer.json} is a configuration it reproduces exactly.
   *
   * @param json the text of {@code tokenizer.json}
   * @param addedTokens its {@code added_tokens}
   * @param fallback what encodes a text holding a code point newer than the encoder's Unicode tables
   * @return the encoder, or the reason (naming the component) why it is not supported
   * @throws IOException if the JSON does not parse
   */
  static Result create(String json, List<TokenizerFiles.AddedToken> addedTokens, Fallback fallback)
      throws IOException {
    JsonNode normalizer = null;
    JsonNode preTokenizer = null;
    JsonNode postProcessor = null;
    JsonNode truncation = null;
    JsonNode padding = null;
    Model model = null;
    try (JsonParser p = new JsonFactory().setCodec(TokenizerFiles.JSON).createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return unsupported("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        p.nextToken();
        switch (field) {
          case "normalizer" -> normalizer = p.readValueAsTree();
          case "pre_tokenizer" -> preTokenizer = p.readValueAsTree();
          case "post_processor" -> postProcessor = p.readValueAsTree();
          case "truncation" -> truncation = p.readValueAsTree();
          case "padding" -> padding = p.readValueAsTree();
          case "model" -> model = readModel(p);
          default -> p.skipChildren();
        }
      }
    }
    if (model == null || model.unsupported != null) {
      return unsupported(model == null ? "no model" : model.unsupported);
    }
    if (!isNull(truncation) || !isNull(padding)) {
      return unsupported("truncation or padding is configured");
    }
    boolean nfc;
    if (isNull(normalizer)) {
      nfc = false;
    } else if ("NFC".equals(normalizer.path("type").asText())) {
      nfc = true;
    } else {
      return unsupported("the normalizer " + normalizer.path("type").asText() + " is not NFC");
    }
    int maxDigits = splitDigits(preTokenizer);
    if (maxDigits < 0) {
      return unsupported("the pre-tokenizer is not Split(the Qwen2/Llama 3 regex) + ByteLevel(no regex)");
    }
    for (TokenizerFiles.AddedToken t : addedTokens) {
      if (t.normalized() || t.lstrip() || t.rstrip() || t.singleWord() || t.content().isEmpty() || t.id() < 0) {
        return unsupported("the added token " + t.content() + " is normalized, strips or matches single words");
      }
    }
    List<Integer> prefix = new ArrayList<>();
    List<Integer> suffix = new ArrayList<>();
    if (!postProcessor(postProcessor, prefix, suffix)) {
      return unsupported("the post-processor is not ByteLevel or a single-sequence TemplateProcessing");
    }
    // the byte-level alphabet: every byte's character must be a token
    ByteLevelBpe bpe = new ByteLevelBpe(maxDigits, nfc, model.ignoreMerges, model.vocab, model.merges,
        new AddedTokenMatcher(addedTokens), toArray(prefix), toArray(suffix), fallback);
    for (int b = 0; b < 256; b++) {
      String ch = String.valueOf(BYTE_CHARS[b]);
      if (!model.vocab.containsKey(ch)) {
        return unsupported("the vocabulary lacks the byte-level character of byte " + b);
      }
      bpe.byteIds[b] = model.vocab.getInt(ch);
    }
    return new Result(bpe, null);
  }

  private static Result unsupported(String why) {
    return new Result(null, why);
  }

  private static boolean isNull(@Nullable JsonNode n) {
    return n == null || n.isNull();
  }

  private static int[] toArray(List<Integer> list) {
    return list.stream().mapToInt(Integer::intValue).toArray();
  }

  /** The maximum digit run of the recognized Split regex (1 or 3), or -1. */
  private static int splitDigits(@Nullable JsonNode pre) {
    if (pre == null || !"Sequence".equals(pre.path("type").asText()) || pre.path("pretokenizers").size() != 2) {
      return -1;
    }
    JsonNode split = pre.path("pretokenizers").get(0);
    JsonNode byteLevel = pre.path("pretokenizers").get(1);
    if (!"Split".equals(split.path("type").asText()) || !"Isolated".equals(split.path("behavior").asText())
        || split.path("invert").asBoolean(false) || !split.path("pattern").path("Regex").isTextual()) {
      return -1;
    }
    if (!"ByteLevel".equals(byteLevel.path("type").asText()) || byteLevel.path("add_prefix_space").asBoolean(true)
        || byteLevel.path("use_regex").asBoolean(true)) {
      return -1;
    }
    String regex = split.path("pattern").path("Regex").asText();
    if (regex.equals(PATTERN_TEMPLATE.replace(DIGITS, "\\p{N}"))) {
      return 1;
    }
    if (regex.equals(PATTERN_TEMPLATE.replace(DIGITS, "\\p{N}{1,3}"))) {
      return 3;
    }
    return -1;
  }

  /** Collects the special tokens a single sequence gets, or returns false for another post-processor. */
  private static boolean postProcessor(@Nullable JsonNode pp, List<Integer> prefix, List<Integer> suffix) {
    if (isNull(pp)) {
      return true;
    }
    switch (pp.path("type").asText()) {
      case "ByteLevel" -> {
        return true;
      }
      case "Sequence" -> {
        for (JsonNode p : pp.path("processors")) {
          if (!postProcessor(p, prefix, suffix)) {
            return false;
          }
        }
        return true;
      }
      case "TemplateProcessing" -> {
        if (!prefix.isEmpty() || !suffix.isEmpty()) {
          return false;
        }
        boolean seenA = false;
        for (JsonNode piece : pp.path("single")) {
          if (piece.has("Sequence")) {
            if (seenA || !"A".equals(piece.path("Sequence").path("id").asText())) {
              return false;
            }
            seenA = true;
          } else if (piece.has("SpecialToken")) {
            JsonNode ids = pp.path("special_tokens").path(piece.path("SpecialToken").path("id").asText())
                .path("ids");
            if (!ids.isArray() || ids.isEmpty()) {
              return false;
            }
            for (JsonNode id : ids) {
              (seenA ? suffix : prefix).add(id.asInt());
            }
          } else {
            return false;
          }
        }
        return seenA;
      }
      default -> {
        return false;
      }
    }
  }

  /** The BPE model of a tokenizer.json, or why it is not supported. */
  private static final class Model {
    final Object2IntOpenHashMap<String> vocab = new Object2IntOpenHashMap<>();
    final Long2LongOpenHashMap merges = new Long2LongOpenHashMap();
    boolean ignoreMerges;
    @Nullable String unsupported;
    final List<String[]> mergePairs = new ArrayList<>();
  }

  private static Model readModel(JsonParser p) throws IOException {
    Model m = new Model();
    m.vocab.defaultReturnValue(-1);
    m.merges.defaultReturnValue(-1);
    if (p.currentToken() != JsonToken.START_OBJECT) {
      p.skipChildren();
      m.unsupported = "the model is not an object";
      return m;
    }
    String type = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken value = p.nextToken();
      switch (field) {
        case "type" -> type = p.getValueAsString();
        case "dropout" -> {
          if (value != JsonToken.VALUE_NULL) {
            m.unsupported = "BPE dropout is set";
          }
        }
        case "continuing_subword_prefix", "end_of_word_suffix" -> {
          if (value != JsonToken.VALUE_NULL && !p.getValueAsString("").isEmpty()) {
            m.unsupported = "the BPE model has a " + field;
          }
        }
        case "byte_fallback" -> {
          if (value == JsonToken.VALUE_TRUE) {
            m.unsupported = "the BPE model uses byte_fallback";
          }
        }
        case "ignore_merges" -> m.ignoreMerges = value == JsonToken.VALUE_TRUE;
        case "vocab" -> {
          if (value != JsonToken.START_OBJECT) {
            p.skipChildren();
            m.unsupported = "the vocab is not an object";
          } else {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String token = p.currentName();
              p.nextToken();
              m.vocab.put(token, p.getIntValue());
            }
          }
        }
        case "merges" -> {
          if (value != JsonToken.START_ARRAY) {
            p.skipChildren();
            m.unsupported = "the merges are not an array";
          } else {
            while (p.nextToken() != JsonToken.END_ARRAY) {
              if (p.currentToken() == JsonToken.VALUE_STRING) {
                String s = p.getText();
                int space = s.indexOf(' ');
                if (space < 0 || s.indexOf(' ', space + 1) >= 0) {
                  m.unsupported = "the merge '" + s + "' is not two tokens separated by a space";
                  continue;
                }
                m.mergePairs.add(new String[] {s.substring(0, space), s.substring(space + 1)});
              } else if (p.currentToken() == JsonToken.START_ARRAY) {
                List<String> pair = new ArrayList<>(2);
                while (p.nextToken() != JsonToken.END_ARRAY) {
                  pair.add(p.getText());
                }
                if (pair.size() != 2) {
                  m.unsupported = "a merge is not a pair";
                  continue;
                }
                m.mergePairs.add(pair.toArray(new String[0]));
              } else {
                p.skipChildren();
                m.unsupported = "a merge is neither a string nor a pair";
              }
            }
          }
        }
        default -> p.skipChildren(); // unk_token, fuse_unk: never consulted when every byte is a token
      }
    }
    if (!"BPE".equals(type)) {
      m.unsupported = "the model is " + type + ", not BPE";
    }
    if (m.unsupported == null) {
      for (int rank = 0; rank < m.mergePairs.size(); rank++) {
        String[] pair = m.mergePairs.get(rank);
        int left = m.vocab.getInt(pair[0]);
        int right = m.vocab.getInt(pair[1]);
        int merged = m.vocab.getInt(pair[0] + pair[1]);
        if (left < 0 || right < 0 || merged < 0) {
          m.unsupported = "the merge '" + pair[0] + " " + pair[1] + "' names a token not in the vocab";
          break;
        }
        long key = (long) left << 32 | (right & 0xffffffffL);
        // the library collects the merges into a hash map in file order: a pair listed again takes its last rank
        m.merges.put(key, (long) rank << 32 | merged);
      }
    }
    m.mergePairs.clear();
    return m;
  }

  // ---- encoding ----

  /**
   * Encodes {@code text} (valid UTF-16), with the post-processor's special tokens when {@code addSpecialTokens}.
   */
  @Override
  public int[] encode(String text, boolean addSpecialTokens) {
    if (closed) {
      throw new IllegalStateException("the tokenizer is closed");
    }
    IntBuffer out = new IntBuffer(Math.max(16, text.length() / 3));
    if (addSpecialTokens) {
      out.addAll(prefix);
    }
    int unassigned = firstUnassigned(text);
    if (unassigned >= 0) {
      return fallback.encode(text, addSpecialTokens, unassigned);
    }
    Scratch scratch = new Scratch();
    int from = 0;
    int len = text.length();
    while (from < len) {
      long match = added.find(text, from);
      int start = match < 0 ? len : (int) (match >>> 32);
      if (start > from) {
        encodeSegment(text.substring(from, start), out, scratch);
      }
      if (match < 0) {
        break;
      }
      int token = (int) match;
      out.add(added.id(token));
      from = start + added.length(token);
    }
    if (addSpecialTokens) {
      out.addAll(suffix);
    }
    return out.toArray();
  }

  /** The first code point unassigned in Unicode 13.0, or -1. */
  private static int firstUnassigned(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c >= 0x80) {
        int cp = text.codePointAt(i);
        if (UnicodeClasses.of(cp) == UnicodeClasses.UNASSIGNED) {
          return cp;
        }
        if (cp > 0xffff) {
          i++;
        }
      }
    }
    return -1;
  }

  private void encodeSegment(String segment, IntBuffer out, Scratch scratch) {
    String s = nfc && !isAsciiOrLatin(segment) ? Normalizer.normalize(segment, Normalizer.Form.NFC) : segment;
    int len = s.length();
    int i = 0;
    while (i < len) {
      int end = nextPiece(s, i, maxDigits);
      encodeWord(s, i, end, out, scratch);
      i = end;
    }
  }

  /** Below U+0300 no character composes with a neighbour, so such text is already NFC. */
  private static boolean isAsciiOrLatin(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) >= 0x300) {
        return false;
      }
    }
    return true;
  }

  private void encodeWord(String s, int start, int end, IntBuffer out, Scratch scratch) {
    boolean cacheable = end - start <= MAX_CACHED_WORD;
    String word = null;
    if (cacheable) {
      word = s.substring(start, end);
      int[] hit = cache.get(word);
      if (hit != null) {
        out.addAll(hit);
        return;
      }
    }
    byte[] bytes = (word != null ? word : s.substring(start, end)).getBytes(StandardCharsets.UTF_8);
    int[] ids;
    int whole = ignoreMerges ? vocab.getInt(byteLevel(bytes)) : -1;
    if (whole >= 0) {
      ids = new int[] {whole};
    } else {
      ids = mergeAll(bytes, scratch);
    }
    out.addAll(ids);
    if (cacheable) {
      if (cacheSize.incrementAndGet() > WORD_CACHE_ENTRIES) {
        cache.clear();
        cacheSize.set(0);
      }
      cache.put(word, ids);
    }
  }

  private static String byteLevel(byte[] bytes) {
    char[] chars = new char[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      chars[i] = BYTE_CHARS[bytes[i] & 0xff];
    }
    return new String(chars);
  }

  /** The library's Word::merge_all: a min-queue of (rank, position), stale entries skipped. */
  private int[] mergeAll(byte[] bytes, Scratch w) {
    int n = bytes.length;
    w.ensure(n);
    int[] sym = w.sym;
    int[] prev = w.prev;
    int[] next = w.next;
    boolean[] gone = w.gone;
    for (int i = 0; i < n; i++) {
      sym[i] = byteIds[bytes[i] & 0xff];
      prev[i] = i - 1;
      next[i] = i + 1 < n ? i + 1 : -1;
      gone[i] = false;
    }
    Heap heap = w.heap;
    heap.clear();
    for (int i = 0; i + 1 < n; i++) {
      long m = merges.get((long) sym[i] << 32 | (sym[i + 1] & 0xffffffffL));
      if (m >= 0) {
        heap.push(m >>> 32, i, (int) m);
      }
    }
    int alive = n;
    while (!heap.isEmpty()) {
      int pos = heap.topPos();
      int newId = heap.topId();
      heap.pop();
      if (gone[pos] || next[pos] < 0) {
        continue;
      }
      int right = next[pos];
      long current = merges.get((long) sym[pos] << 32 | (sym[right] & 0xffffffffL));
      if (current < 0 || (int) current != newId) {
        continue; // an expired entry
      }
      sym[pos] = newId;
      gone[right] = true;
      alive--;
      int after = next[right];
      next[pos] = after;
      if (after >= 0) {
        prev[after] = pos;
      }
      if (prev[pos] >= 0) {
        int p = prev[pos];
        long m = merges.get((long) sym[p] << 32 | (sym[pos] & 0xffffffffL));
        if (m >= 0) {
          heap.push(m >>> 32, p, (int) m);
        }
      }
      if (after >= 0) {
        long m = merges.get((long) sym[pos] << 32 | (sym[after] & 0xffffffffL));
        if (m >= 0) {
          heap.push(m >>> 32, pos, (int) m);
        }
      }
    }
    int[] ids = new int[alive];
    int k = 0;
    for (int i = 0; i >= 0; i = next[i]) {
      ids[k++] = sym[i];
    }
    return ids;
  }

  @Override
  public String kind() {
    return "java";
  }

  /** Later encodings throw; the word cache is dropped. */
  @Override
  public void close() {
    closed = true;
    cache.clear();
    fallback.close();
  }

  // ---- the pre-tokenizer ----

  private static int classOf(int cp) {
    if (cp == '\r' || cp == '\n') {
      return S | CRLF;
    }
    if (isWhiteSpace(cp)) {
      return S;
    }
    return switch (UnicodeClasses.of(cp)) {
      case UnicodeClasses.LETTER -> L;
      case UnicodeClasses.NUMBER -> N;
      default -> 0;
    };
  }

  /** Unicode's White_Space property, what {@code \s} matches in the library's regex engine. */
  static boolean isWhiteSpace(int cp) {
    return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680
        || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f
        || cp == 0x3000;
  }

  private static int cls(String s, int i) {
    char c = s.charAt(i);
    return c < 128 ? ASCII_CLASS[c] : classOf(s.codePointAt(i));
  }

  private static int width(String s, int i) {
    return Character.isHighSurrogate(s.charAt(i)) && i + 1 < s.length() ? 2 : 1;
  }

  /** The end of the letter run at {@code i}. */
  private static int letters(String s, int i) {
    int len = s.length();
    while (i < len && cls(s, i) == L) {
      i += width(s, i);
    }
    return i;
  }

  /**
   * The end of the regex match at {@code i}: the first alternative of
   * {@code (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|
   * \s*[\r\n]+|\s+(?!\S)|\s+} that matches there, with the regex's greedy choices. One of them always matches
   * (every character is a letter, a number, whitespace or none of these), so the pieces tile the text.
   */
  static int nextPiece(String s, int i, int maxDigits) {
    int len = s.length();
    char c = s.charAt(i);
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (c == '\'' && i + 1 < len) {
      int k = contraction(s, i + 1);
      if (k > 0) {
        return k;
      }
    }
    int cc = cls(s, i);
    int w = width(s, i);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (cc == L) {
      return letters(s, i + w);
    }
    if ((cc & (CRLF | N)) == 0 && i + w < len && cls(s, i + w) == L) {
      return letters(s, i + w);
    }
    // \p{N}{1,maxDigits}
    if (cc == N) {
      int end = i + w;
      for (int d = 1; d < maxDigits && end < len && cls(s, end) == N; d++) {
        end += width(s, end);
      }
      return end;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    int other = cc == 0 ? i : c == ' ' && i + 1 < len && cls(s, i + 1) == 0 ? i + 1 : -1;
    if (other >= 0) {
      int end = other;
      while (end < len && cls(s, end) == 0) {
        end += width(s, end);
      }
      while (end < len && (s.charAt(end) == '\r' || s.charAt(end) == '\n')) {
        end++;
      }
      return end;
    }
    // the rest: cc is whitespace; every whitespace character is one char
    int end = i;
    int lastCrLf = -1;
    while (end < len && (cls(s, end) & S) != 0) {
      if ((cls(s, end) & CRLF) != 0) {
        lastCrLf = end;
      }
      end++;
    }
    if (lastCrLf >= 0) {
      return lastCrLf + 1; // \s*[\r\n]+
    }
    if (end == len || end - i == 1) {
      return end; // \s+(?!\S) at the end, or \s+
    }
    return end - 1; // \s+(?!\S): leave the last whitespace to the next word
  }

  /** After an apostrophe at {@code at - 1}: the end of {@code s t re ve m ll d} (any case), or -1. */
  private static int contraction(String s, int at) {
    char a = fold(s.charAt(at));
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
      return at + 1;
    }
    if (at + 1 < s.length()) {
      char b = fold(s.charAt(at + 1));
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        return at + 2;
      }
    }
    return -1;
  }

  /** Simple case folding for the letters of the contractions: ASCII upper case, and U+017F (long s) to s. */
  private static char fold(char c) {
    if (c >= 'A' && c <= 'Z') {
      return (char) (c + 32);
    }
    return c == '\u017f' ? 's' : c;
  }

  // ---- helpers ----

  /** GPT-2's byte-to-character map of the ByteLevel pre-tokenizer. */
  static final char[] BYTE_CHARS = new char[256];

  static {
    int n = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      BYTE_CHARS[b] = printable ? (char) b : (char) (256 + n++);
    }
  }

  /** Leftmost-longest matching of the added tokens. */
  static final class AddedTokenMatcher {
    private final String[] contents;
    private final int[] ids;
    /** Token indices by first char, longest first. */
    private final Map<Character, int[]> byFirst;
    private final boolean[] asciiFirst = new boolean[128];

    AddedTokenMatcher(List<TokenizerFiles.AddedToken> tokens) {
      Map<String, Integer> unique = new HashMap<>();
      for (TokenizerFiles.AddedToken t : tokens) {
        unique.putIfAbsent(t.content(), t.id()); // the library keeps the first id of a content
      }
      contents = unique.keySet().toArray(new String[0]);
      Arrays.sort(contents, (a, b) -> Integer.compare(b.length(), a.length()));
      ids = new int[contents.length];
      Map<Character, List<Integer>> first = new HashMap<>();
      for (int i = 0; i < contents.length; i++) {
        ids[i] = unique.get(contents[i]);
        first.computeIfAbsent(contents[i].charAt(0), c -> new ArrayList<>()).add(i);
        if (contents[i].charAt(0) < 128) {
          asciiFirst[contents[i].charAt(0)] = true;
        }
      }
      byFirst = new HashMap<>();
      first.forEach((c, list) -> byFirst.put(c, list.stream().mapToInt(Integer::intValue).toArray()));
    }

    /** The leftmost-longest match at or after {@code from} as (start &lt;&lt; 32 | token index), or -1. */
    long find(String text, int from) {
      for (int i = from; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c < 128 && !asciiFirst[c]) {
          continue;
        }
        int[] candidates = byFirst.get(c);
        if (candidates != null) {
          for (int t : candidates) {
            if (text.startsWith(contents[t], i)) {
              return (long) i << 32 | t;
            }
          }
        }
      }
      return -1;
    }

    int id(int token) {
      return ids[token];
    }

    int length(int token) {
      return contents[token].length();
    }
  }

  /** Per-encoding scratch arrays for merging. */
  private static final class Scratch {
    int[] sym = new int[64];
    int[] prev = new int[64];
    int[] next = new int[64];
    boolean[] gone = new boolean[64];
    final Heap heap = new Heap();

    void ensure(int n) {
      if (sym.length < n) {
        int size = Math.max(n, sym.length * 2);
        sym = new int[size];
        prev = new int[size];
        next = new int[size];
        gone = new boolean[size];
      }
    }
  }

  /** A binary min-heap of (rank, position) with the merged id alongside. */
  private static final class Heap {
    private long[] keys = new long[64];
    private int[] values = new int[64];
    private int size;

    void clear() {
      size = 0;
    }

    boolean isEmpty() {
      return size == 0;
    }

    void push(long rank, int pos, int id) {
      if (size == keys.length) {
        keys = Arrays.copyOf(keys, size * 2);
        values = Arrays.copyOf(values, size * 2);
      }
      long key = rank << 32 | pos;
      int i = size++;
      while (i > 0) {
        int parent = (i - 1) >>> 1;
        if (keys[parent] <= key) {
          break;
        }
        keys[i] = keys[parent];
        values[i] = values[parent];
        i = parent;
      }
      keys[i] = key;
      values[i] = id;
    }

    int topPos() {
      return (int) keys[0];
    }

    int topId() {
      return values[0];
    }

    void pop() {
      size--;
      if (size == 0) {
        return;
      }
      long key = keys[size];
      int value = values[size];
      int i = 0;
      while (true) {
        int child = 2 * i + 1;
        if (child >= size) {
          break;
        }
        if (child + 1 < size && keys[child + 1] < keys[child]) {
          child++;
        }
        if (keys[child] >= key) {
          break;
        }
        keys[i] = keys[child];
        values[i] = values[child];
        i = child;
      }
      keys[i] = key;
      values[i] = value;
    }
  }

  /** A growable int array. */
  private static final class IntBuffer {
    private int[] a;
    private int n;

    IntBuffer(int capacity) {
      a = new int[capacity];
    }

    void add(int v) {
      if (n == a.length) {
        a = Arrays.copyOf(a, n * 2);
      }
      a[n++] = v;
    }

    void addAll(int[] v) {
      if (n + v.length > a.length) {
        a = Arrays.copyOf(a, Math.max(n + v.length, a.length * 2));
      }
      System.arraycopy(v, 0, a, n, v.length);
      n += v.length;
    }

    int[] toArray() {
      return n == a.length ? a : Arrays.copyOf(a, n);
    }
  }
}
