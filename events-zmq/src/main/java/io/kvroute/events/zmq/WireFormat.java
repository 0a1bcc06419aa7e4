package io.kvroute.events.zmq;

/**
 * How {@link KvEventPublisher} and {@link KvEventCodec#encode} lay out events inside a batch; an immutable enum,
 * thread-safe. The outer batch is always the positional array {@code [ts, events, data_parallel_rank]}.
 */
public enum WireFormat {
  /**
   * Tagged maps, {@code {"type": "BlockStored", ...}}: what vLLM sends since PR #42892 (v0.26.0 and later) and
   * SGLang since its switch. Stored events carry {@code extra_keys}, {@code group_idx} 0 and, when known,
   * {@code kv_cache_spec_kind}.
   */
  MAP,

  /**
   * Tagged arrays in the v0.10.2 shape, the most widely deployed legacy layout: {@code ["BlockStored", hashes,
   * parent, tokens, block_size, lora_id, medium]}, {@code ["BlockRemoved", hashes, medium]},
   * {@code ["AllBlocksCleared"]}. LoRA names, cache group kinds and multimodal keys are not representable and are
   * left out.
   */
  LEGACY_ARRAY,

  /**
   * Tagged arrays in the last array-era shape (vLLM PR #40984 up to #42892): a 12-element {@code BlockStored}
   * ending in {@code lora_name, extra_keys, group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window} and a
   * 4-element {@code BlockRemoved} ending in {@code group_idx}.
   */
  LEGACY_ARRAY_FULL
}
