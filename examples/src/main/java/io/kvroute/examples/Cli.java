package io.kvroute.examples;

import io.kvroute.sim.SharedPrefixWorkload;
import io.kvroute.sim.SimEngineConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
   * The options every experiment takes, with their defaults, and the one parse loop: {@code -h}/{@code --help},
   * the program's value-less flags, then {@code --name value} pairs, the program's own first, then the shared ones;
   * an unknown option fails. Not thread-safe (filled by one thread, then read).
   */
  abstract static class Options {
    int[] kinds = {2, 7, 12, 24};
    List<String> policies;
    int workers = 6;
    int concurrency = 8;
    int requests = 240;
    int runs = 3;
    int blocks = SimEngineConfig.DEFAULT_NUM_BLOCKS;
    int outputTokens = SharedPrefixWorkload.DEFAULT_OUTPUT_TOKENS;
    long seed = 1;
    boolean help;
    private final Set<String> given = new HashSet<>();

    Options(List<String> defaultPolicies) {
      this.policies = defaultPolicies;
    }

    /**
     * Takes a value-less flag of this program.
     *
     * @return whether {@code arg} is one
     */
    boolean flag(String arg) {
      return false;
    }

    /**
     * Takes an option of this program.
     *
     * @return whether {@code arg} is one
     * @throws IllegalArgumentException naming the option if {@code value} is bad
     */
    abstract boolean option(String arg, String value);

    /**
     * Whether the command line named {@code option} (to tell a default from a choice).
     *
     * @return true if it was given
     */
    final boolean given(String option) {
      return given.contains(option);
    }

    /**
     * Fills these options from {@code args}.
     *
     * @throws IllegalArgumentException on an unknown option, a missing value or a bad one
     */
    final void read(String[] args) {
      for (int i = 0; i < args.length; i++) {
        String arg = args[i];
        if (arg.equals("-h") || arg.equals("--help")) {
          help = true;
        } else if (!flag(arg)) {
          String value = valueAfter(args, i++);
          if (!option(arg, value) && !shared(arg, value)) {
            throw new IllegalArgumentException("unknown option " + arg);
          }
        }
        given.add(arg);
      }
    }

    private boolean shared(String arg, String value) {
      switch (arg) {
        case "--kinds" -> kinds = positives(value, arg);
        case "--policies" -> policies = Cli.policies(value);
        case "--workers" -> workers = positive(value, arg);
        case "--concurrency" -> concurrency = positive(value, arg);
        case "--requests" -> requests = positive(value, arg);
        case "--runs" -> runs = positive(value, arg);
        case "--blocks" -> blocks = positive(value, arg);
        case "--output-tokens" -> outputTokens = positive(value, arg);
        case "--seed" -> seed = integer(value, arg);
        default -> {
          return false;
        }
      }
      return true;
    }
  }

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
   * The value of the option at {@code args[i]}.
   *
   * @return {@code args[i + 1]}
   * @throws IllegalArgumentException if the option is the last argument
   */
  static String valueAfter(String[] args, int i) {
    if (i + 1 >= args.length) {
      throw new IllegalArgumentException("missing value after " + args[i]);
    }
    return args[i + 1];
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
   * Parses an integer.
   *
   * @throws IllegalArgumentException naming {@code option} if {@code value} is not one
   */
  static long integer(String value, String option) {
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " needs an integer but got '" + value + "'");
    }
  }

  /**
   * Parses a finite number, positive or, if {@code zeroAllowed}, zero or more.
   *
   * @throws IllegalArgumentException naming {@code option} if {@code value} is not one
   */
  static double number(String value, String option, boolean zeroAllowed) {
    double v;
    try {
      v = Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " needs a number but got '" + value + "'");
    }
    if (!(zeroAllowed ? v >= 0 : v > 0) || Double.isInfinite(v)) {
      throw new IllegalArgumentException(option + (zeroAllowed ? " must be finite and >= 0" : " must be finite and > 0")
          + " but was " + value);
    }
    return v;
  }

  /**
   * Parses milliseconds ({@link #number}) into nanoseconds.
   *
   * @throws IllegalArgumentException naming {@code option} if {@code value} is not a valid number of milliseconds
   */
  static long millisAsNanos(String value, String option, boolean zeroAllowed) {
    return Math.round(number(value, option, zeroAllowed) * 1e6);
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
