package io.kvroute.doccheck;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * Test support shared by the modules' README tests (published in core's test-jar): the code a test marks as a
 * README sample, and whether a README shows it verbatim; stateless, thread-safe.
 *
 * <p>A sample is the lines between {@code // <marker>-BEGIN} and {@code     // <marker>-END} in a test's source,
 * written inside a method body (four spaces deeper than a README's code block, which this removes). A README shows it
 * when it holds it as a {@code ```java} block.
 */
public final class ReadmeSnippets {
  private ReadmeSnippets() {}

  /**
   * The marked sample of a test source.
   *
   * @param source the test's source file
   * @param marker the marker's name, for example {@code README-QUICKSTART}
   * @return the sample, unindented by four spaces, lines joined with {@code \n}
   * @throws IOException if the source cannot be read
   */
  public static String marked(Path source, String marker) throws IOException {
    String text = Files.readString(source);
    String block = text.split("// " + marker + "-BEGIN\n")[1].split("    // " + marker + "-END")[0];
    return block.lines().map(l -> l.startsWith("    ") ? l.substring(4) : l).collect(Collectors.joining("\n"));
  }

  /**
   * Whether a README shows a sample as a Java code block.
   *
   * @param readme the README file
   * @param sample the sample, as {@link #marked} returns it
   * @return whether the README holds {@code ```java\n<sample>\n```}
   * @throws IOException if the README cannot be read
   */
  public static boolean shows(Path readme, String sample) throws IOException {
    return Files.readString(readme).contains("```java\n" + sample + "\n```");
  }
}
