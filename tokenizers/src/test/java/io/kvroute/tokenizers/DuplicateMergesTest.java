package io.kvroute.tokenizers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A {@code tokenizer.json} whose merges list a pair twice: the Hugging Face library collects the merges into a hash
 * map in file order, so the later line's rank replaces the earlier one, and the pure-Java encoder must rank the pair
 * the same way. The Rust library (through DJL) is the reference.
 */
class DuplicateMergesTest {
  /** Texts where whitespace runs, and the first merges' pairs, compete with other merges. */
  private static final List<String> TEXTS = List.of("a  b   c    d     e", "if  x:\n    return  y\n\n\n",
      "  leading and trailing  ", "\t\t tab  mix \t ", "the  then  there  other", "inin  ining  in in",
      "er er  ererer  her", "0000  1111   2222");

  @Test
  void aPairListedTwiceTakesTheRankOfItsLastLine() throws IOException {
    TokenizerFiles files = TestModels.files(TestModels.QWEN3);
    ObjectNode root = (ObjectNode) TokenizerFiles.JSON.readTree(files.tokenizerJsonText);
    ArrayNode merges = (ArrayNode) root.get("model").get("merges");
    // the first few merges (the most frequent pairs) listed again at the very end: lowest priority if the last
    // line's rank counts, unchanged if the first one's does
    for (int rank = 0; rank < 8; rank++) {
      JsonNode m = merges.get(rank);
      merges.add(m.deepCopy());
    }
    String modified = TokenizerFiles.JSON.writeValueAsString(root);

    try (NativeTokenizer original = NativeTokenizer.load(files.tokenizerJsonText, files.tokenizerJson);
        NativeTokenizer reference = NativeTokenizer.load(modified, files.tokenizerJson)) {
      ByteLevelBpe.Result java = ByteLevelBpe.create(modified, files.addedTokens, ByteLevelBpe.REFUSE);
      assertTrue(java.encoder() != null, String.valueOf(java.unsupported()));
      boolean changed = false;
      for (String text : TEXTS) {
        int[] expected = reference.encode(text, false);
        changed |= !Arrays.equals(expected, original.encode(text, false));
        assertArrayEquals(expected, java.encoder().encode(text, false), "duplicate merges: " + text);
      }
      // the duplicates must matter to the reference, or this test could not tell first rank from last
      assertTrue(changed, "the re-listed merges changed no encoding of the reference");
    }
  }
}
