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

  /**
   * Two blocks holding the same hash (vLLM caches a duplicate when two requests compute one block before either is
   * cached): each eviction is one {@code BlockRemoved}, as vLLM emits one per evicted block and a router keeps a
   * reference count for duplicate stores (reference/vllm-kv-events.md, 3.3 and 9). After the first eviction the
   * hash still hits the other block; only after the second is it gone.
   */
  @Test
  void eachEvictedDuplicateEmitsItsOwnRemoval() {
    BlockPool pool = new BlockPool(2);
    int[] blocks = new int[2];
    pool.allocate(2, blocks, 0);
    pool.cache(blocks[0], 42L);
    pool.cache(blocks[1], 42L);
    pool.free(blocks, 0, 2, false); // blocks[0] first in the free queue
    assertEquals(List.of(), pool.takeEvents());
    int[] one = new int[1];
    pool.allocate(1, one, 0);
    assertEquals(blocks[0], one[0]);
    assertEquals(List.of(KvEvent.BlockRemoved.of(42L)), pool.takeEvents());
    assertEquals(blocks[1], pool.lookup(42L), "the duplicate still holds the hash");
    pool.allocate(1, one, 0);
    assertEquals(List.of(KvEvent.BlockRemoved.of(42L)), pool.takeEvents());
    assertEquals(-1, pool.lookup(42L));
  }
}
