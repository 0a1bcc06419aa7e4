package io.kvroute.jmh;

/** Whether a benchmark's prompts are in the index; a benchmark parameter. */
public enum Match {
  /**
   * One worker holds the whole prompt: a match probes its first and last blocks when it can bisect, every block when
   * it cannot.
   */
  HIT,
  /** No worker holds even the first block, so matching stops there. */
  MISS,
  /**
   * One worker holds the prompt up to a depth drawn at random (from the first block to all but the last), and no
   * worker the rest: a bisecting match searches for that depth, about log2(blocks) probes in as many rounds. Not in
   * the benchmarks' default matrix.
   */
  PARTIAL
}
