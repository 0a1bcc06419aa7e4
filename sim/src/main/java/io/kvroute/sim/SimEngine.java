package io.kvroute.sim;

import io.kvroute.KvEvent;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A simulated vLLM v1 engine core: waiting and running queues, continuous batching under a per-step token budget
 * with chunked prefill, a paged prefix cache ({@link BlockPool}) and KV events; not thread-safe (one driver calls
 * it, either the discrete-event {@link Simulation} or the real-time loop of {@link SimServer}).
 *
 * <p>A driver alternates {@link #schedule()} (choose the batch, look up prefixes, allocate and register blocks,
 * as vLLM does before the forward pass) and {@link #complete(Step)} (advance the batch, sample tokens, finish
 * requests, publish the step's KV events), waiting {@link Step#nanos()} in between.
 */
final class SimEngine {
  private final SimEngineConfig config;
  private final int blockSize;
  private final BlockPool pool;
  private final EngineHasher hasher;
  private final Consumer<List<KvEvent>> eventSink;
  private final ArrayDeque<EngineRequest> waiting = new ArrayDeque<>();
  private final ArrayList<EngineRequest> running = new ArrayList<>();
  private final int[] scratchBlocks;
  private TimingModel timing;
  private long nextId;
  private boolean resetPending;

  // Counters, as vLLM's metrics.
  private long prefixQueries;
  private long prefixHits;
  private long preemptions;
  private long promptTokens;
  private long generationTokens;
  private long finishedRequests;

  SimEngine(SimEngineConfig config, Consumer<List<KvEvent>> eventSink) {
    this.config = Objects.requireNonNull(config, "config");
    this.eventSink = Objects.requireNonNull(eventSink, "eventSink");
    this.blockSize = config.blockSize();
    this.pool = new BlockPool(config.numBlocks());
    this.hasher = new EngineHasher(config.engineHashSeed());
    this.scratchBlocks = new int[config.numBlocks()];
    this.timing = config.timing();
  }

  /**
   * Times the steps scheduled from now on with {@code timing} (the hardware slowed down or sped up mid-run); a step
   * in progress keeps its duration.
   */
  void retime(TimingModel timing) {
    this.timing = Objects.requireNonNull(timing, "timing");
  }

  SimEngineConfig config() {
    return config;
  }

  /** Why a request of this shape would be rejected, or null if it is acceptable. */
  @Nullable String validate(int promptTokens, int maxTokens) {
    if (promptTokens <= 0) {
      return "The prompt must contain at least one token.";
    }
    if (maxTokens <= 0) {
      return "max_tokens must be at least 1, got " + maxTokens + ".";
    }
    if ((long) promptTokens + maxTokens > config.maxModelLen()) {
      return "This model's maximum context length is " + config.maxModelLen() + " tokens. However, you requested "
          + ((long) promptTokens + maxTokens) + " tokens (" + promptTokens + " in the messages, " + maxTokens
          + " in the completion). Please reduce the length of the messages or completion.";
    }
    return null;
  }

  /**
   * Queues a request.
   *
   * @throws IllegalArgumentException if {@link #validate} rejects it
   */
  EngineRequest submit(int[] prompt, int maxTokens, long outputSeed, EngineRequest.Observer observer) {
    String error = validate(prompt.length, maxTokens);
    if (error != null) {
      throw new IllegalArgumentException(error);
    }
    EngineRequest request = new EngineRequest(nextId++, prompt, maxTokens, outputSeed, blockSize, observer);
    waiting.addLast(request);
    return request;
  }

  /** Whether any request is waiting or running. */
  boolean hasWork() {
    return !waiting.isEmpty() || !running.isEmpty();
  }

  /**
   * Removes a request (the client went away), freeing its blocks.
   *
   * @return whether it was still waiting or running
   */
  boolean abort(EngineRequest request) {
    if (request.state == EngineRequest.State.WAITING) {
      waiting.remove(request);
    } else if (request.state == EngineRequest.State.RUNNING) {
      running.remove(request);
      freeBlocks(request);
    } else {
      return false;
    }
    request.state = EngineRequest.State.ABORTED;
    request.observer.onFinished(request);
    return true;
  }

  /**
   * Drops the whole prefix cache, as {@code POST /reset_prefix_cache}; the {@link KvEvent.AllBlocksCleared} event
   * goes out with the next step's batch, or at once if the engine is idle.
   *
   * @return false if blocks are in use (requests running), as in vLLM
   */
  boolean resetPrefixCache() {
    if (!pool.reset()) {
      return false;
    }
    resetPending = true;
    if (!hasWork()) {
      flushEvents();
    }
    return true;
  }

  /** Chooses the next batch; the returned step is empty when there is nothing to run. */
  Step schedule() {
    Step step = new Step();
    int budget = config.maxNumBatchedTokens();
    boolean preempted = false;
    for (int i = 0; i < running.size() && budget > 0; i++) {
      EngineRequest request = running.get(i);
      int n = Math.min(request.numTokens - request.numComputed, budget);
      if (n <= 0) {
        continue;
      }
      boolean scheduled = false;
      while (true) {
        if (allocateSlots(request, n, 0)) {
          scheduled = true;
          break;
        }
        // Not enough free blocks: preempt the lowest-priority running request (recompute mode), as vLLM does.
        EngineRequest victim = running.remove(running.size() - 1);
        preempt(victim);
        preempted = true;
        if (victim == request) {
          break;
        }
      }
      if (!scheduled) {
        break;
      }
      step.add(request, n);
      budget -= n;
    }

    if (!preempted) {
      while (!waiting.isEmpty() && budget > 0 && running.size() < config.maxNumSeqs()) {
        EngineRequest request = waiting.peekFirst();
        int hitBlocks = lookupPrefix(request);
        int computed = request.numComputed + hitBlocks * blockSize;
        int n = request.numTokens - computed;
        if (!config.chunkedPrefill() && n > budget) {
          break;
        }
        n = Math.min(n, budget);
        if (!allocateSlots(request, n, hitBlocks)) {
          break; // head-of-line: the cache cannot hold it yet
        }
        waiting.pollFirst();
        if (request.cachedPromptTokens < 0) {
          request.cachedPromptTokens = hitBlocks * blockSize;
        }
        prefixQueries += request.numTokens;
        prefixHits += (long) hitBlocks * blockSize;
        request.state = EngineRequest.State.RUNNING;
        running.add(request);
        step.add(request, n);
        budget -= n;
      }
    }

    for (int i = 0; i < step.size; i++) {
      EngineRequest request = step.requests[i];
      int n = step.tokens[i];
      if (n == 1 && request.numOutputs > 0) {
        step.decodeSequences++;
        step.decodeKvTokens += request.numTokens;
      } else {
        step.prefillTokens += n;
      }
    }
    step.nanos = timing.stepNanos(step.prefillTokens, step.decodeSequences, step.decodeKvTokens);
    return step;
  }

  /** Applies the results of a scheduled step and publishes its KV events. */
  void complete(Step step) {
    for (int i = 0; i < step.size; i++) {
      EngineRequest request = step.requests[i];
      if (request.state != EngineRequest.State.RUNNING) {
        continue; // aborted or preempted while the step ran
      }
      request.numComputed += step.tokens[i];
      if (request.numComputed < request.numTokens) {
        continue; // a prefill chunk
      }
      int token = sample(request);
      request.tokens[request.numTokens++] = token;
      request.numOutputs++;
      generationTokens++;
      if (request.numOutputs == 1) {
        promptTokens += request.numPromptTokens;
      }
      request.observer.onToken(request, token);
      if (request.numOutputs >= request.maxTokens) {
        running.remove(request);
        freeBlocks(request);
        request.state = EngineRequest.State.FINISHED;
        finishedRequests++;
        request.observer.onFinished(request);
      }
    }
    flushEvents();
  }

  private void flushEvents() {
    List<KvEvent> events = pool.takeEvents();
    resetPending = false;
    if (!events.isEmpty()) {
      eventSink.accept(events);
    }
  }

  /**
   * The number of leading full prompt blocks found in the cache, as vLLM's {@code get_computed_blocks}: at most
   * all but the last token can be a hit, so a fully cached prompt still computes its last block.
   */
  private int lookupPrefix(EngineRequest request) {
    if (request.numComputed > 0) {
      return 0;
    }
    int maxHitBlocks = (request.numTokens - 1) / blockSize;
    hashUpTo(request, maxHitBlocks);
    int hits = 0;
    while (hits < maxHitBlocks && pool.lookup(request.blockHashes[hits]) >= 0) {
      hits++;
    }
    return hits;
  }

  private void hashUpTo(EngineRequest request, int blocks) {
    for (int j = request.numHashed; j < blocks; j++) {
      request.blockHashes[j] = hasher.hash(j > 0, j > 0 ? request.blockHashes[j - 1] : 0, request.tokens,
          j * blockSize, blockSize);
    }
    request.numHashed = Math.max(request.numHashed, blocks);
  }

  /**
   * Pins {@code hitBlocks} cached blocks and allocates what {@code n} more tokens need, as vLLM's
   * {@code allocate_slots}; then registers every block that becomes full as cached and emits one stored event
   * for them.
   *
   * @return false, changing nothing, if the free queue cannot supply the blocks
   */
  private boolean allocateSlots(EngineRequest request, int n, int hitBlocks) {
    int computed = request.numComputed + hitBlocks * blockSize;
    int required = (computed + n + blockSize - 1) / blockSize;
    int toAllocate = required - request.numBlocks - hitBlocks;
    int evictableHits = 0;
    for (int j = 0; j < hitBlocks; j++) {
      int block = pool.lookup(request.blockHashes[j]);
      scratchBlocks[j] = block;
      if (pool.refCount(block) == 0) {
        evictableHits++;
      }
    }
    if (toAllocate > pool.freeBlocks() - evictableHits) {
      return false;
    }
    for (int j = 0; j < hitBlocks; j++) {
      pool.touch(scratchBlocks[j]);
      request.blocks[request.numBlocks++] = scratchBlocks[j];
    }
    if (hitBlocks > 0) {
      request.numComputed = computed;
      request.numCachedBlocks = hitBlocks;
    }
    if (toAllocate > 0) {
      pool.allocate(toAllocate, request.blocks, request.numBlocks);
      request.numBlocks += toAllocate;
    }
    int full = Math.min(computed + n, request.numTokens) / blockSize;
    if (full > request.numCachedBlocks) {
      hashUpTo(request, full);
      int first = request.numCachedBlocks;
      for (int j = first; j < full; j++) {
        pool.cache(request.blocks[j], request.blockHashes[j]);
      }
      Long parent = first > 0 ? request.blockHashes[first - 1] : null;
      pool.emit(KvEvent.BlockStored.of(Arrays.copyOfRange(request.blockHashes, first, full), parent,
          Arrays.copyOfRange(request.tokens, first * blockSize, full * blockSize), blockSize));
      request.numCachedBlocks = full;
    }
    return true;
  }

  private void preempt(EngineRequest victim) {
    freeBlocks(victim);
    victim.numComputed = 0;
    victim.state = EngineRequest.State.WAITING;
    waiting.addFirst(victim);
    preemptions++;
  }

  /** Frees a request's blocks tail first, so its own tail is evicted before its prefix. */
  private void freeBlocks(EngineRequest request) {
    pool.free(request.blocks, 0, request.numBlocks, true);
    request.numBlocks = 0;
    request.numCachedBlocks = 0;
  }

  private int sample(EngineRequest request) {
    long r = Mix.splitMix64(request.outputSeed + request.numOutputs * 0x9e3779b97f4a7c15L);
    int range = config.tokenizer().vocabularySize() - SimTokenizer.FIRST_WORD_ID;
    return SimTokenizer.FIRST_WORD_ID + (int) Long.remainderUnsigned(r, range);
  }

  // ---- metrics ----

  int numRunning() {
    return running.size();
  }

  int numWaiting() {
    return waiting.size();
  }

  double kvCacheUsage() {
    return pool.usage();
  }

  int cachedBlocks() {
    return pool.cachedBlocks();
  }

  int freeBlocks() {
    return pool.freeBlocks();
  }

  long prefixCacheQueries() {
    return prefixQueries;
  }

  long prefixCacheHits() {
    return prefixHits;
  }

  long preemptions() {
    return preemptions;
  }

  long promptTokens() {
    return promptTokens;
  }

  long generationTokens() {
    return generationTokens;
  }

  long finishedRequests() {
    return finishedRequests;
  }

  BlockPool pool() {
    return pool;
  }

  /** One batch: the requests scheduled and how many tokens each computes; confined to the engine's driver. */
  static final class Step {
    EngineRequest[] requests = new EngineRequest[8];
    int[] tokens = new int[8];
    int size;
    int prefillTokens;
    int decodeSequences;
    long decodeKvTokens;
    long nanos;

    void add(EngineRequest request, int n) {
      if (size == requests.length) {
        requests = Arrays.copyOf(requests, size * 2);
        tokens = Arrays.copyOf(tokens, size * 2);
      }
      requests[size] = request;
      tokens[size++] = n;
    }

    boolean isEmpty() {
      return size == 0;
    }

    /** The model time the step takes. */
    long nanos() {
      return nanos;
    }
  }
}
