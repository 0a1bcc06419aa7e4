package io.kvroute.spring.gateway;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * A request the filter refuses or cannot route, with the HTTP status and OpenAI-style error it answers with;
 * immutable, thread-safe.
 *
 * <p>The body is OpenAI's error shape, {@code {"error":{"message":...,"type":...,"param":null,"code":...}}}, so
 * OpenAI clients surface the message: {@code type} is {@code invalid_request_error} for 4xx and
 * {@code server_error} for 5xx, and {@code code} is a stable machine-readable reason.
 */
final class RoutingFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;

  RoutingFailure(int status, String code, String message, Throwable cause) {
    super(message, cause, false, false);
    this.status = status;
    this.code = code;
  }

  RoutingFailure(int status, String code, String message) {
    super(message, null, false, false);
    this.status = status;
    this.code = code;
  }

  int status() {
    return status;
  }

  String code() {
    return code;
  }

  String type() {
    return status < 500 ? "invalid_request_error" : "server_error";
  }

  /** The JSON error body. */
  byte[] body() {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", getMessage());
    error.put("type", type());
    error.put("param", null);
    error.put("code", code);
    return JsonMapper.shared().writeValueAsString(Map.of("error", error)).getBytes(StandardCharsets.UTF_8);
  }

  /** Writes the status and body, unless the response is already committed (then it only completes). */
  Mono<Void> writeTo(ServerHttpResponse response) {
    if (response.isCommitted()) {
      return Mono.error(this);
    }
    response.setStatusCode(HttpStatusCode.valueOf(status));
    response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
    byte[] json = body();
    response.getHeaders().setContentLength(json.length);
    return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(json)));
  }
}
