package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.KvEvent;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The simulated engine's block pool: its refcount invariant and the events eviction emits. */
class BlockPoolTest {
  @Test
  void aBlockFreedMoreOftenThanAllocatedIsRefusedNotRequeued() {
    // Mutation audit: ignoring the double free put the block in the free queue twice, which corrupts the LRU
    // list that the simulated engine's eviction order (and so its KV events) depends on.
    BlockPool pool = new BlockPool(4);
    int[] blocks = new int[2];
    pool.allocate(2, blocks, 0);
    assertEquals(2, pool.freeBlocks());
    pool.free(blocks, 0, 2, true);
    assertEquals(4, pool.freeBlocks());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.free(blocks, 0, 1, true));
    assertTrue(e.getMessage().contains("freed more often than allocated"), e.getMessage());
    assertEquals(4, pool.freeBlocks(), "the refused free changed nothing");
  }

  @Test
  void evictingACachedBlockEmitsItsRemoval() {
    BlockPool pool = new BlockPool(1);
    int[] block = new int[1];
    pool.allocate(1, block, 0);
    pool.cache(block[0], 42L);
    pool.free(block, 0, 1, true);
    assertEquals(List.of(), pool.takeEvents());
    pool.allocate(1, block, 0); // the only block: its hash is evicted
    assertEquals(List.of(KvEvent.BlockRemoved.of(42L)), pool.takeEvents());
    assertEquals(-1, pool.lookup(42L));
  }
}
