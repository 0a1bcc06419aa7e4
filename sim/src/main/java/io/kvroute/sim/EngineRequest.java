package io.kvroute.sim;

import java.util.Arrays;

/** One request inside a {@link SimEngine}; confined to the engine's step loop, except for the fields noted. */
final class EngineRequest {
  enum State { WAITING, RUNNING, FINISHED, ABORTED }

  /** Callbacks from the engine's step loop; they must be fast and must not call back into the engine. */
  interface Observer {
    /** A token was generated; {@code request.numOutputs() == 1} marks the first token. */
    default void onToken(EngineRequest request, int token) {}

    /** The request finished or was aborted. */
    default void onFinished(EngineRequest request) {}
  }

  final long id;
  final int numPromptTokens;
  final int maxTokens;
  final long outputSeed;
  final Observer observer;
  final int[] tokens;
  int numTokens;
  int numOutputs;
  int numComputed;
  int[] blocks;
  int numBlocks;
  long[] blockHashes;
  int numHashed;
  /** Blocks registered in the cache (hit or stored), the parent of the next stored run. */
  int numCachedBlocks;
  /** Prompt tokens served from the prefix cache at first scheduling; -1 until scheduled. */
  int cachedPromptTokens = -1;
  State state = State.WAITING;

  EngineRequest(long id, int[] prompt, int maxTokens, long outputSeed, int blockSize, Observer observer) {
    this.id = id;
    this.numPromptTokens = prompt.length;
    this.maxTokens = maxTokens;
    this.outputSeed = outputSeed;
    this.observer = observer;
    this.tokens = Arrays.copyOf(prompt, prompt.length + maxTokens);
    this.numTokens = prompt.length;
    int maxBlocks = (tokens.length + blockSize - 1) / blockSize;
    this.blocks = new int[maxBlocks];
    this.blockHashes = new long[tokens.length / blockSize];
  }

  int numOutputs() {
    return numOutputs;
  }

  /** The generated tokens so far. */
  int[] outputTokens() {
    return Arrays.copyOfRange(tokens, numPromptTokens, numPromptTokens + numOutputs);
  }

  @Override
  public String toString() {
    return "EngineRequest{id=" + id + ", prompt=" + numPromptTokens + ", outputs=" + numOutputs + "/" + maxTokens
        + ", computed=" + numComputed + ", blocks=" + numBlocks + ", state=" + state + "}";
  }
}
