package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class SharedPrefixWorkloadTest {

  @Test
  void articleShapeAndDeterminism() {
    SharedPrefixWorkload w = SharedPrefixWorkload.article(7, 3);
    SimRequest r = w.request(10);
    assertEquals(2032 + 339, r.promptTokens().length);
    assertEquals(SharedPrefixWorkload.DEFAULT_OUTPUT_TOKENS, r.maxTokens());
    assertEquals(w.kind(10), r.prefixGroup());
    assertArrayEquals(r.promptTokens(), SharedPrefixWorkload.article(7, 3).request(10).promptTokens());
    assertArrayEquals(r.promptTokens(), SimTokenizer.standard().encode(w.promptText(10)),
        "text and token forms agree");
  }

  @Test
  void sameKindSharesExactlyThePrefix() {
    SharedPrefixWorkload w = SharedPrefixWorkload.article(2, 9);
    int a = 0;
    int b = 1;
    while (w.kind(b) != w.kind(a)) {
      b++;
    }
    int c = 1;
    while (w.kind(c) == w.kind(a)) {
      c++;
    }
    int[] pa = w.request(a).promptTokens();
    int[] pb = w.request(b).promptTokens();
    int[] pc = w.request(c).promptTokens();
    assertArrayEquals(Arrays.copyOf(pa, 2032), Arrays.copyOf(pb, 2032));
    assertFalse(Arrays.equals(Arrays.copyOfRange(pa, 2032, 2048), Arrays.copyOfRange(pb, 2032, 2048)),
        "tails are unique");
    assertFalse(Arrays.equals(Arrays.copyOf(pa, 16), Arrays.copyOf(pc, 16)), "kinds differ from the first block");
  }

  @Test
  void kindsAreRoughlyUniform() {
    SharedPrefixWorkload w = SharedPrefixWorkload.article(12, 4);
    int[] counts = new int[12];
    for (int i = 0; i < 12_000; i++) {
      counts[w.kind(i)]++;
    }
    for (int n : counts) {
      assertTrue(n > 800 && n < 1200, Arrays.toString(counts));
    }
  }

  @Test
  void validatesArguments() {
    assertThrows(IllegalArgumentException.class, () -> SharedPrefixWorkload.newBuilder().prefixKinds(0));
    assertThrows(IllegalArgumentException.class, () -> SharedPrefixWorkload.newBuilder().tailTokens(0));
    assertThrows(IllegalArgumentException.class, () -> SharedPrefixWorkload.article(2, 1).request(-1));
  }
}
