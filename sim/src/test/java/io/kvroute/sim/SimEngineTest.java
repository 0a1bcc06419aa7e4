package io.kvroute.sim;

import static io.kvroute.sim.EngineHarness.concat;
import static io.kvroute.sim.EngineHarness.smallConfig;
import static io.kvroute.sim.EngineHarness.tokens;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.BlockHasher;
import io.kvroute.KvEvent;
import io.kvroute.KvEvent.BlockRemoved;
import io.kvroute.KvEvent.BlockStored;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimEngineTest {

  private static List<BlockStored> stored(List<KvEvent> events) {
    List<BlockStored> out = new ArrayList<>();
    for (KvEvent e : events) {
      if (e instanceof BlockStored s) {
        out.add(s);
      }
    }
    return out;
  }

  private static List<Long> removed(List<KvEvent> events) {
    List<Long> out = new ArrayList<>();
    for (KvEvent e : events) {
      if (e instanceof BlockRemoved r) {
        assertEquals(1, r.blockHashes().length, "one removal per evicted block");
        out.add(r.blockHashes()[0]);
      }
    }
    return out;
  }

  @Test
  void storesOnlyFullBlocksAndChainsParentsAcrossRequests() {
    EngineHarness h = new EngineHarness(smallConfig(64).build());
    int[] prompt = tokens(100, 40);
    EngineRequest first = h.submit(prompt, 1);
    h.drain();
    List<BlockStored> firstStored = stored(h.takeEvents());
    assertEquals(1, firstStored.size(), "one stored event for the request's step");
    BlockStored s = firstStored.get(0);
    assertEquals(2, s.blockHashes().length, "40 tokens fill 2 blocks of 16; the partial block is not stored");
    assertNull(s.parentBlockHash());
    assertArrayEquals(Arrays.copyOf(prompt, 32), s.tokenIds());
    assertEquals(16, s.blockSize());
    assertEquals(0, first.cachedPromptTokens);

    EngineRequest second = h.submit(prompt, 30);
    h.drain();
    assertEquals(32, second.cachedPromptTokens, "both full prompt blocks hit");
    List<BlockStored> secondStored = stored(h.takeEvents());
    assertFalse(secondStored.isEmpty());
    assertEquals(s.blockHashes()[1], secondStored.get(0).parentBlockHash(), "continues after the hit blocks");
    assertArrayEquals(Arrays.copyOfRange(second.tokens, 32, 48), secondStored.get(0).tokenIds(),
        "the third block holds the prompt's last 8 tokens and the first 8 outputs");
    for (int i = 1; i < secondStored.size(); i++) {
      BlockStored prev = secondStored.get(i - 1);
      assertEquals(prev.blockHashes()[prev.blockHashes().length - 1], secondStored.get(i).parentBlockHash(),
          "each step's stored event chains to the previous one");
    }
  }

  @Test
  void fullyCachedPromptRecomputesItsLastBlockAndStoresADuplicate() {
    EngineHarness h = new EngineHarness(smallConfig(64).build());
    int[] prompt = tokens(5, 32);
    h.submit(prompt, 1);
    h.drain();
    long[] hashes = stored(h.takeEvents()).get(0).blockHashes();
    EngineRequest again = h.submit(prompt, 1);
    h.drain();
    assertEquals(16, again.cachedPromptTokens, "a fully cached prompt still computes its last token's block");
    BlockStored dup = stored(h.takeEvents()).get(0);
    assertArrayEquals(new long[] {hashes[1]}, dup.blockHashes(), "the recomputed block is stored again");
    assertEquals(hashes[0], dup.parentBlockHash());
  }

  @Test
  void evictsAFinishedRequestsTailBeforeItsPrefix() {
    EngineHarness h = new EngineHarness(smallConfig(10).build());
    int[] a = tokens(1_000, 64); // exactly 4 blocks
    h.submit(a, 1);
    h.drain();
    long[] aHashes = stored(h.takeEvents()).get(0).blockHashes();
    assertEquals(4, aHashes.length);

    h.submit(tokens(50_000, 128), 1); // 8 blocks: 6 never used, then A's tail
    h.drain();
    assertEquals(List.of(aHashes[3], aHashes[2]), removed(h.takeEvents()),
        "eviction takes A's last block first, then the one before");

    EngineRequest c = h.submit(concat(Arrays.copyOf(a, 32), tokens(90_000, 17)), 1);
    h.drain();
    assertEquals(32, c.cachedPromptTokens, "A's first two blocks survived");
  }

  @Test
  void leastRecentlyFreedRequestIsEvictedFirst() {
    EngineHarness h = new EngineHarness(smallConfig(8).build());
    h.submit(tokens(1_000, 64), 1); // A: 4 blocks
    h.drain();
    h.submit(tokens(2_000, 64), 1); // B: 4 blocks, fills the cache
    h.drain();
    List<BlockStored> ab = stored(h.takeEvents());
    h.submit(tokens(3_000, 64), 1); // C evicts A entirely, B untouched
    h.drain();
    List<Long> evicted = removed(h.takeEvents());
    long[] aHashes = ab.get(0).blockHashes();
    assertEquals(List.of(aHashes[3], aHashes[2], aHashes[1], aHashes[0]), evicted);
  }

  @Test
  void requestWaitsWhileTheCacheCannotHoldItAndPinnedBlocksAreNeverEvicted() {
    EngineHarness h = new EngineHarness(smallConfig(10).build());
    EngineRequest a = h.submit(tokens(1, 96), 20); // 6 prompt blocks, up to 8 with outputs
    EngineRequest b = h.submit(tokens(500, 96), 20);
    h.step();
    assertEquals(1, h.engine.numRunning());
    assertEquals(1, h.engine.numWaiting(), "B needs 6 blocks and only 4 are free");
    assertEquals(EngineRequest.State.WAITING, b.state);
    long[] aPrompt = stored(h.allEvents()).get(0).blockHashes();
    while (a.state != EngineRequest.State.FINISHED) {
      h.step();
      for (long removedHash : removed(h.allEvents())) {
        for (long pinned : aPrompt) {
          assertNotEquals(pinned, removedHash, "a running request's block was evicted");
        }
      }
    }
    h.drain();
    assertEquals(2, h.finished.size());
    assertEquals(20, b.numOutputs());
    assertEquals(10, h.engine.freeBlocks(), "every block is back in the free queue");
    assertEquals(0, h.engine.preemptions());
  }

  @Test
  void preemptsWhenRunningRequestsCannotGrowAndStillFinishesEverything() {
    EngineHarness h = new EngineHarness(smallConfig(12).build());
    List<EngineRequest> requests = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      requests.add(h.submit(tokens(10_000 * (i + 1), 48), 100)); // 3 blocks each, growing to 10
    }
    h.drain();
    assertTrue(h.engine.preemptions() > 0, "the cache cannot hold three growing requests");
    for (EngineRequest r : requests) {
      assertEquals(EngineRequest.State.FINISHED, r.state);
      assertEquals(100, r.numOutputs());
    }
    assertEquals(12, h.engine.freeBlocks());
  }

  @Test
  void resetClearsTheCacheOnlyWhenIdle() {
    EngineHarness h = new EngineHarness(smallConfig(64).build());
    int[] prompt = tokens(7, 48);
    h.submit(prompt, 3);
    h.step();
    assertFalse(h.engine.resetPrefixCache(), "blocks in use");
    h.drain();
    h.takeEvents();
    assertTrue(h.engine.resetPrefixCache());
    assertEquals(List.of(KvEvent.AllBlocksCleared.INSTANCE), h.takeEvents(), "published at once when idle");
    assertEquals(0, h.engine.cachedBlocks());
    EngineRequest again = h.submit(prompt, 1);
    h.drain();
    assertEquals(0, again.cachedPromptTokens);
  }

  @Test
  void countsPrefixCacheQueriesAndHitsInTokens() {
    EngineHarness h = new EngineHarness(smallConfig(64).build());
    int[] prompt = tokens(3, 50);
    h.submit(prompt, 1);
    h.drain();
    h.submit(prompt, 1);
    h.drain();
    assertEquals(100, h.engine.prefixCacheQueries());
    assertEquals(48, h.engine.prefixCacheHits());
    assertEquals(100, h.engine.promptTokens());
    assertEquals(2, h.engine.generationTokens());
    assertEquals(2, h.engine.finishedRequests());
  }

  @Test
  void engineHashDependsOnItsSeedAndIsNotTheRoutersHash() {
    int[] prompt = tokens(11, 64);
    long[] seed1 = firstStoredHashes(1, prompt);
    long[] seed1Again = firstStoredHashes(1, prompt);
    long[] seed2 = firstStoredHashes(2, prompt);
    assertArrayEquals(seed1, seed1Again);
    assertFalse(Arrays.equals(seed1, seed2));
    long[] router = BlockHasher.of(16).sequenceHashes(prompt);
    for (long h : seed1) {
      for (long r : router) {
        assertNotEquals(r, h);
      }
    }
    assertNotEquals(SimEngineConfig.DEFAULT.engineHashSeed(), 0L);
  }

  private static long[] firstStoredHashes(long seed, int[] prompt) {
    EngineHarness h = new EngineHarness(smallConfig(64).engineHashSeed(seed).build());
    h.submit(prompt, 1);
    h.drain();
    return stored(h.allEvents()).get(0).blockHashes();
  }

  @Test
  void rejectsRequestsLongerThanTheCache() {
    EngineHarness h = new EngineHarness(smallConfig(4).build());
    String message = h.engine.validate(60, 10);
    assertNotNull(message);
    assertTrue(message.contains("maximum context length is 64 tokens"), message);
    assertThrows(IllegalArgumentException.class, () -> h.submit(tokens(1, 60), 10));
    assertNotNull(h.engine.validate(0, 1));
    assertNotNull(h.engine.validate(10, 0));
    assertNull(h.engine.validate(54, 10));
  }

  @Test
  void chunkedPrefillSpreadsALongPromptOverSteps() {
    EngineHarness h = new EngineHarness(smallConfig(64).maxNumBatchedTokens(100).build());
    EngineRequest r = h.submit(tokens(1, 250), 2);
    SimEngine.Step first = h.step();
    assertEquals(100, first.prefillTokens);
    assertEquals(0, r.numOutputs());
    h.step();
    h.step();
    assertEquals(1, r.numOutputs(), "the first token comes with the last chunk");
    List<BlockStored> s = stored(h.allEvents());
    assertEquals(3, s.size());
    assertEquals(6, s.get(0).blockHashes().length, "100 tokens fill 6 blocks");
    assertEquals(s.get(0).blockHashes()[5], s.get(1).parentBlockHash());
  }

  @Test
  void abortFreesBlocks() {
    EngineHarness h = new EngineHarness(smallConfig(16).build());
    EngineRequest r = h.submit(tokens(1, 100), 50);
    h.step();
    assertTrue(h.engine.freeBlocks() < 16);
    assertTrue(h.engine.abort(r));
    assertFalse(h.engine.abort(r));
    assertEquals(16, h.engine.freeBlocks());
    assertFalse(h.engine.hasWork());
    assertEquals(List.of(r), h.finished);
  }
}
