package io.kvroute.jmh;

/** Whether a benchmark's prompts are in the index; a benchmark parameter. */
public enum Match {
  /** One worker holds the whole prompt, so matching walks every block. */
  HIT,
  /** No worker holds even the first block, so matching stops there. */
  MISS
}
