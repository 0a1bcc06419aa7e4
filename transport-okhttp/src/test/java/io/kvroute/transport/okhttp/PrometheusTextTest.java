package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PrometheusTextTest {
  static String resource(String name) throws IOException {
    try (InputStream in = Objects.requireNonNull(PrometheusTextTest.class.getResourceAsStream(name), name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static List<PrometheusText.Sample> all(String text) {
    List<PrometheusText.Sample> samples = new ArrayList<>();
    int malformed = PrometheusText.parse(text, name -> true, samples::add);
    assertEquals(0, malformed, "malformed lines in " + text);
    return samples;
  }

  private static int malformed(String text) {
    return PrometheusText.parse(text, name -> true, s -> {});
  }

  @Test
  void readsEverySampleOfAVllmV1Exposition() throws IOException {
    String text = resource("vllm-v1-metrics.txt");
    List<PrometheusText.Sample> samples = all(text);
    long sampleLines = text.lines().filter(l -> !l.isBlank() && !l.startsWith("#")).count();
    assertEquals(sampleLines, samples.size());

    PrometheusText.Sample running = samples.stream().filter(s -> s.name().equals("vllm:num_requests_running"))
        .findFirst().orElseThrow();
    assertEquals(Map.of("engine", "0", "model_name", "Qwen/Qwen3-8B"), running.labels());
    assertEquals(3.0, running.value());
    assertEquals(Long.MIN_VALUE, running.timestampMillis());

    PrometheusText.Sample inf = samples.stream()
        .filter(s -> s.name().equals("vllm:time_to_first_token_seconds_bucket") && "+Inf".equals(s.labels().get("le")))
        .findFirst().orElseThrow();
    assertEquals(42.0, inf.value());
    PrometheusText.Sample nan = samples.stream().filter(s -> s.name().equals("vllm:spec_decode_acceptance_length"))
        .findFirst().orElseThrow();
    assertTrue(Double.isNaN(nan.value()));
    PrometheusText.Sample created = samples.stream()
        .filter(s -> s.name().equals("vllm:prefix_cache_queries_created")).findFirst().orElseThrow();
    assertEquals(1.7530312345678e9, created.value());
    PrometheusText.Sample info = samples.stream().filter(s -> s.name().equals("vllm:cache_config_info"))
        .findFirst().orElseThrow();
    assertEquals("9362", info.labels().get("num_gpu_blocks"));
    assertEquals(8, info.labels().size());
    PrometheusText.Sample lora = samples.stream().filter(s -> s.name().equals("vllm:lora_requests_info"))
        .findFirst().orElseThrow();
    assertEquals("", lora.labels().get("running_lora_adapters"));
    PrometheusText.Sample vm = samples.stream().filter(s -> s.name().equals("process_virtual_memory_bytes"))
        .findFirst().orElseThrow();
    assertEquals(9.1637395456e10, vm.value());
    assertEquals(Map.of(), vm.labels());
  }

  @Test
  void filtersByNameWithoutCountingOtherLines() throws IOException {
    List<String> names = new ArrayList<>();
    int malformed = PrometheusText.parse(resource("vllm-v1-metrics.txt"), "vllm:num_requests_waiting"::equals,
        s -> names.add(s.name()));
    assertEquals(List.of("vllm:num_requests_waiting"), names); // not the _by_reason metric sharing its prefix
    assertEquals(0, malformed);
  }

  @Test
  void unescapesLabelValues() {
    List<PrometheusText.Sample> samples = all(
        "m{path=\"C:\\\\dir\\\\x\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",brace=\"}{,=\",other=\"\\t\"} 1\n");
    Map<String, String> labels = samples.get(0).labels();
    assertEquals("C:\\dir\\x", labels.get("path"));
    assertEquals("say \"hi\"", labels.get("quote"));
    assertEquals("a\nb", labels.get("nl"));
    assertEquals("}{,=", labels.get("brace"));
    assertEquals("\\t", labels.get("other")); // not an escape of the format: kept as written
  }

  @Test
  void readsSpecialValuesAndTimestamps() {
    List<PrometheusText.Sample> s = all(String.join("\n",
        "a NaN", "b +Inf", "c -Inf", "d Inf", "e 1.5e3 1712345678901", "f{x=\"1\"} -0.25 -5", "g 7 1712345678.5",
        "h 2 # {trace_id=\"abc\"} 1.0 1712345678.1", "i 3 1000 # {trace_id=\"abc\"} 1.0", "j  4\t 9", "k 1e-3", ""));
    assertEquals(11, s.size());
    assertTrue(Double.isNaN(s.get(0).value()));
    assertEquals(Double.POSITIVE_INFINITY, s.get(1).value());
    assertEquals(Double.NEGATIVE_INFINITY, s.get(2).value());
    assertEquals(Double.POSITIVE_INFINITY, s.get(3).value());
    assertEquals(1500.0, s.get(4).value());
    assertEquals(1712345678901L, s.get(4).timestampMillis());
    assertEquals(-0.25, s.get(5).value());
    assertEquals(-5, s.get(5).timestampMillis());
    assertEquals(1712345678500L, s.get(6).timestampMillis());
    assertEquals(2.0, s.get(7).value());
    assertEquals(Long.MIN_VALUE, s.get(7).timestampMillis());
    assertEquals(1000, s.get(8).timestampMillis());
    assertEquals(4.0, s.get(9).value());
    assertEquals(9, s.get(9).timestampMillis());
    assertEquals(0.001, s.get(10).value());
  }

  @Test
  void toleratesCrlfBlankLinesCommentsTrailingCommasAndEof() {
    List<PrometheusText.Sample> s = all("# HELP a x\r\n# TYPE a gauge\r\na{x=\"1\",} 1\r\n\r\n   \n"
        + "# some comment\nb { x = \"2\" , y=\"3\" } 2\n# EOF\n");
    assertEquals(2, s.size());
    assertEquals(Map.of("x", "1"), s.get(0).labels());
    assertEquals(Map.of("x", "2", "y", "3"), s.get(1).labels());
    assertEquals(2.0, s.get(1).value());
  }

  @Test
  void readsPrometheus3QuotedNames() {
    List<PrometheusText.Sample> s = all("{\"my.metric\",env=\"prod\"} 5\n{\"other.metric\"} 6\n"
        + "m{\"label.with.dots\"=\"v\"} 7\n");
    assertEquals("my.metric", s.get(0).name());
    assertEquals(Map.of("env", "prod"), s.get(0).labels());
    assertEquals("other.metric", s.get(1).name());
    assertEquals(6.0, s.get(1).value());
    assertEquals(Map.of("label.with.dots", "v"), s.get(2).labels());
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "m{a=\"b\" 1", "m{a=b} 1", "m{a=\"b\"}1", "{} 1", "m 1 2 3", "m 1d", "m 0x10", "9m 1", "m",
      "m{a=\"1\",a=\"2\"} 1",
      "m{a=\"unterminated} 1", "m 1 notatime", "m-1 2", "m{=\"x\"} 1", "m +", "\u0000\u0001 1", "m{a=\"x\"}"})
  void countsAndSkipsMalformedLines(String line) {
    List<PrometheusText.Sample> samples = new ArrayList<>();
    int malformed = PrometheusText.parse("good 1\n" + line + "\nalso_good 2\n", n -> true, samples::add);
    assertEquals(1, malformed, line);
    assertEquals(List.of("good", "also_good"), samples.stream().map(PrometheusText.Sample::name).toList());
  }

  /** Values Go's {@code strconv.ParseFloat} refuses, so Prometheus refuses the line; each was read as a number. */
  @ParameterizedTest
  @ValueSource(strings = {"--3", "+-3", "-+3", "++1", "3-", "1e", "1e+", ".", "-.", "1.2.3", "1e5e5", "1d", "1f",
      "0x10", "0x1.8", "0xp1", "+NaN", "-nan", "1__0", "_1", "1_", "1_.5", "1e400", "-1e400", "0x1p99999", "Infx",
      "in", "1 e3", "e3", "0x", "٣"})
  void valuesOutsideGosFloatSyntaxAreMalformed(String value) {
    List<PrometheusText.Sample> samples = new ArrayList<>();
    int malformed = PrometheusText.parse("m " + value + "\n", n -> true, samples::add);
    assertEquals(1, malformed, value);
    assertEquals(List.of(), samples, value);
  }

  /** Go's float syntax (decimal, hexadecimal with a binary exponent, digit-separating underscores, Inf, NaN). */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
      "3|3", "-3|-3", "+3|3", "1.|1", ".5|0.5", "-.5|-0.5", "1.5e3|1500", "1.5E-3|0.0015", "2e+2|200",
      "0x1p3|8", "0X1.8P1|3", "-0x.8p1|-1", "0x1p-2|0.25", "1_000|1000", "1_0.2_5|10.25", "1e1_0|1e10",
      "0x_1p0|1", "+Inf|Infinity", "-inf|-Infinity", "infinity|Infinity", "-Infinity|-Infinity", "NaN|NaN",
      "nan|NaN", "1e-400|0", "-0|-0.0"})
  void valuesInGosFloatSyntaxAreRead(String value, double expected) {
    List<PrometheusText.Sample> samples = new ArrayList<>();
    assertEquals(0, PrometheusText.parse("m " + value + "\n", n -> true, samples::add), value);
    assertEquals(1, samples.size(), value);
    assertEquals(expected, samples.get(0).value(), value);
  }

  @Test
  void garbageNeverThrows() {
    java.util.SplittableRandom random = new java.util.SplittableRandom(42);
    for (int round = 0; round < 200; round++) {
      StringBuilder sb = new StringBuilder();
      int n = random.nextInt(2000);
      for (int i = 0; i < n; i++) {
        sb.append((char) random.nextInt(0x80));
      }
      int malformed = malformed(sb.toString());
      assertTrue(malformed >= 0 && malformed <= sb.length() + 1, "seed 42 round " + round);
    }
  }
}
