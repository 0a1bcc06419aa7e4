package io.kvroute.examples;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The command-line conventions the experiment programs share: parse or exit with the usage, and the option values
 * they have in common; stateless and thread-safe.
 */
final class Cli {
  private Cli() {}

  /**
   * Parses {@code args}; on a bad option prints {@code error: ...} and the usage to standard error and exits with
   * status 2; on {@code --help} prints the usage to standard output.
   *
   * @return the options, or null when the help was asked for (the caller returns)
   */
  static <T> @Nullable T parseOrExit(String[] args, Function<String[], T> parse, Predicate<T> help, String usage) {
    T options;
    try {
      options = parse.apply(args);
    } catch (IllegalArgumentException e) {
      System.err.println("error: " + e.getMessage());
      System.err.println(usage);
      System.exit(2);
      return null;
    }
    if (help.test(options)) {
      System.out.println(usage);
      return null;
    }
    return options;
  }

  /**
   * Parses a positive integer.
   *
   * @throws IllegalArgumentException naming {@code option} if {@code value} is not one
   */
  static int positive(String value, String option) {
    int v;
    try {
      v = Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " needs a positive integer but got '" + value + "'");
    }
    if (v <= 0) {
      throw new IllegalArgumentException(option + " needs a positive integer but got " + v);
    }
    return v;
  }

  /**
   * Parses a comma-separated list of positive integers.
   *
   * @throws IllegalArgumentException naming {@code option} if an element is not one
   */
  static int[] positives(String value, String option) {
    return Arrays.stream(value.split(",")).mapToInt(s -> positive(s, option)).toArray();
  }

  /**
   * Parses a comma-separated list of built-in policy names ({@link ArticleExperiment#POLICIES}).
   *
   * @throws IllegalArgumentException if a name is unknown
   */
  static List<String> policies(String value) {
    List<String> chosen = new ArrayList<>();
    for (String name : value.split(",")) {
      if (!ArticleExperiment.POLICIES.containsKey(name.trim())) {
        throw new IllegalArgumentException("unknown policy '" + name + "'; known: "
            + ArticleExperiment.POLICIES.keySet());
      }
      chosen.add(name.trim());
    }
    return chosen;
  }
}
