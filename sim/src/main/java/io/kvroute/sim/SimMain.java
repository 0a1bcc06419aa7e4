package io.kvroute.sim;

import io.kvroute.internal.Checks;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Path;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;

/**
 * Runs one simulated vLLM worker in its own process, as a real deployment runs one engine per process, so that it
 * can be killed ({@code kill -9}), hung ({@code kill -STOP}) and restarted with a cold cache; not thread-safe (a
 * command-line program).
 *
 * <pre>{@code
 * java -cp <kvroute-sim and its dependencies> io.kvroute.sim.SimMain [--port 0] [--events-port 0]
 *     [--replay-port 0] [--no-events] [--blocks 585] [--speedup 1] [--model kvroute-sim] [--max-tokens 64]
 *     [--log-requests] [--tokenizer DIR]
 * }</pre>
 *
 * <p>{@code --tokenizer DIR} tokenizes text prompts and chats with the model directory's {@code tokenizer.json} and
 * chat template (kvroute-tokenizers' {@code HfTokenizer}, which must be on the class path: the examples jar has
 * it), as vLLM serving that model would, instead of {@link SimTokenizer}: a gateway that tokenizes locally with the
 * same files then predicts the block hashes the simulator caches. kvroute-tokenizers is found at run time, not
 * declared: it depends on transport-okhttp, whose tests run this simulator.
 *
 * <p>Port 0 (the default) picks a free port. Once serving, it prints one line to standard output:
 * {@code READY http=http://127.0.0.1:P events=tcp://127.0.0.1:E replay=tcp://127.0.0.1:R model=M} ({@code events=-}
 * with {@code --no-events}). With {@code --log-requests}, each generation request prints
 * {@code REQUEST <path> <X-Request-Id or ->} as it arrives, flushed at once, so that a test can count what reached
 * the engine even after a {@code kill -9}. SIGTERM (or Ctrl-C) closes the server: streams in flight are aborted,
 * as vLLM's are, never ended with {@code data: [DONE]}.
 *
 * <p>Exit status 2 for bad arguments, 1 if the ports cannot be bound.
 */
public final class SimMain {
  private SimMain() {}

  /**
   * Starts the worker and blocks until the JVM shuts down.
   *
   * @param args the options above
   * @throws InterruptedException if the main thread is interrupted while waiting for shutdown
   */
  public static void main(String[] args) throws InterruptedException {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    SimServer.Builder builder;
    try {
      builder = parse(args, out);
    } catch (IllegalArgumentException e) {
      System.err.println("SimMain: " + e.getMessage());
      System.err.println("usage: SimMain [--port P] [--events-port P] [--replay-port P] [--no-events] [--blocks N]"
          + " [--speedup X] [--model NAME] [--max-tokens N] [--log-requests] [--tokenizer DIR]");
      System.exit(2);
      return;
    }
    SimServer server;
    try {
      server = builder.build();
    } catch (IOException | RuntimeException e) {
      System.err.println("SimMain: cannot start: " + e);
      System.exit(1);
      return;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "kvroute-sim-shutdown"));
    String events = server.kvEventsEndpoint();
    String replay = server.kvEventsReplayEndpoint();
    out.println("READY http=" + server.baseUri() + " events=" + (events == null ? "-" : events) + " replay="
        + (replay == null ? "-" : replay) + " model=" + server.config().modelName());
    stopped.await();
  }

  /** Reads the options into a server builder; {@code out} hears logged requests. */
  static SimServer.Builder parse(String[] args, PrintStream out) {
    SimEngineConfig.Builder engine = SimEngineConfig.newBuilder().modelName("kvroute-sim");
    SimServer.Builder server = SimServer.newBuilder();
    String host = "127.0.0.1";
    int eventsPort = 0;
    int replayPort = 0;
    for (int i = 0; i < args.length; i++) {
      String option = args[i];
      try {
        i = apply(args, i, engine, server, out);
      } catch (IllegalArgumentException e) {
        throw e.getMessage() != null && e.getMessage().startsWith(option) ? e
            : new IllegalArgumentException(option + ": " + e.getMessage(), e);
      }
      if (option.equals("--host")) {
        host = args[i];
      } else if (option.equals("--events-port")) {
        eventsPort = port(intValue(args, i, option), option);
      } else if (option.equals("--replay-port")) {
        replayPort = port(intValue(args, i, option), option);
      }
    }
    return server.host(host).engine(engine.build())
        .kvEventsEndpoint("tcp://" + host + ":" + eventsPort)
        .kvEventsReplayEndpoint("tcp://" + host + ":" + replayPort);
  }

  /** Applies the option at {@code args[i]}; returns the index of its last argument. */
  private static int apply(String[] args, int i, SimEngineConfig.Builder engine, SimServer.Builder server,
      PrintStream out) {
    String option = args[i];
    switch (option) {
      case "--no-events" -> server.kvEvents(false);
      case "--log-requests" -> server.requestListener((path, id) -> out.println("REQUEST " + path + " "
          + (id == null ? "-" : id)));
      case "--port" -> server.port(intValue(args, ++i, option));
      case "--events-port", "--replay-port" -> port(intValue(args, ++i, option), option);
      case "--blocks" -> engine.numBlocks(intValue(args, ++i, option));
      case "--max-tokens" -> engine.defaultMaxTokens(intValue(args, ++i, option));
      case "--model" -> engine.modelName(value(args, ++i, option));
      case "--host" -> value(args, ++i, option);
      case "--tokenizer" -> server.requestTokenizer(loadTokenizer(value(args, ++i, option)));
      case "--speedup" -> {
        String v = value(args, ++i, option);
        try {
          server.speedup(Double.parseDouble(v));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException(option + " must be a number but was " + v);
        }
      }
      default -> throw new IllegalArgumentException(option + " is not an option");
    }
    return i;
  }

  /** kvroute-tokenizers' tokenizer, looked up at run time (see the class comment). */
  static final String HF_TOKENIZER = "io.kvroute.tokenizers.HfTokenizer";

  /**
   * Loads {@code HfTokenizer.load(dir)} and adapts its {@code tokenizeRequest(byte[])}.
   *
   * @throws IllegalArgumentException if kvroute-tokenizers is not on the class path or the directory does not load
   */
  static RequestTokenizer loadTokenizer(String dir) {
    Class<?> type;
    try {
      type = Class.forName(HF_TOKENIZER);
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException("--tokenizer needs kvroute-tokenizers on the class path (the examples "
          + "jar has it)");
    }
    Object tokenizer;
    MethodHandle tokenize;
    try {
      tokenizer = type.getMethod("load", Path.class).invoke(null, Path.of(dir));
      tokenize = MethodHandles.publicLookup().findVirtual(type, "tokenizeRequest",
          MethodType.methodType(int[].class, byte[].class)).bindTo(tokenizer);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new IllegalArgumentException("--tokenizer " + dir + ": " + cause.getMessage(), cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException("--tokenizer: " + HF_TOKENIZER + " has no load(Path) or "
          + "tokenizeRequest(byte[]): " + e, e);
    }
    MethodHandle bound = tokenize;
    return body -> {
      try {
        return (int[]) bound.invokeExact(body);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IllegalStateException(t);
      }
    };
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args[i];
  }

  private static int intValue(String[] args, int i, String option) {
    String v = value(args, i, option);
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " must be an integer but was " + v);
    }
  }

  private static int port(int port, String option) {
    return Checks.inRange(option, port, 0, 65_535);
  }
}
