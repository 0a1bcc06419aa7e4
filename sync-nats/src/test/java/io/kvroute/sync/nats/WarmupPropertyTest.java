package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.kvroute.WorkerId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The warm-up table against an independent model (a list of (worker, hash, time) in recency order, trimmed from the
 * front), its snapshot encoding round-tripped, and every truncation and corruption of a snapshot rejected with
 * {@link SyncFormatException} and nothing else; over seeded random predictions.
 */
class WarmupPropertyTest {
  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 30).mapToObj(Arguments::of);
  }

  /** The model: one entry per (worker, hash), most recent last. */
  record Entry(WorkerId worker, long hash, long at) {}

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void theTableKeepsTheMostRecentHashesWithinItsBoundAndAge(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int maxBlocks = 1 + random.nextInt(200);
    Warmup table = new Warmup(maxBlocks);
    List<Entry> model = new ArrayList<>();
    WorkerId[] workers = {WorkerId.of("w0"), new WorkerId("w1", 1), WorkerId.of("wé")};
    long now = 0;
    for (int round = 0; round < 60; round++) {
      now += random.nextInt(1, 1000);
      WorkerId w = workers[random.nextInt(workers.length)];
      int count = random.nextInt(0, 40);
      long[] hashes = new long[count + 3];
      for (int i = 0; i < hashes.length; i++) {
        hashes[i] = random.nextInt(300); // repeats, within and across prompts
      }
      table.record(w, hashes, 3, count, now);
      for (int i = count - 1; i >= 0; i--) { // last block first: the first counts as the most recent
        long h = hashes[3 + i];
        model.removeIf(e -> e.worker.equals(w) && e.hash == h);
        model.add(new Entry(w, h, now));
      }
      while (model.size() > maxBlocks) {
        model.remove(0);
      }
      assertEquals(model.size(), table.blocks(), "round " + round);
    }
    long maxAge = random.nextInt(0, 20_000);
    long finalNow = now;
    model.removeIf(e -> finalNow - e.at > maxAge);
    Warmup.Snapshot s = Warmup.decode(table.encode(16, now, maxAge, 1_700_000_000_000L));
    assertEquals(16, s.blockSize());
    assertEquals(1_700_000_000_000L, s.writtenAtMillis());
    Map<WorkerId, List<Long>> expected = new LinkedHashMap<>();
    for (Entry e : model) {
      expected.computeIfAbsent(e.worker, k -> new ArrayList<>()).add(e.hash);
    }
    Map<WorkerId, List<Long>> actual = new LinkedHashMap<>();
    for (int i = 0; i < s.workers().size(); i++) {
      List<Long> hashes = new ArrayList<>();
      for (long h : s.hashes().get(i)) {
        hashes.add(h);
      }
      actual.put(s.workers().get(i), hashes);
    }
    assertEquals(expected.keySet(), actual.keySet());
    expected.forEach((w, hashes) -> assertEquals(hashes, actual.get(w), "hashes of " + w + ", oldest first"));
    assertEquals(model.size(), table.blocks(), "encoding dropped the expired hashes from the table too");
  }

  /**
   * Prompts that share prefixes (trees of block chains, as a router's sequence hashes are), recorded under a bound
   * far below them: what a snapshot keeps of every recorded prompt is a prefix of it, the property the router's
   * sampled prediction match relies on (a block predicted means every block before it is).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void aSnapshotKeepsAPrefixOfEveryPrompt(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    Warmup table = new Warmup(1 + random.nextInt(120));
    WorkerId[] workers = {WorkerId.of("w0"), WorkerId.of("w1")};
    List<long[]> prompts = new ArrayList<>();
    List<WorkerId> routedTo = new ArrayList<>();
    long now = 0;
    for (int round = 0; round < 80; round++) {
      now += random.nextInt(1, 100);
      long[] prompt;
      if (prompts.isEmpty() || random.nextInt(3) == 0) {
        prompt = random.longs(1 + random.nextInt(30)).toArray(); // a new chain
      } else { // a prefix of an earlier prompt and a tail of its own
        long[] base = prompts.get(random.nextInt(prompts.size()));
        int keep = 1 + random.nextInt(base.length);
        prompt = java.util.Arrays.copyOf(base, keep + random.nextInt(20));
        for (int i = keep; i < prompt.length; i++) {
          prompt[i] = random.nextLong();
        }
      }
      WorkerId w = workers[random.nextInt(workers.length)];
      table.record(w, prompt, 0, prompt.length, now);
      prompts.add(prompt);
      routedTo.add(w);
    }
    Warmup.Snapshot s = Warmup.decode(table.encode(16, now, Long.MAX_VALUE, 1));
    Map<WorkerId, java.util.Set<Long>> kept = new LinkedHashMap<>();
    for (int i = 0; i < s.workers().size(); i++) {
      java.util.Set<Long> set = new java.util.HashSet<>();
      for (long h : s.hashes().get(i)) {
        set.add(h);
      }
      kept.put(s.workers().get(i), set);
    }
    int partial = 0;
    for (int p = 0; p < prompts.size(); p++) {
      long[] prompt = prompts.get(p);
      java.util.Set<Long> held = kept.getOrDefault(routedTo.get(p), java.util.Set.of());
      int depth = 0;
      while (depth < prompt.length && held.contains(prompt[depth])) {
        depth++;
      }
      for (int i = depth; i < prompt.length; i++) {
        assertFalse(held.contains(prompt[i]), "prompt " + p + ": block " + i + " kept after block " + depth
            + " was dropped");
      }
      if (depth > 0 && depth < prompt.length) {
        partial++;
      }
    }
    assertTrue(partial > 0 || table.blocks() < 2, "the bound cut no prompt short: nothing was checked");
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void truncatedOrCorruptedSnapshotsAreRejectedWithTheFormatExceptionOnly(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    Warmup table = new Warmup(1000);
    for (int w = 0; w < 1 + random.nextInt(4); w++) {
      long[] hashes = random.longs(random.nextInt(1, 30)).toArray();
      table.record(WorkerId.of("worker-" + w), hashes, 0, hashes.length, 1);
    }
    byte[] valid = table.encode(1 + random.nextInt(64), 1, Long.MAX_VALUE, random.nextLong(0, Long.MAX_VALUE));
    Warmup.Snapshot reference = Warmup.decode(valid);
    for (int cut = 0; cut < valid.length; cut++) {
      byte[] truncated = java.util.Arrays.copyOf(valid, cut);
      assertThrows(SyncFormatException.class, () -> Warmup.decode(truncated), "cut at " + cut);
    }
    byte[] longer = java.util.Arrays.copyOf(valid, valid.length + 1);
    assertThrows(SyncFormatException.class, () -> Warmup.decode(longer), "a trailing byte");
    byte[] version = valid.clone();
    version[2] = 2;
    assertThrows(SyncFormatException.class, () -> Warmup.decode(version), "another version");
    for (int i = 0; i < 200; i++) {
      byte[] corrupt = valid.clone();
      corrupt[random.nextInt(corrupt.length)] = (byte) random.nextInt(256);
      try {
        Warmup.Snapshot s = Warmup.decode(corrupt);
        assertEquals(reference.workers().size(), s.workers().size(), "a hash or name changed, not the layout");
      } catch (SyncFormatException expected) {
        // rejected whole
      } catch (RuntimeException e) {
        fail("corruption must be rejected with SyncFormatException, not " + e);
      }
    }
    long[][] hashes = reference.hashes().toArray(long[][]::new);
    Warmup.Snapshot again = Warmup.decode(valid);
    for (int i = 0; i < hashes.length; i++) {
      assertArrayEquals(hashes[i], again.hashes().get(i));
    }
  }
}
