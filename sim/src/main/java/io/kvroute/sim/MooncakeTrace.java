package io.kvroute.sim;

import io.kvroute.internal.Checks;
import io.kvroute.openai.internal.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Mooncake-format request trace as a {@link Workload}; immutable and thread-safe.
 *
 * <p>Each line is {@code {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]}};
 * each hash id stands for one block of {@code blockTokens} tokens (512 in Mooncake's traces), the last possibly
 * partial, and equal ids mean equal prefixes. Every id expands into the same deterministic token ids wherever it
 * appears (a generator seeded by the id), so prefix sharing carries over to token-level routing. Replay it with
 * {@link Simulation.Builder#openLoop} using {@link #arrivalNanos}.
 */
public final class MooncakeTrace implements Workload {
  /** Mooncake's trace block size. */
  public static final int DEFAULT_BLOCK_TOKENS = 512;

  private final long[] arrivalNanos;
  private final int[] inputLength;
  private final int[] outputLength;
  private final long[][] hashIds;
  private final int blockTokens;
  private final int vocabularySize;

  private MooncakeTrace(List<long[]> ids, long[] arrivals, int[] inputs, int[] outputs, int blockTokens) {
    this.hashIds = ids.toArray(new long[0][]);
    this.arrivalNanos = arrivals;
    this.inputLength = inputs;
    this.outputLength = outputs;
    this.blockTokens = blockTokens;
    this.vocabularySize = SimTokenizer.DEFAULT_VOCABULARY_SIZE;
  }

  /**
   * Reads a trace with 512-token blocks.
   *
   * @param file a Mooncake trace: one JSON object per line with {@code timestamp}, {@code input_length},
   *     {@code output_length} and {@code hash_ids}
   * @return the trace's requests, in file order
   * @throws IOException if the file cannot be read
   * @throws IllegalArgumentException naming the line if a line is malformed
   */
  public static MooncakeTrace load(Path file) throws IOException {
    return load(file, DEFAULT_BLOCK_TOKENS, Integer.MAX_VALUE);
  }

  /**
   * Reads at most {@code maxRequests} requests of a trace whose hash ids stand for {@code blockTokens} tokens.
   *
   * @param file a Mooncake trace: one JSON object per line with {@code timestamp}, {@code input_length},
   *     {@code output_length} and {@code hash_ids}
   * @param blockTokens tokens each hash id stands for, positive (512 in Mooncake's published traces)
   * @param maxRequests the most requests to read, positive
   * @return the first {@code maxRequests} requests of the trace, in file order
   * @throws IOException if the file cannot be read
   * @throws IllegalArgumentException naming the line if a line is malformed, or if an argument is not positive
   */
  public static MooncakeTrace load(Path file, int blockTokens, int maxRequests) throws IOException {
    Objects.requireNonNull(file, "file");
    Checks.positive("blockTokens", blockTokens);
    Checks.positive("maxRequests", maxRequests);
    List<long[]> ids = new ArrayList<>();
    List<long[]> meta = new ArrayList<>();
    try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      int lineNumber = 0;
      long firstTimestamp = Long.MIN_VALUE;
      for (String line = reader.readLine(); line != null && ids.size() < maxRequests; line = reader.readLine()) {
        lineNumber++;
        if (line.isBlank()) {
          continue;
        }
        try {
          Map<?, ?> entry = (Map<?, ?>) Json.parse(line);
          long timestamp = number(entry, "timestamp");
          long input = number(entry, "input_length");
          long output = number(entry, "output_length");
          List<?> hashes = (List<?>) entry.get("hash_ids");
          if (input <= 0 || output <= 0 || hashes == null
              || hashes.size() != (input + blockTokens - 1) / blockTokens) {
            throw new IllegalArgumentException("need positive lengths and ceil(input_length/" + blockTokens
                + ") hash ids");
          }
          long[] h = new long[hashes.size()];
          for (int i = 0; i < h.length; i++) {
            h[i] = (Long) hashes.get(i);
          }
          if (firstTimestamp == Long.MIN_VALUE) {
            firstTimestamp = timestamp;
          }
          ids.add(h);
          meta.add(new long[] {(timestamp - firstTimestamp) * 1_000_000L, input, output});
        } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
          throw new IllegalArgumentException(file + " line " + lineNumber + ": " + e.getMessage(), e);
        }
      }
    }
    long[] arrivals = new long[meta.size()];
    int[] inputs = new int[meta.size()];
    int[] outputs = new int[meta.size()];
    for (int i = 0; i < arrivals.length; i++) {
      arrivals[i] = meta.get(i)[0];
      inputs[i] = Math.toIntExact(meta.get(i)[1]);
      outputs[i] = Math.toIntExact(meta.get(i)[2]);
    }
    return new MooncakeTrace(ids, arrivals, inputs, outputs, blockTokens);
  }

  private static long number(Map<?, ?> entry, String key) {
    Object value = entry.get(key);
    if (!(value instanceof Long l)) {
      throw new IllegalArgumentException(key + " must be an integer but was " + value);
    }
    return l;
  }

  /**
   * The number of requests.
   *
   * @return the request count, zero or more
   */
  public int size() {
    return hashIds.length;
  }

  /**
   * When request {@code index} arrives, in nanoseconds after the first one.
   *
   * @param index the request's position, from 0 to {@code size() - 1}
   * @return nanoseconds after the first request's arrival, zero or more
   */
  public long arrivalNanos(int index) {
    return arrivalNanos[index];
  }

  /**
   * Request {@code index}'s hash ids, one per {@link #blockTokens()} block (equal ids: equal prefixes).
   *
   * @param index the request's position, from 0 to {@code size() - 1}
   * @return a copy of the hash ids, in prompt order
   */
  public long[] hashIds(int index) {
    return hashIds[index].clone();
  }

  /**
   * Request {@code index}'s prompt length in tokens.
   *
   * @param index the request's position, from 0 to {@code size() - 1}
   * @return the prompt length in tokens, positive
   */
  public int inputLength(int index) {
    return inputLength[index];
  }

  /**
   * Tokens per hash id.
   *
   * @return tokens per hash id, positive
   */
  public int blockTokens() {
    return blockTokens;
  }

  /**
   * Whether every request starts with the same hash id (a shared system prompt: every request "hits").
   *
   * @return true if all requests have the same first hash id
   */
  public boolean everyRequestSharesTheFirstBlock() {
    for (long[] ids : hashIds) {
      if (ids[0] != hashIds[0][0]) {
        return false;
      }
    }
    return true;
  }

  /**
   * The largest prompt plus output length in the trace, to size engines.
   *
   * @return the largest {@code input_length + output_length}, in tokens
   */
  public int maxSequenceTokens() {
    int max = 0;
    for (int i = 0; i < inputLength.length; i++) {
      max = Math.max(max, inputLength[i] + outputLength[i]);
    }
    return max;
  }

  /**
   * Request {@code index}: its blocks' tokens, its output length, and its first hash id as the prefix group.
   *
   * @throws IndexOutOfBoundsException if {@code index} is not in {@code [0, size())}
   */
  @Override
  public SimRequest request(int index) {
    Objects.checkIndex(index, hashIds.length);
    long[] ids = hashIds[index];
    int[] tokens = new int[inputLength[index]];
    int range = vocabularySize - SimTokenizer.FIRST_WORD_ID;
    for (int b = 0; b < ids.length; b++) {
      int from = b * blockTokens;
      int to = Math.min(tokens.length, from + blockTokens);
      long state = Mix.splitMix64(ids[b] * 0x9e3779b97f4a7c15L + 0x632be59bd9b4e019L);
      for (int t = from; t < to; t++) {
        state = Mix.splitMix64(state);
        tokens[t] = SimTokenizer.FIRST_WORD_ID + (int) Long.remainderUnsigned(state, range);
      }
    }
    return new SimRequest(tokens, outputLength[index], (int) ids[0]);
  }

  @Override
  public String toString() {
    return "MooncakeTrace{requests=" + hashIds.length + ", blockTokens=" + blockTokens + "}";
  }
}
