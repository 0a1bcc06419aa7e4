package io.kvroute.sim;

import io.kvroute.openai.ChatMessage;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A deterministic stand-in for a model tokenizer; instances are immutable and thread-safe.
 *
 * <p>Text is split on whitespace and each word becomes one token: {@code id = FIRST_WORD_ID + hash(word) mod
 * (vocabularySize - FIRST_WORD_ID)}, with a fixed 64-bit hash, so the same text gives the same ids in every
 * process, and two texts share a token prefix exactly when they share a word prefix (up to hash collisions, which
 * need all words of a block to collide). Chat messages go through a fixed ChatML-like template:
 *
 * <pre>{@code
 * for each message:  <|im_start|> role:<role> <content words…> <|im_end|>
 * then:              <|im_start|> role:assistant
 * }</pre>
 *
 * <p>The simulator, the examples and any client that wants to predict the simulator's token ids use this class.
 */
public final class SimTokenizer {
  /** Qwen3's vocabulary size, the default. */
  public static final int DEFAULT_VOCABULARY_SIZE = 151_936;
  /** The token that opens a chat message. */
  public static final int IM_START = 1;
  /** The token that closes a chat message. */
  public static final int IM_END = 2;
  /** The end-of-sequence token (never produced by the simulator's sampler). */
  public static final int EOS = 3;
  /** The smallest id a word can get; ids below are special tokens. */
  public static final int FIRST_WORD_ID = 16;

  private static final SimTokenizer STANDARD = new SimTokenizer(DEFAULT_VOCABULARY_SIZE);

  private final int vocabularySize;

  private SimTokenizer(int vocabularySize) {
    this.vocabularySize = vocabularySize;
  }

  /** The tokenizer with {@link #DEFAULT_VOCABULARY_SIZE} ids, which the simulator uses by default. */
  public static SimTokenizer standard() {
    return STANDARD;
  }

  /**
   * A tokenizer with {@code vocabularySize} ids.
   *
   * @throws IllegalArgumentException if {@code vocabularySize} is at most {@link #FIRST_WORD_ID}
   */
  public static SimTokenizer of(int vocabularySize) {
    if (vocabularySize <= FIRST_WORD_ID) {
      throw new IllegalArgumentException(
          "vocabularySize must be greater than " + FIRST_WORD_ID + " but was " + vocabularySize);
    }
    return vocabularySize == DEFAULT_VOCABULARY_SIZE ? STANDARD : new SimTokenizer(vocabularySize);
  }

  /** The number of token ids. */
  public int vocabularySize() {
    return vocabularySize;
  }

  /** Encodes {@code text}, one token per whitespace-separated word. */
  public int[] encode(String text) {
    Objects.requireNonNull(text, "text");
    int[] out = new int[16];
    int n = 0;
    int length = text.length();
    int i = 0;
    while (i < length) {
      while (i < length && Character.isWhitespace(text.charAt(i))) {
        i++;
      }
      int start = i;
      while (i < length && !Character.isWhitespace(text.charAt(i))) {
        i++;
      }
      if (i > start) {
        if (n == out.length) {
          out = Arrays.copyOf(out, n * 2);
        }
        out[n++] = wordId(text, start, i);
      }
    }
    return Arrays.copyOf(out, n);
  }

  /** The number of tokens {@link #encode} would return for {@code text}. */
  public int count(String text) {
    return encode(text).length;
  }

  /**
   * Encodes a chat conversation through the fixed template, ending with the opening of the assistant's turn.
   *
   * @throws NullPointerException if a message, role or content is null
   */
  public int[] encodeChat(List<ChatMessage> messages) {
    Objects.requireNonNull(messages, "messages");
    int[][] parts = new int[messages.size()][];
    int total = 2;
    for (int m = 0; m < parts.length; m++) {
      ChatMessage message = Objects.requireNonNull(messages.get(m), "messages[" + m + "]");
      parts[m] = encode(message.content());
      total += parts[m].length + 3;
    }
    int[] out = new int[total];
    int n = 0;
    for (int m = 0; m < parts.length; m++) {
      out[n++] = IM_START;
      out[n++] = roleId(messages.get(m).role());
      System.arraycopy(parts[m], 0, out, n, parts[m].length);
      n += parts[m].length;
      out[n++] = IM_END;
    }
    out[n++] = IM_START;
    out[n] = roleId("assistant");
    return out;
  }

  /**
   * A printable word for token {@code id}, used by the simulator to render generated tokens. Words from this
   * method do not in general encode back to the same id.
   */
  public String word(int id) {
    return "t" + Integer.toString(id, 36);
  }

  /** The text of a generated token sequence: each token's {@link #word}, each preceded by a space. */
  public String decode(int[] ids, int offset, int length) {
    StringBuilder sb = new StringBuilder(length * 6);
    for (int i = offset; i < offset + length; i++) {
      sb.append(' ').append(word(ids[i]));
    }
    return sb.toString();
  }

  private int roleId(String role) {
    Objects.requireNonNull(role, "role");
    return wordId("role:" + role, 0, role.length() + 5);
  }

  private int wordId(CharSequence text, int start, int end) {
    // FNV-1a over UTF-16 code units, finished with a 64-bit avalanche so short words spread over the vocabulary.
    long h = 0xcbf29ce484222325L;
    for (int i = start; i < end; i++) {
      h ^= text.charAt(i);
      h *= 0x100000001b3L;
    }
    h = Mix.fmix64(h);
    int range = vocabularySize - FIRST_WORD_ID;
    return FIRST_WORD_ID + (int) Long.remainderUnsigned(h, range);
  }

  @Override
  public String toString() {
    return "SimTokenizer{vocabularySize=" + vocabularySize + "}";
  }
}
