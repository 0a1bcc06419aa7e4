package io.kvroute.jmh;

import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.tokenizers.HfTokenizer;
import io.kvroute.transport.okhttp.OkHttpTokenizer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Tokenizing a chat prompt of about 2,048 Qwen3 tokens: in the gateway ({@link HfTokenizer}: chat template plus
 * encode) against the {@code /tokenize} round trip ({@link OkHttpTokenizer}) to a simulated vLLM worker on loopback,
 * and a multi-turn conversation that grows by one user message, with and without the prefix cache.
 *
 * <ul>
 *   <li>{@code localChat}: the whole body rendered and encoded, no prefix cache (a first turn), with the default
 *       encoder (the pure-Java BPE for Qwen3); {@code localChatNative}: the same with the Rust library (DJL).
 *   <li>{@code localRenderOnly} / {@code localEncodeOnly} ({@code localEncodeOnlyNative}): the two halves of it.
 *   <li>{@code remoteTokenize}: the same body POSTed to the simulator's {@code /tokenize} (its tokenizer is a word
 *       splitter, so this measures the HTTP round trip, not a BPE).
 *   <li>{@code remoteTokenizeRealNative} / {@code remoteTokenizeRealJava}: the same, to a simulator whose
 *       {@code /tokenize} runs the real Qwen3 tokenizer ({@code SimServer.Builder.requestTokenizer}) with the Rust
 *       library (what vLLM runs, less its Python template rendering) or with the pure-Java encoder.
 *   <li>{@code multiTurnCached} / {@code multiTurnUncached}: a 2,048-token history plus a new, never seen user
 *       message each call; with the cache, the history's ids come from the previous turn.
 * </ul>
 *
 * <pre>
 * mvn -q -pl jmh -am package -DskipTests
 * java -jar jmh/target/benchmarks.jar TokenizeBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s
 * </pre>
 * The Qwen3 fixture is read from {@code -Dkvroute.tokenizer.dir=<model dir>}, else from the repository's
 * {@code tokenizers/src/test/resources/io/kvroute/tokenizers/fixtures/qwen3} (run from the repository root).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g", "-Dsun.net.httpserver.nodelay=true"})
@State(Scope.Benchmark)
public class TokenizeBenchmark {
  private static final String[] WORDS = {"the", "cache", "router", "prefix", "token", "worker", "model", "latency",
      "queue", "block", "hash", "request", "你好", "世界", "😀", "42", "don't", "GPU", "vLLM", "Java"};

