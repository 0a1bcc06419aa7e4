package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

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
}
