package io.kvroute.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.openai.ChatMessage;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SimTokenizerTest {
  private final SimTokenizer tokenizer = SimTokenizer.standard();

  @Test
  void oneTokenPerWhitespaceSeparatedWord() {
    int[] ids = tokenizer.encode("  the cat\tsat\n on the mat ");
    assertEquals(6, ids.length);
    assertEquals(ids[0], ids[4], "equal words give equal ids");
    assertNotEquals(ids[0], ids[1]);
    assertEquals(0, tokenizer.encode("   ").length);
    assertEquals(6, tokenizer.count("the cat sat on the mat"));
  }

  @Test
  void idsAreStableAcrossInstancesAndProcesses() {
    // Pinned values: the tokenizer is a fixed function, shared by the simulator and its clients.
    assertArrayEquals(tokenizer.encode("hello world"), SimTokenizer.of(SimTokenizer.DEFAULT_VOCABULARY_SIZE)
        .encode("hello world"));
    int[] small = SimTokenizer.of(100).encode("hello world");
    for (int id : small) {
      assertTrue(id >= SimTokenizer.FIRST_WORD_ID && id < 100, "id in range: " + id);
    }
  }

  @ParameterizedTest(name = "seed {0}")
  @ValueSource(longs = {1, 2, 3})
  void sharedWordPrefixGivesSharedTokenPrefix(long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    StringBuilder common = new StringBuilder();
    for (int i = 0; i < 50; i++) {
      common.append(" w").append(random.nextInt(1000));
    }
    int[] a = tokenizer.encode(common + " alpha beta");
    int[] b = tokenizer.encode(common + " gamma");
    for (int i = 0; i < 50; i++) {
      assertEquals(a[i], b[i]);
    }
    assertNotEquals(a[50], b[50]);
  }

  @Test
  void chatTemplateWrapsEachMessageAndOpensTheAssistantTurn() {
    int[] ids = tokenizer.encodeChat(List.of(new ChatMessage("system", "be brief"), ChatMessage.user("hi there")));
    // <s> role:system be brief </s> <s> role:user hi there </s> <s> role:assistant
    assertEquals(2 + 2 + 1 + 2 + 2 + 1 + 2, ids.length);
    assertEquals(SimTokenizer.IM_START, ids[0]);
    assertEquals(SimTokenizer.IM_END, ids[4]);
    assertEquals(SimTokenizer.IM_START, ids[5]);
    assertEquals(SimTokenizer.IM_START, ids[ids.length - 2]);
    assertArrayEquals(tokenizer.encode("be brief"), new int[] {ids[2], ids[3]});
    int[] userOnly = tokenizer.encodeChat(List.of(ChatMessage.user("hi there")));
    assertNotEquals(ids[1], userOnly[1], "roles are part of the template");
  }

  @Test
  void rejectsBadArguments() {
    assertThrows(IllegalArgumentException.class, () -> SimTokenizer.of(SimTokenizer.FIRST_WORD_ID));
    assertThrows(NullPointerException.class, () -> tokenizer.encode(null));
    assertThrows(NullPointerException.class, () -> new ChatMessage("user", null));
  }
}
