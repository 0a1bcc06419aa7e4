package io.kvroute.spring.gateway.example;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The smallest Spring Cloud Gateway application with KV-aware routing: no code beyond this class. Everything is in
 * {@code application.yml} next to it (the route with the {@code KvRoute} filter and the {@code kvroute.workers}).
 *
 * <pre>{@code
 * mvn -pl spring-cloud-gateway -am test-compile
 * # start vLLM (or the sim) on 127.0.0.1:8000 with KV events on tcp://127.0.0.1:5557, then run this main
 * }</pre>
 */
@SpringBootApplication
public class ExampleGatewayApplication {
  /**
   * Runs the gateway.
   *
   * @param args Spring Boot arguments, for example {@code --server.port=8080}
   */
  public static void main(String[] args) {
    SpringApplication.run(ExampleGatewayApplication.class, args);
  }
}
