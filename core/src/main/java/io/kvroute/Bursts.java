package io.kvroute;

/**
 * Where one router would have put a request within a burst of selections made on the same view; stateless (its
 * scratch is the {@link Candidates}', used under the router's admission lock).
 *
 * <p>With peers, a replica cannot see the selections its peers made within the last delivery window (see {@link
 * Candidates#unseenPeerSelections()}): this request is one of a burst of about {@code 1 + unseen} that their
 * replicas each decided on the same view. One router would have placed the burst one request after another, each
 * seeing the ones before; every replica picking the view's best instead stacks the burst on one worker (herding on
 * stale load, Mitzenmacher 2000). So the request takes a uniformly random position in the burst ({@link #position})
 * and goes where one router would have put the request at that position ({@link #place}), the ones before it taken
 * to be like this one: each adds to the worker it went to what this request would add there.
 */
final class Bursts {
  /**
   * A bound on the burst's length: selections closer together than a microsecond would otherwise ask for thousands
   * of positions.
   */
  static final int MAX_BURST = 256;

  private Bursts() {}

  /**
   * This request's position in a burst of {@code 1 + unseen} (a fractional {@code unseen} adds its last position
   * with that probability), uniformly drawn; 0 is where the view's best goes.
   */
  static int position(Candidates c, double unseen) {
    int whole = (int) Math.min(unseen, MAX_BURST);
    int positions = 1 + whole + (c.random().nextDouble() < unseen - whole ? 1 : 0);
    return c.random().nextInt(positions);
  }

  /**
   * The candidate one router would have given the request at {@code position} of the burst, from the
   * candidates' costs now ({@link Candidates#burstHead}, in any unit) and what one more request like this one adds to
   * each ({@link Candidates#burstStep}, in the same unit, more than 0; an infinite cost is never reached).
   *
   * <p>Each worker's costs for the burst's copies form a rising sequence (its cost now, then one step more per copy),
   * and one router placing them one after another takes the smallest of all sequences' next terms each time: the
   * merged order. A heap of the sequences' heads pops the earlier positions in O(n + position x log n). Where costs
   * are equal, one router's uniform choice sends the copies at one value to the workers holding it in a uniformly
   * random order, so the one at this position is any of them alike: those still at the value, and those that passed
   * it at the positions just before.
   */
  static int place(Candidates c, int position) {
    int n = c.size();
    double[] head = c.burstHead();
    double[] step = c.burstStep();
    int[] heap = c.burstHeap();
    for (int i = 0; i < n; i++) {
      heap[i] = i;
    }
    for (int k = n / 2 - 1; k >= 0; k--) {
      siftDown(heap, head, n, k);
    }
    // Workers whose sequence held the value popped last, moved past it (each holds a value at most once).
    int[] passed = c.burstPassed();
    int passedCount = 0;
    double last = Double.NaN;
    for (int p = 0; p < position; p++) {
      int w = heap[0];
      double value = head[w];
      if (value != last) {
        last = value;
        passedCount = 0;
      }
      head[w] = value + step[w];
      if (head[w] != value) {
        passed[passedCount++] = w;
      }
      siftDown(heap, head, n, 0);
    }
    double value = head[heap[0]];
    if (value != last) {
      passedCount = 0;
    }
    int tied = passedCount;
    for (int i = 0; i < n; i++) {
      if (head[i] == value) {
        tied++;
      }
    }
    int pick = tied > 1 ? c.random().nextInt(tied) : 0;
    if (pick < passedCount) {
      return passed[pick];
    }
    pick -= passedCount;
    for (int i = 0; i < n; i++) {
      if (head[i] == value && pick-- == 0) {
        return i;
      }
    }
    throw new AssertionError("burst position " + position + " not found");
  }

  // Restores the min-heap of worker indices ordered by head below slot k (ties by index; any order would do).
  private static void siftDown(int[] heap, double[] head, int n, int k) {
    int w = heap[k];
    while (true) {
      int child = 2 * k + 1;
      if (child >= n) {
        break;
      }
      if (child + 1 < n && before(heap[child + 1], heap[child], head)) {
        child++;
      }
      if (!before(heap[child], w, head)) {
        break;
      }
      heap[k] = heap[child];
      k = child;
    }
    heap[k] = w;
  }

  private static boolean before(int a, int b, double[] head) {
    return head[a] < head[b] || (head[a] == head[b] && a < b);
  }
}
