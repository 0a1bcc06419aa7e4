package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The sender's dictionary and a receiver's, fed the same stream of prompts (a tree of prefixes with their own
 * tails, as sequence hashes are: a block's hash stands for the whole prefix before it), agree on every prefix the
 * sender refers to, and the receiver rebuilds the prompt exactly. The longest prefix is checked against an
 * independent model: the longest prefix ending at a key position (every 8th block, or the last) that a prompt among
 * the newest ones within the block budget holds at a key position of its own.
 */
class PromptDictionaryTest {
  static Stream<Arguments> seeds() {
    return LongStream.rangeClosed(1, 30).mapToObj(Arguments::of);
  }

  private static boolean isKey(int p, int length) {
    return p == length - 1 || (p + 1) % PromptDictionary.STRIDE == 0;
  }

  /** The model's answer over the retained prompts, newest last. */
  private static int modelLongest(List<long[]> retained, long[] prompt) {
    for (int p = prompt.length - 1; p >= 0; p--) {
      if (!isKey(p, prompt.length)) {
        continue;
      }
      for (long[] q : retained) {
        if (q.length > p && isKey(p, q.length) && q[p] == prompt[p]) {
          return p + 1;
        }
      }
    }
    return 0;
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void senderAndReceiverAgreeAndRenewalsRebuildExactly(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    int budget = 200 + random.nextInt(2000);
    PromptDictionary sender = new PromptDictionary(budget);
    PromptDictionary receiver = new PromptDictionary(budget);
    List<long[]> prompts = new ArrayList<>();
    ArrayDeque<long[]> retained = new ArrayDeque<>();
    long retainedBlocks = 0;
    int renewals = 0;
    for (int i = 0; i < 400; i++) {
      long[] prompt;
      if (prompts.isEmpty() || random.nextInt(4) == 0) {
        prompt = random.longs(1 + random.nextInt(150)).toArray(); // a new root
      } else {
        long[] parent = prompts.get(random.nextInt(prompts.size()));
        int keep = 1 + random.nextInt(parent.length);
        int tail = random.nextInt(4) == 0 ? 0 : 1 + random.nextInt(40);
        prompt = Arrays.copyOf(parent, keep + tail);
        for (int t = keep; t < prompt.length; t++) {
          prompt[t] = random.nextLong();
        }
      }
      prompts.add(prompt);
      int ref = sender.longestPrefix(prompt, prompt.length);
      assertEquals(modelLongest(new ArrayList<>(retained), prompt), ref, "seed " + seed + " prompt " + i);
      if (ref > 0) {
        renewals++;
        long[] rebuilt = new long[prompt.length];
        assertTrue(receiver.copyPrefix(prompt[ref - 1], ref, rebuilt), "the receiver holds the prefix");
        System.arraycopy(prompt, ref, rebuilt, ref, prompt.length - ref);
        assertArrayEquals(prompt, rebuilt, "rebuilt exactly");
      }
      sender.register(prompt, prompt.length);
      receiver.register(prompt, prompt.length);
      retained.addLast(prompt);
      retainedBlocks += prompt.length;
      while (retainedBlocks > budget && retained.size() > 1) {
        retainedBlocks -= retained.pollFirst().length;
      }
      assertEquals(retainedBlocks, sender.blocks());
      assertEquals(sender.blocks(), receiver.blocks());
    }
    assertTrue(renewals > 0, "the stream shares prefixes, so some prompts are renewals");
  }

  @Test
  void clearedOrMissingPrefixesAreNotFound() {
    PromptDictionary d = new PromptDictionary();
    long[] p = LongStream.rangeClosed(1, 20).toArray();
    d.register(p, 20);
    long[] dst = new long[20];
    assertTrue(d.copyPrefix(8, 8, dst), "block 8 is a key");
    assertArrayEquals(Arrays.copyOf(p, 8), Arrays.copyOf(dst, 8));
    assertTrue(d.copyPrefix(20, 20, dst), "the last block is a key");
    assertFalse(d.copyPrefix(7, 7, dst), "block 7 is not a key");
    assertFalse(d.copyPrefix(8, 9, dst), "a key at another position");
    assertFalse(d.copyPrefix(8, 0, dst));
    assertEquals(16, d.longestPrefix(new long[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 99}, 17));
    d.clear();
    assertFalse(d.copyPrefix(8, 8, dst));
    assertEquals(0, d.longestPrefix(p, 20));
    assertEquals(0, d.blocks());
  }
}
