/**
 * kvroute's OpenAI wire format: the parsed request body and chat messages. No dependencies.
 *
 * <p>The JSON reader/writer and the first-token scanner in {@code io.kvroute.openai.internal} are exported only to
 * the kvroute modules that use them.
 */
@SuppressWarnings("module") // the qualified exports name modules built after this one
module io.kvroute.openai {
  requires static org.jspecify;

  exports io.kvroute.openai;
  exports io.kvroute.openai.internal to
      io.kvroute.sim,
      io.kvroute.transport.okhttp,
      io.kvroute.spring.gateway;
}
