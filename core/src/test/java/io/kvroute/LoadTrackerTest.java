package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class LoadTrackerTest {
  private static final BlockHasher HASHER = BlockHasher.of(16);
  private static final long GEN = 1;

  private static LoadTracker tracker(int slots) {
    LoadTracker load = new LoadTracker();
    for (int slot = 0; slot < slots; slot++) {
      load.activate(slot, GEN);
    }
    return load;
  }

  @Test
  void sharedPrefixesCountOnceAndDepthsAreMeasuredInSteps() {
    int[] prefix = Fixtures.prompt(1, 64 * 16);
    long[] a = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(2, 20 * 16)));
    long[] b = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(3, 12 * 16)));
    LoadTracker load = tracker(3);
    load.book(0, GEN, 100, a, a.length);
    assertEquals(84, load.activeBlocks(0));
    assertEquals(64, load.activeDepth(0, b, b.length), "the 64 shared blocks end on a step boundary");
    load.book(0, GEN, 50, b, b.length);
    assertEquals(84 + 12, load.activeBlocks(0), "the shared prefix counts once");
    assertEquals(2, load.activeRequests(0));
    assertEquals(150, load.prefillTokens(0));
    assertEquals(a.length, load.activeDepth(0, a, a.length));
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(76, load.activeBlocks(0));
    load.releaseRequest(0, GEN, b, b.length);
    assertEquals(0, load.activeBlocks(0));
    assertEquals(0, load.activeRequests(0));
  }

  @Test
  void aPrefixEndingInsideAStepCountsToTheStepStart() {
    int[] prefix = Fixtures.prompt(4, 61 * 16);
    long[] a = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(5, 30 * 16)));
    long[] b = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(6, 30 * 16)));
    LoadTracker load = tracker(3);
    load.book(0, GEN, 0, a, a.length);
    assertEquals(56, load.activeDepth(0, b, b.length));
  }

  @Test
  void randomBookingsAlwaysReturnToZero() {
    SplittableRandom random = new SplittableRandom(9);
    LoadTracker load = tracker(3);
    long[][] booked = new long[200][];
    for (int i = 0; i < booked.length; i++) {
      int shared = random.nextInt(40) * 16;
      int[] tokens = Fixtures.concat(Fixtures.prompt(7, shared), Fixtures.prompt(100 + i, 1 + random.nextInt(800)));
      booked[i] = HASHER.sequenceHashes(tokens);
      load.book(i % 3, GEN, 10, booked[i], booked[i].length);
      long blocks = load.activeBlocks(i % 3);
      assertEquals(true, blocks >= booked[i].length, "at least the latest request's blocks: " + blocks);
    }
    for (int i = booked.length - 1; i >= 0; i--) {
      load.releasePrefill(i % 3, GEN, 10);
      load.releaseRequest(i % 3, GEN, booked[i], booked[i].length);
    }
    for (int slot = 0; slot < 3; slot++) {
      assertEquals(0, load.activeBlocks(slot));
      assertEquals(0, load.activeRequests(slot));
      assertEquals(0, load.prefillTokens(slot));
    }
    assertEquals(0, load.overReleases());
  }

  @Test
  void overReleaseIsCountedNotSilentlyClamped() {
    LoadTracker load = tracker(1);
    long[] a = HASHER.sequenceHashes(Fixtures.prompt(11, 20 * 16));
    load.book(0, GEN, 100, a, a.length);
    load.releasePrefill(0, GEN, 100);
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(0, load.overReleases());
    load.releasePrefill(0, GEN, 100);
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(2, load.overReleases(), "the second prefill and request releases find nothing booked");
    assertEquals(0, load.activeRequests(0));
    assertEquals(0, load.prefillTokens(0));
  }

  @Test
  void aRequestReleasedTwiceWhileAnotherIsOpenCountsEveryBlockKeyItFoundUnbooked() {
    // Mutation audit: the double release passes the "no active request" guard because b is open, so only the
    // per-key check sees it. 20 blocks have ceil(20 / SAMPLE) counted keys, none of which is booked any more.
    LoadTracker load = tracker(1);
    long[] a = HASHER.sequenceHashes(Fixtures.prompt(21, 20 * 16));
    long[] b = HASHER.sequenceHashes(Fixtures.prompt(22, 12 * 16));
    load.book(0, GEN, 0, a, a.length);
    load.book(0, GEN, 0, b, b.length);
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(0, load.overReleases());
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals((20 + LoadTracker.SAMPLE - 1) / LoadTracker.SAMPLE, load.overReleases());
    assertEquals(12, load.activeBlocks(0), "b's blocks are untouched by a's second release");
  }

  @Test
  void releasesOfAnEndedRegistrationNeverTouchTheNextOne() {
    LoadTracker load = tracker(1);
    long[] a = HASHER.sequenceHashes(Fixtures.prompt(12, 20 * 16));
    load.book(0, GEN, 100, a, a.length);
    load.deactivate(0);
    load.activate(0, GEN + 1); // the same slot, a new registration
    assertEquals(false, load.book(0, GEN, 5, a, a.length), "a booking for the old registration is refused");
    load.book(0, GEN + 1, 7, a, a.length);
    load.releasePrefill(0, GEN, 100);
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(1, load.activeRequests(0));
    assertEquals(7, load.prefillTokens(0));
    assertEquals(20, load.activeBlocks(0));
    assertEquals(0, load.overReleases());
    assertEquals(2, load.staleReleases());
  }

  @Test
  void closingOneOfTwoSharersFreesItsTailAndClosingBothFreesThePrefixToo() {
    // A 16-block shared prefix (two whole steps) and a 3-block unique tail each: 16 + 3 + 3 = 22 distinct blocks.
    int[] prefix = Fixtures.prompt(11, 16 * 16);
    long[] a = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(12, 3 * 16)));
    long[] b = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(13, 3 * 16)));
    LoadTracker load = tracker(1);
    load.book(0, GEN, 0, a, a.length);
    assertEquals(19, load.soleBlocks(0), "a lone request holds all its blocks alone");
    load.book(0, GEN, 0, b, b.length);
    assertEquals(22, load.activeBlocks(0));
    assertEquals(3 + 3, load.soleBlocks(0), "only the tails are held by one request");
    load.releaseRequest(0, GEN, a, a.length);
    assertEquals(22 - 3, load.activeBlocks(0), "closing one frees its 3-block tail");
    assertEquals(16 + 3, load.soleBlocks(0), "the prefix now has one holder left");
    load.releaseRequest(0, GEN, b, b.length);
    assertEquals(0, load.activeBlocks(0), "closing both frees all 22");
    assertEquals(0, load.soleBlocks(0));
  }

  @Test
  void aSharedPrefixEndingInsideAStepLeavesItsPartialStepUnshared() {
    // 10 shared blocks: the step boundary is at 8, so blocks 8-12 of each 13-block request count as its own.
    int[] prefix = Fixtures.prompt(14, 10 * 16);
    long[] a = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(15, 3 * 16)));
    long[] b = HASHER.sequenceHashes(Fixtures.concat(prefix, Fixtures.prompt(16, 3 * 16)));
    LoadTracker load = tracker(1);
    load.book(0, GEN, 0, a, a.length);
    load.book(0, GEN, 0, b, b.length);
    assertEquals(8 + 5 + 5, load.activeBlocks(0));
    assertEquals(5 + 5, load.soleBlocks(0));
    load.releaseRequest(0, GEN, b, b.length);
    assertEquals(13, load.soleBlocks(0));
  }

  static LongStream seeds() {
    return LongStream.rangeClosed(1, 6);
  }

  /**
   * Against an exact model (a reference count per block, every block hashed): with shared prefixes a whole number
   * of steps long the sampled keys measure the same, so the blocks held by exactly h requests, for every h, must
   * agree after every booking and release, in any order, peers' key bookings included.
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void holderCountsMatchAnExactReferenceCount(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    LoadTracker load = tracker(2);
    java.util.List<Map<Long, Integer>> exact = java.util.List.of(new HashMap<>(), new HashMap<>());
    long[][] booked = new long[120][];
    long[][] keys = new long[booked.length][];
    boolean[] open = new boolean[booked.length];
    for (int step = 0; step < 600; step++) {
      int i = random.nextInt(booked.length);
      int slot = i % 2;
      Map<Long, Integer> counts = exact.get(slot);
      if (!open[i]) {
        int shared = random.nextInt(5) * LoadTracker.SAMPLE * 16;
        int[] tokens = Fixtures.concat(Fixtures.prompt(20 + random.nextInt(3), shared),
            Fixtures.prompt(1000 + step, 16 * (1 + random.nextInt(30))));
        booked[i] = HASHER.sequenceHashes(tokens);
        keys[i] = new long[RemoteLoad.loadKeyCount(booked[i].length)];
        RemoteLoad.loadKeys(booked[i], booked[i].length, keys[i]);
        if (random.nextBoolean()) {
          load.book(slot, GEN, 0, booked[i], booked[i].length);
        } else {
          load.bookKeys(slot, GEN, 0, keys[i], booked[i].length);
        }
        for (long h : booked[i]) {
          counts.merge(h, 1, Integer::sum);
        }
      } else {
        if (random.nextBoolean()) {
          load.releaseRequest(slot, GEN, booked[i], booked[i].length);
        } else {
          load.releaseKeys(slot, GEN, keys[i], booked[i].length);
        }
        for (long h : booked[i]) {
          counts.merge(h, -1, (x, y) -> x + y == 0 ? null : x + y);
        }
      }
      open[i] = !open[i];
      long sole = counts.values().stream().filter(v -> v == 1).count();
      assertEquals(sole, load.soleBlocks(slot), "seed " + seed + " step " + step);
      long[] histogram = new long[LoadTracker.MAX_HOLDERS + 1];
      counts.values().forEach(v -> histogram[Math.min(v, LoadTracker.MAX_HOLDERS)]++);
      assertArrayEquals(histogram, load.holderHistogram(slot), "seed " + seed + " step " + step);
      assertEquals(counts.size(), load.activeBlocks(slot), "seed " + seed + " step " + step);
    }
    assertEquals(0, load.overReleases());
  }
}
