package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.WorkerId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The ring of local deltas against a model queue bounded by records and by hashes, and across two threads. */
class DeltaRingTest {
  private static final WorkerId[] WORKERS = {WorkerId.of("w0"), WorkerId.of("w1"), WorkerId.of("w2")};

  /** One record as offered. */
  private record Rec(byte kind, long id, WorkerId worker, long prefill, int blocks, long[] hashes, byte note,
      int warm, long warmKey) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Rec r && r.kind == kind && r.id == id && r.worker == worker && r.prefill == prefill
          && r.blocks == blocks && Arrays.equals(r.hashes, hashes) && r.note == note && r.warm == warm
          && r.warmKey == warmKey;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(id);
    }

    @Override
    public String toString() {
      return kind + ":" + id + ":" + worker + ":" + prefill + ":" + blocks + ":" + hashes.length + ":" + note + ":"
          + warm + ":" + warmKey;
    }
  }

  private static Rec random(SplittableRandom random, long id, int maxHashes) {
    byte kind = (byte) (1 + random.nextInt(4));
    int count = kind <= DeltaRing.BOOK_PREDICTED ? random.nextInt(maxHashes + 1) : 0;
    long[] hashes = random.longs(count).toArray();
    boolean book = kind <= DeltaRing.BOOK_PREDICTED;
    byte note = book ? new byte[] {DeltaRing.NO_NOTE, DeltaRing.NOTED, DeltaRing.NOTED_NEW_PREFIX}[random.nextInt(3)]
        : DeltaRing.NO_NOTE;
    int warm = note == DeltaRing.NO_NOTE ? 0 : random.nextInt(count + 1);
    return new Rec(kind, id, book ? WORKERS[random.nextInt(3)] : null, random.nextLong(1 << 20),
        random.nextInt(1 << 16), hashes, note, warm, warm > 0 ? random.nextLong() : 0);
  }

  private static boolean offer(DeltaRing ring, Rec r) {
    return r.note == DeltaRing.NO_NOTE && r.warm == 0 && r.warmKey == 0 && (r.id & 1) == 0
        ? ring.offer(r.kind, r.id, r.worker, r.prefill, r.blocks, r.hashes, r.hashes.length) // the short form
        : ring.offer(r.kind, r.id, r.worker, r.prefill, r.blocks, r.hashes, r.hashes.length, r.note, r.warm,
            r.warmKey);
  }

  private static List<Rec> drain(DeltaRing ring, long[] scratch) {
    List<Rec> out = new ArrayList<>();
    ring.drain((kind, id, worker, prefill, blocks, hashes, count, note, warm, warmKey) ->
        out.add(new Rec(kind, id, worker, prefill, blocks, Arrays.copyOf(hashes, count), note, warm, warmKey)),
        scratch);
    return out;
  }

  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 30).mapToObj(seed -> Arguments.of(seed));
  }

  static Stream<Arguments> threadSeeds() {
    return LongStream.rangeClosed(1, 3).mapToObj(seed -> Arguments.of(seed));
  }

  /**
   * Random offers and drains: the ring hands back exactly what it accepted, in order, and refuses a record exactly
   * when the model says the records or the hashes in flight would exceed their capacities (so it wraps around
   * both arrays many times, at every offset).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void behavesAsABoundedFifoOfRecordsAndHashes(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int capacity = 1 << (2 + random.nextInt(4));
    int hashCapacity = 1 << (4 + random.nextInt(4));
    DeltaRing ring = new DeltaRing(capacity, hashCapacity);
    long[] scratch = new long[hashCapacity];
    ArrayDeque<Rec> model = new ArrayDeque<>();
    int hashesInFlight = 0;
    long id = 0;
    int refused = 0;
    for (int step = 0; step < 3000; step++) {
      if (random.nextInt(4) != 0) {
        Rec r = random(random, id++, hashCapacity);
        boolean fits = model.size() < capacity && hashesInFlight + r.hashes.length <= hashCapacity;
        assertEquals(fits, offer(ring, r), "step " + step + " offering " + r + " with " + model.size()
            + " records and " + hashesInFlight + " hashes in flight");
        if (fits) {
          model.addLast(r);
          hashesInFlight += r.hashes.length;
        } else {
          refused++;
        }
      } else {
        assertEquals(model.isEmpty(), ring.isEmpty());
        List<Rec> got = drain(ring, scratch);
        assertEquals(List.copyOf(model), got, "step " + step);
        model.clear();
        hashesInFlight = 0;
        assertTrue(ring.isEmpty());
      }
    }
    assertTrue(refused > 0, "the ring filled up at least once");
  }

  @Test
  void aSinkThatThrowsLosesOnlyItsRecord() {
    DeltaRing ring = new DeltaRing(4, 16);
    long[] scratch = new long[16];
    for (long id = 1; id <= 3; id++) {
      assertTrue(ring.offer(DeltaRing.CLOSE, id, null, 0, 0, new long[0], 0));
    }
    assertThrows(IllegalStateException.class, () -> ring.drain((kind, id, w, p, b, h, c, note, warm, key) -> {
      throw new IllegalStateException("bad record " + id);
    }, scratch));
    List<Rec> rest = drain(ring, scratch);
    assertEquals(2, rest.size());
    assertEquals(2, rest.get(0).id());
    assertNull(rest.get(0).worker());
  }

  @Test
  void capacitiesMustBePowersOfTwo() {
    assertThrows(IllegalArgumentException.class, () -> new DeltaRing(3, 16));
    assertThrows(IllegalArgumentException.class, () -> new DeltaRing(4, 10));
  }

  /**
   * A producer thread offering (retrying when refused) and a consumer thread draining concurrently: every record
   * arrives once, in order, with its hashes intact (each derived from its id, so a torn or stale read shows).
   */
  @ParameterizedTest(name = "seed {0}")
  @MethodSource("threadSeeds")
  void oneProducerAndOneConsumerOnTwoThreadsLoseNothing(long seed) throws Exception {
    DeltaRing ring = new DeltaRing(64, 256);
    int n = 50_000;
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread producer = new Thread(() -> {
      SplittableRandom random = new SplittableRandom(seed);
      long[] hashes = new long[40];
      for (long id = 0; id < n; id++) {
        int count = random.nextInt(hashes.length + 1);
        for (int i = 0; i < count; i++) {
          hashes[i] = id * 1_000 + i;
        }
        while (!ring.offer(DeltaRing.BOOK, id, WORKERS[(int) (id % 3)], id, count, hashes, count)) {
          Thread.yield(); // the consumer may share this core
        }
      }
    });
    long[] next = {0};
    long[] scratch = new long[256];
    producer.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (next[0] < n && System.nanoTime() < deadline && failure.get() == null) {
      if (ring.isEmpty()) {
        Thread.yield();
      }
      ring.drain((kind, id, worker, prefill, blocks, hashes, count, note, warm, warmKey) -> {
        try {
          assertEquals(next[0], id, "in order");
          assertEquals(WORKERS[(int) (id % 3)], worker);
          assertEquals(id, prefill);
          assertEquals(blocks, count);
          long[] expected = new long[count];
          for (int i = 0; i < count; i++) {
            expected[i] = id * 1_000 + i;
          }
          assertArrayEquals(expected, Arrays.copyOf(hashes, count), "hashes of " + id);
          next[0]++;
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        }
      }, scratch);
    }
    producer.join(10_000);
    if (failure.get() != null) {
      throw new AssertionError(failure.get());
    }
    assertEquals(n, next[0]);
  }
}
