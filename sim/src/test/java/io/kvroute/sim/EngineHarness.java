package io.kvroute.sim;

import io.kvroute.KvEvent;
import java.util.ArrayList;
import java.util.List;

/** Drives one {@link SimEngine} step by step in a test, recording its KV events and finished requests. */
final class EngineHarness {
  final SimEngine engine;
  final List<List<KvEvent>> batches = new ArrayList<>();
  final List<EngineRequest> finished = new ArrayList<>();
  final List<EngineRequest> firstTokens = new ArrayList<>();
  int steps;

  EngineHarness(SimEngineConfig config) {
    this.engine = new SimEngine(config, batches::add);
  }

  static SimEngineConfig.Builder smallConfig(int numBlocks) {
    return SimEngineConfig.newBuilder().numBlocks(numBlocks).timing(TimingModel.ZERO).engineHashSeed(7);
  }

  EngineRequest submit(int[] prompt, int maxTokens) {
    return engine.submit(prompt, maxTokens, prompt.length * 31L + maxTokens, new EngineRequest.Observer() {
      @Override
      public void onToken(EngineRequest request, int token) {
        if (request.numOutputs() == 1) {
          firstTokens.add(request);
        }
      }

      @Override
      public void onFinished(EngineRequest request) {
        finished.add(request);
      }
    });
  }

  /** Runs one step; returns it. */
  SimEngine.Step step() {
    SimEngine.Step step = engine.schedule();
    engine.complete(step);
    steps++;
    return step;
  }

  /** Steps until no request is left (bounded). */
  void drain() {
    for (int i = 0; i < 1_000_000 && engine.hasWork(); i++) {
      step();
    }
    if (engine.hasWork()) {
      throw new AssertionError("engine did not drain");
    }
  }

  List<KvEvent> allEvents() {
    List<KvEvent> all = new ArrayList<>();
    batches.forEach(all::addAll);
    return all;
  }

  List<KvEvent> takeEvents() {
    List<KvEvent> all = allEvents();
    batches.clear();
    return all;
  }

  static int[] tokens(int from, int count) {
    int[] t = new int[count];
    for (int i = 0; i < count; i++) {
      t[i] = from + i;
    }
    return t;
  }

  static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
