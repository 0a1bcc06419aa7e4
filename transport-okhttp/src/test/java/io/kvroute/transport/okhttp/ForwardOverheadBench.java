package io.kvroute.transport.okhttp;

import io.kvroute.Router;
import io.kvroute.RouterPolicy;
import io.kvroute.Worker;
import io.kvroute.WorkerId;
import io.kvroute.sim.SimEngineConfig;
import io.kvroute.sim.SimServer;
import io.kvroute.sim.SimTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;

/**
 * Measures what forwarding adds to a request, against one simulated worker on loopback; a program, not a test
 * (the README quotes its output). Run from the module folder:
 *
 * <pre>{@code
 * mvn -o -q test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * java -Dsun.net.httpserver.nodelay=true -Dn=300 -cp target/test-classes:target/classes:$(cat target/cp.txt) \
 *     io.kvroute.transport.okhttp.ForwardOverheadBench
 * }</pre>
 */
final class ForwardOverheadBench {
  private ForwardOverheadBench() {}

  public static void main(String[] args) throws Exception {
    Router router = Router.newBuilder().policy(RouterPolicy.kvAware()).build();
    WorkerId id = WorkerId.of("w");
    try (SimServer sim = SimServer.newBuilder().engine(SimEngineConfig.newBuilder().modelName("m").build())
        .kvEvents(false).speedup(1000).eventListener(e -> router.eventSink().applyAll(id, e)).build()) {
      router.addWorker(Worker.of(id, sim.baseUri()));
      StringBuilder words = new StringBuilder();
      for (int i = 0; i < 128; i++) words.append(" w").append(i);
      String prompt = words.toString().trim();
      byte[] body = ("{\"model\":\"m\",\"prompt\":\"" + prompt + "\",\"max_tokens\":1}")
          .getBytes(StandardCharsets.UTF_8);
      int[] tokens = SimTokenizer.standard().encode(prompt);
      OkHttpClient client = new OkHttpClient();
      OkHttpTokenizer tokenizer = OkHttpTokenizer.newBuilder().client(client).endpoint(sim.baseUri()).build();
      RoutingForwarder withTokens = RoutingForwarder.newBuilder(router).client(client).build();
      RoutingForwarder withTokenizer = RoutingForwarder.newBuilder(router).client(client).tokenizer(tokenizer).build();
      int n = Integer.getInteger("n", 100);
      for (int round = 0; round < 2; round++) {
        long[] direct = new long[n], fwd = new long[n], tok = new long[n], fwdTok = new long[n];
        for (int i = 0; i < n; i++) {
          long t0 = System.nanoTime();
          try (Response r = client.newCall(new Request.Builder().url(sim.baseUri() + "/v1/completions")
              .post(RequestBody.create(body, MediaType.get("application/json"))).build()).execute()) {
            r.body().string();
          }
          long t1 = System.nanoTime();
          try (ForwardedResponse r = withTokens.forward(
              ForwardRequest.newBuilder("/v1/completions", body).tokens(tokens).build())) {
            r.body().string();
          }
          long t2 = System.nanoTime();
          tokenizer.tokenize("m", prompt);
          long t3 = System.nanoTime();
          try (ForwardedResponse r = withTokenizer.forward(
              ForwardRequest.newBuilder("/v1/completions", body).build())) {
            r.body().string();
          }
          long t4 = System.nanoTime();
          direct[i] = t1 - t0; fwd[i] = t2 - t1; tok[i] = t3 - t2; fwdTok[i] = t4 - t3;
        }
        System.out.printf("round %d, %d requests each, 128-token prompt, 1 output token, median (p90) us:%n", round, n);
        System.out.printf("  direct OkHttp call        %s%n", stats(direct));
        System.out.printf("  forward (tokens given)    %s%n", stats(fwd));
        System.out.printf("  tokenize call             %s%n", stats(tok));
        System.out.printf("  forward (via /tokenize)   %s%n", stats(fwdTok));
      }
    }
  }

  static String stats(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    return String.format("%.0f (%.0f)", s[s.length / 2] / 1e3, s[s.length * 9 / 10] / 1e3);
  }
}
