package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link KvIndexer#applyAll} from several threads while others match: every event is seen whole or not at all,
 * however batches are chunked, and the index ends consistent. Readers match through {@link KvIndexer#findMatches}
 * or through the router's {@code matchLocked}, whose waiting readers make a writer let them in between two events
 * of a hold.
 */
class KvIndexerConcurrencyTest {
  private static final int BLOCK = 4;
  private static final int PROMPT_BLOCKS = 48; // more than one chunk of 32 blocks

  static Stream<Arguments> cases() {
    return Stream.of(1, 4, 16, 48)
        .flatMap(blocks -> Stream.of(Arguments.of(blocks, false), Arguments.of(blocks, true)));
  }

  @ParameterizedTest(name = "{0} blocks per stored event, matchLocked readers: {1}")
  @MethodSource("cases")
  void readersSeeWholeEventsWhileBatchesApplyConcurrently(int blocksPerEvent, boolean routerPath) throws Exception {
    KvIndexer index = KvIndexer.newBuilder().blockSize(BLOCK).build();
    BlockHasher hasher = index.hasher();
    int writers = 2;
    int rounds = 300;
    WorkerId[] workers = new WorkerId[writers];
    int[] slots = new int[writers];
    int[][] prompts = new int[writers][];
    long[][] queries = new long[writers][];
    SplittableRandom random = new SplittableRandom(blocksPerEvent);
    for (int w = 0; w < writers; w++) {
      workers[w] = WorkerId.of("w" + w);
      slots[w] = index.register(workers[w]);
      prompts[w] = random.ints(PROMPT_BLOCKS * BLOCK, 0, 50_000).toArray();
      queries[w] = hasher.sequenceHashes(prompts[w]);
    }
    AtomicBoolean done = new AtomicBoolean();
    AtomicLong observations = new AtomicLong();
    List<String> torn = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(writers + 2);
    try {
      CountDownLatch start = new CountDownLatch(1);
      // Writers begin once both readers are reading: on a fast machine a small case could otherwise finish its writes
      // before a reader had looked once, and the test would have checked nothing.
      CountDownLatch readersReading = new CountDownLatch(2);
      List<Future<?>> writing = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        WorkerId worker = workers[w];
        int[] tokens = prompts[w];
        long salt = random.nextLong();
        writing.add(pool.submit(() -> {
          start.await();
          readersReading.await();
          long[] hashes = new long[PROMPT_BLOCKS];
          for (int round = 0; round < rounds; round++) {
            for (int b = 0; b < PROMPT_BLOCKS; b++) {
              hashes[b] = salt + round * 1_000L + b; // fresh engine hashes each round
            }
            List<KvEvent> stores = new ArrayList<>();
            for (int from = 0; from < PROMPT_BLOCKS; from += blocksPerEvent) {
              stores.add(KvEvent.BlockStored.of(Arrays.copyOfRange(hashes, from, from + blocksPerEvent),
                  from == 0 ? null : hashes[from - 1],
                  Arrays.copyOfRange(tokens, from * BLOCK, (from + blocksPerEvent) * BLOCK), BLOCK));
            }
            index.applyAll(worker, stores);
            // The whole prompt leaves in one event: readers see all of it or none of it.
            index.applyAll(worker, List.of(KvEvent.BlockRemoved.of(hashes.clone())));
          }
          return null;
        }));
      }
      List<Future<?>> reading = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        reading.add(pool.submit(() -> {
          PrefixTable.MatchScratch scratch = new PrefixTable.MatchScratch();
          start.await();
          readersReading.countDown();
          do {
            for (int w = 0; w < writers; w++) {
              int depth;
              if (routerPath) {
                int touched = index.matchLocked(queries[w], queries[w].length, scratch);
                depth = 0;
                for (int t = 0; t < touched; t++) {
                  if (scratch.touched[t] == slots[w]) {
                    depth = scratch.depth[slots[w]];
                  }
                }
                scratch.reset(touched);
              } else {
                PrefixMatch match = index.findMatches(queries[w]).get(workers[w]);
                depth = match == null ? 0 : match.blocks();
              }
              observations.incrementAndGet();
              if (depth % blocksPerEvent != 0) {
                synchronized (torn) {
                  torn.add(workers[w] + " at depth " + depth);
                }
              }
            }
          } while (!done.get());
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : writing) {
        f.get(60, TimeUnit.SECONDS);
      }
      done.set(true);
      for (Future<?> f : reading) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(List.of(), torn, "a reader saw part of a stored event");
    assertTrue(observations.get() > 0);
    IndexInvariants.check(index);
    IndexStats stats = index.stats();
    assertEquals(0, stats.entries(), "every stored prompt was removed");
    assertEquals((long) writers * rounds * PROMPT_BLOCKS, stats.storedBlocks());
    assertEquals((long) writers * rounds * PROMPT_BLOCKS, stats.removedBlocks());
    assertEquals(0, stats.orphanBlocks() + stats.unknownRemovals() + stats.invalidEvents());
  }
}