  private HfTokenizer uncached;
  private HfTokenizer uncachedNative;
  private HfTokenizer cached;
  private HfTokenizer simNative;
  private HfTokenizer simJava;
  private SimServer sim;
  private SimServer realNativeSim;
  private SimServer realJavaSim;
  private OkHttpTokenizer remote;
  private OkHttpTokenizer remoteRealNative;
  private OkHttpTokenizer remoteRealJava;
  private byte[] chat;
  private String rendered;
  private String history;
  private long turn;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Path dir = modelDir();
    uncached = HfTokenizer.newBuilder(dir).prefixCacheBytes(0).build();
    uncachedNative = HfTokenizer.newBuilder(dir).prefixCacheBytes(0).engine(HfTokenizer.Engine.NATIVE).build();
    cached = HfTokenizer.newBuilder(dir).build();
    simNative = HfTokenizer.newBuilder(dir).prefixCacheBytes(0).engine(HfTokenizer.Engine.NATIVE).build();
    simJava = HfTokenizer.newBuilder(dir).prefixCacheBytes(0).engine(HfTokenizer.Engine.JAVA).build();
    SplittableRandom r = new SplittableRandom(2048);
    StringBuilder text = new StringBuilder();
    while (uncached.tokenize(text.toString(), false).length < 2000) {
      text.append(WORDS[r.nextInt(WORDS.length)]).append(r.nextInt(8) == 0 ? ".\n" : " ");
    }
    chat = body("[{\"role\":\"system\",\"content\":\"You are a helpful assistant.\"},{\"role\":\"user\",\"content\":"
        + quote(text.toString()) + "}]");
    rendered = uncached.applyChatTemplate(chat);
    int tokens = uncached.tokenizeRequest(chat).length;
    if (tokens < 2000 || tokens > 2100) {
      throw new IllegalStateException("the chat prompt has " + tokens + " tokens");
    }
    // a history of about 2,048 tokens in 8 turns
    StringBuilder h = new StringBuilder("{\"role\":\"system\",\"content\":\"You are a helpful assistant.\"}");
    String[] parts = text.toString().split("\n");
    for (int i = 0; i < 8; i++) {
      StringBuilder turnText = new StringBuilder();
      for (int j = i; j < parts.length; j += 8) {
        turnText.append(parts[j]).append('\n');
      }
      h.append(",{\"role\":\"").append(i % 2 == 0 ? "user" : "assistant").append("\",\"content\":")
          .append(quote(turnText.toString())).append('}');
    }
    history = h.toString();
    cached.tokenizeRequest(next());
    sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("qwen3").build()).kvEvents(false)
        .speedup(1000).build();
    remote = OkHttpTokenizer.newBuilder().endpoint(sim.baseUri()).build();
    realNativeSim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("qwen3").build())
        .kvEvents(false).speedup(1000).requestTokenizer(simNative::tokenizeRequest).build();
    remoteRealNative = OkHttpTokenizer.newBuilder().endpoint(realNativeSim.baseUri()).build();
    realJavaSim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("qwen3").build())
        .kvEvents(false).speedup(1000).requestTokenizer(simJava::tokenizeRequest).build();
    remoteRealJava = OkHttpTokenizer.newBuilder().endpoint(realJavaSim.baseUri()).build();
    if (!java.util.Arrays.equals(remoteRealNative.tokenizeRequest(chat), uncached.tokenizeRequest(chat))
        || !java.util.Arrays.equals(remoteRealJava.tokenizeRequest(chat), uncachedNative.tokenizeRequest(chat))) {
      throw new IllegalStateException("the real-tokenizer simulators disagree with the local tokenizers");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    sim.close();
    realNativeSim.close();
    realJavaSim.close();
    uncached.close();
    uncachedNative.close();
    cached.close();
    simNative.close();
    simJava.close();
  }

  private byte[] next() {
    turn++;
    return body("[" + history + ",{\"role\":\"user\",\"content\":\"And question number " + turn
        + ": what does the router do with the cache?\"}]");
  }

  private static byte[] body(String messages) {
    return ("{\"model\":\"qwen3\",\"messages\":" + messages + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        default -> out.append(c);
      }
    }
    return out.append('"').toString();
  }

  @Benchmark
  public int[] localChat() {
    return uncached.tokenizeRequest(chat);
  }

  @Benchmark
  public int[] localChatNative() {
    return uncachedNative.tokenizeRequest(chat);
  }

  @Benchmark
  public int[] localEncodeOnlyNative() {
    return uncachedNative.tokenize(rendered, false);
  }

  @Benchmark
  public int[] remoteTokenizeRealNative() throws IOException {
    return remoteRealNative.tokenizeRequest(chat);
  }

  @Benchmark
  public int[] remoteTokenizeRealJava() throws IOException {
    return remoteRealJava.tokenizeRequest(chat);
  }

  @Benchmark
  public String localRenderOnly() {
    return uncached.applyChatTemplate(chat);
  }

  @Benchmark
  public int[] localEncodeOnly() {
    return uncached.tokenize(rendered, false);
  }

  @Benchmark
  public int[] remoteTokenize() throws IOException {
    return remote.tokenizeRequest(chat);
  }

  @Benchmark
  public int[] multiTurnCached() {
    return cached.tokenizeRequest(next());
  }

  @Benchmark
  public int[] multiTurnUncached() {
    return uncached.tokenizeRequest(next());
  }

  private static Path modelDir() throws IOException {
    String configured = System.getProperty("kvroute.tokenizer.dir");
    if (configured != null) {
      return Path.of(configured);
    }
    Path fixtures = Path.of("tokenizers/src/test/resources/io/kvroute/tokenizers/fixtures/qwen3");
    if (!Files.isDirectory(fixtures)) {
      fixtures = Path.of("..").resolve(fixtures);
    }
    if (!Files.isDirectory(fixtures)) {
      throw new IOException("run from the repository root, or set -Dkvroute.tokenizer.dir=<model dir>");
    }
    Path dir = Files.createTempDirectory("kvroute-qwen3-");
    try (InputStream in = new GZIPInputStream(Files.newInputStream(fixtures.resolve("tokenizer.json.gz")));
        OutputStream out = Files.newOutputStream(dir.resolve("tokenizer.json"))) {
      in.transferTo(out);
    }
    Files.copy(fixtures.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
    return dir;
  }
}
