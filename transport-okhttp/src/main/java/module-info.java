/**
 * kvroute's HTTP side over OkHttp: the routing forwarder, response relays (also for the JDK HttpServer), the vLLM
 * {@code /metrics} scraper and the {@code /tokenize} client.
 */
module io.kvroute.transport.okhttp {
  requires transitive io.kvroute;
  requires transitive io.kvroute.openai;
  requires transitive okhttp3;
  requires transitive jdk.httpserver;
  requires static org.jspecify;

  exports io.kvroute.transport.okhttp;
}
