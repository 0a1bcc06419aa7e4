package io.kvroute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A request's cache salt enters block 0's hash as one more extra key, as vLLM folds {@code cache_salt} into the
 * extra keys of the block starting at token 0 only. Known answers computed with the reference xxHash C library
 * (python-xxhash 3.2.0): {@code xxh3_64(b"tenant-a")}, then XXH3-64 with seed 1337 over the block's tokens as LE u32
 * followed by the salt key as LE u64, then the sequence chain {@code xxh3_64_1337(seq0 LE || local1 LE)}.
 */
class CacheSaltTest {
  private static final int[] TOKENS = IntStream.rangeClosed(1, 32).toArray();

  @Test
  void saltKey_isXxh3OfTheUtf8Salt() {
    assertEquals(0x635c5bebe6e5f781L, BlockHasher.cacheSaltKey("tenant-a"));
    assertThrows(IllegalArgumentException.class, () -> BlockHasher.cacheSaltKey(""));
  }

  @Test
  void saltedRequest_hashesBlock0WithTheSaltKey_andChainsFromIt() {
    BlockHasher hasher = BlockHasher.of(16);
    long[] unsalted = hasher.sequenceHashes(TOKENS);
    assertEquals(0xea06fc71a5ee6e88L, unsalted[0]);
    RouteRequest request = RouteRequest.newBuilder(TOKENS).cacheSalt("tenant-a").build();
    long[] salted = new long[2];
    hasher.sequenceHashes(TOKENS, TOKENS.length, null, request.blockExtraKeys(), salted);
    assertArrayEquals(new long[] {0xa11cd26864eef665L, 0xfc38c387669ecbe4L}, salted);
    assertNotEquals(unsalted[1], salted[1], "every later block differs through the chain");
    assertEquals("tenant-a", request.cacheSalt());
  }

  @Test
  void saltJoinsBlock0sMultimodalKeys_withoutChangingTheCallersArray() {
    long[][] mm = {{7L}, {9L}};
    long[][] salted = BlockHasher.withCacheSalt(mm, "tenant-a");
    assertArrayEquals(new long[] {7L, BlockHasher.cacheSaltKey("tenant-a")}, salted[0]);
    assertSame(mm[1], salted[1]);
    assertArrayEquals(new long[] {7L}, mm[0]);
    assertSame(mm, BlockHasher.withCacheSalt(mm, ""));
    assertNull(BlockHasher.withCacheSalt(null, null));
    assertNull(RouteRequest.newBuilder(TOKENS).cacheSalt("").build().cacheSalt());
  }

  @Test
  void saltedStoredBlocks_matchOnlyRequestsWithTheSameSalt() {
    Router router = Router.newBuilder().blockSize(16).build();
    WorkerId worker = WorkerId.of("w");
    router.addWorker(Worker.of(worker));
    long[][] keys = BlockHasher.withCacheSalt(null, "tenant-a");
    router.eventSink().apply(worker, new KvEvent.BlockStored(new long[] {11, 12}, null, TOKENS, 16, null,
        StorageTier.GPU, null, keys));
    KvIndex index = router.indexer();
    BlockHasher hasher = BlockHasher.of(16);
    long[] salted = new long[2];
    hasher.sequenceHashes(TOKENS, 32, null, RouteRequest.newBuilder(TOKENS).cacheSalt("tenant-a").build()
        .blockExtraKeys(), salted);
    long[] other = new long[2];
    hasher.sequenceHashes(TOKENS, 32, null, RouteRequest.newBuilder(TOKENS).cacheSalt("tenant-b").build()
        .blockExtraKeys(), other);
    assertEquals(2, index.findMatches(salted).get(worker).blocks());
    assertNull(index.findMatches(other).get(worker));
    assertNull(index.findMatches(hasher.sequenceHashes(TOKENS)).get(worker));
  }
}
