package io.kvroute.sim;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.kvroute.openai.ChatMessage;
import io.kvroute.openai.JsonException;
import io.kvroute.openai.OpenAiRequest;
import io.kvroute.openai.OpenAiRequestException;
import io.kvroute.openai.internal.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The simulator's OpenAI-compatible HTTP API (completions, chat completions, streaming, models, tokenize, metrics,
 * health, prefix-cache reset) in front of one {@link SimServer}'s engine; thread-safe (one instance serves every
 * exchange of the server, each on its own HTTP thread).
 */
final class SimHttpHandler implements HttpHandler {
  private static final System.Logger logger = System.getLogger(SimServer.class.getName());
  private static final int MAX_BODY_BYTES = 32 << 20;
  private static final Object END = new Object();

  private final SimServer server;
  private final SimEngineConfig config;
  private final BiConsumer<String, @Nullable String> requestListener;
  private final @Nullable RequestTokenizer requestTokenizer;
  private final long startedAtSeconds = System.currentTimeMillis() / 1000;

  SimHttpHandler(SimServer server, SimEngineConfig config, BiConsumer<String, @Nullable String> requestListener,
      @Nullable RequestTokenizer requestTokenizer) {
    this.server = server;
    this.config = config;
    this.requestListener = requestListener;
    this.requestTokenizer = requestTokenizer;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    boolean abort = false;
    try {
      String path = exchange.getRequestURI().getPath();
      String method = exchange.getRequestMethod();
      switch (path) {
        case "/v1/completions" -> {
          if (requireMethod(exchange, method, "POST")) {
            generate(exchange, false);
          }
        }
        case "/v1/chat/completions" -> {
          if (requireMethod(exchange, method, "POST")) {
            generate(exchange, true);
          }
        }
        case "/v1/models" -> {
          if (requireMethod(exchange, method, "GET")) {
            models(exchange);
          }
        }
        case "/tokenize" -> {
          if (requireMethod(exchange, method, "POST")) {
            tokenize(exchange);
          }
        }
        case "/metrics" -> {
          if (requireMethod(exchange, method, "GET")) {
            send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8",
                SimMetricsText.render(server.snapshot(), config.modelName()));
          }
        }
        case "/health" -> {
          if (requireMethod(exchange, method, "GET")) {
            send(exchange, 200, "text/plain", "");
          }
        }
        case "/reset_prefix_cache" -> {
          if (requireMethod(exchange, method, "POST")) {
            if (server.resetPrefixCache()) {
              send(exchange, 200, "text/plain", "");
            } else {
              error(exchange, 503, "The prefix cache cannot be reset while requests hold blocks.", null);
            }
          }
        }
        default -> error(exchange, 404, "Not found: " + path, null);
      }
    } catch (AbortConnection e) {
      abort = true;
      throw e; // the JDK server closes the connection without ending the response (no last chunk)
    } catch (BadRequest e) {
      try {
        error(exchange, e.status, e.getMessage(), e.param);
      } catch (IOException | RuntimeException ignored) {
        // the client went away
      }
    } catch (IOException e) {
      logger.log(DEBUG, "HTTP exchange failed", e);
    } catch (Throwable t) {
      logger.log(WARNING, "HTTP handler failed", t);
      try {
        error(exchange, 500, "Internal error: " + t, null);
      } catch (IOException | RuntimeException ignored) {
        // headers already sent or the client went away
      }
    } finally {
      if (!abort) {
        exchange.close();
      }
    }
  }

  private boolean requireMethod(HttpExchange exchange, String method, String expected) throws IOException {
    if (!method.equalsIgnoreCase(expected)) {
      exchange.getResponseHeaders().set("Allow", expected);
      error(exchange, 405, "Method " + method + " not allowed; use " + expected + ".", null);
      return false;
    }
    return true;
  }

  private void generate(HttpExchange exchange, boolean chat) throws IOException {
    try {
      requestListener.accept(exchange.getRequestURI().getPath(), exchange.getRequestHeaders().getFirst("X-Request-Id"));
    } catch (RuntimeException e) {
      logger.log(WARNING, "request listener failed", e);
    }
    byte[] raw = readBody(exchange);
    OpenAiRequest body = parseRequest(raw);
    checkModel(body);
    int[] prompt = chat ? chatTokens(body, raw) : promptTokens(body, raw);
    int maxTokens;
    boolean stream;
    boolean includeUsage;
    try {
      Integer max = body.maxTokens(); // max_completion_tokens when given, else max_tokens, as vLLM reads them
      maxTokens = max == null ? config.defaultMaxTokens() : max;
      stream = body.stream();
      includeUsage = body.includeUsage();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }

    Pending pending = new Pending();
    EngineRequest request = server.submit(prompt, maxTokens, pending);
    String id = (chat ? "chatcmpl-" : "cmpl-") + Long.toHexString(Mix.splitMix64(request.id ^ startedAtSeconds));
    try {
      if (stream) {
        stream(exchange, chat, id, request, pending, includeUsage);
      } else {
        complete(exchange, chat, id, request, pending);
      }
    } finally {
      server.release(request); // no-op when finished; frees the blocks if the client went away
    }
  }

  private void complete(HttpExchange exchange, boolean chat, String id, EngineRequest request, Pending pending)
      throws IOException {
    StringBuilder text = new StringBuilder();
    while (true) {
      Object next = pending.take();
      if (next == END) {
        break;
      }
      text.append(' ').append(config.tokenizer().word((Integer) next));
    }
    if (request.state == EngineRequest.State.ABORTED) {
      throw new BadRequest(503, "The request was aborted (server shutting down).", null);
    }
    Map<String, Object> choice = new LinkedHashMap<>();
    choice.put("index", 0);
    if (chat) {
      choice.put("message", Map.of("role", "assistant", "content", text.toString()));
      choice.put("logprobs", null);
    } else {
      choice.put("text", text.toString());
      choice.put("logprobs", null);
    }
    choice.put("finish_reason", "length");
    choice.put("stop_reason", null);
    Map<String, Object> response = envelope(chat ? "chat.completion" : "text_completion", id);
    response.put("choices", List.of(choice));
    response.put("usage", usage(request));
    send(exchange, 200, "application/json", Json.write(response));
  }

  private void stream(HttpExchange exchange, boolean chat, String id, EngineRequest request, Pending pending,
      boolean includeUsage) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
    exchange.getResponseHeaders().set("Cache-Control", "no-cache");
    exchange.sendResponseHeaders(200, 0);
    OutputStream out = exchange.getResponseBody();
    String object = chat ? "chat.completion.chunk" : "text_completion";
    if (chat) {
      Map<String, Object> delta = new LinkedHashMap<>();
      delta.put("role", "assistant");
      delta.put("content", "");
      writeEvent(out, chunk(object, id, chat, delta, null));
    }
    int taken = 0;
    try {
      while (true) {
        Object next = pending.take();
        if (next == END) {
          break;
        }
        String word = " " + config.tokenizer().word((Integer) next);
        boolean last = ++taken == request.maxTokens;
        writeEvent(out, chunk(object, id, chat, chat ? Map.of("content", word) : word, last ? "length" : null));
      }
    } catch (IOException e) {
      throw new AbortConnection("the stream failed after " + taken + " tokens: " + e, e);
    }
    if (request.state == EngineRequest.State.ABORTED) {
      // Shutting down mid-stream: vLLM's server dies with its connections, so the client sees the stream break,
      // never a "data: [DONE]" that would make a truncated answer look complete.
      throw new AbortConnection("the server is shutting down; aborting a stream after " + taken + " tokens", null);
    }
    if (includeUsage) {
      Map<String, Object> usageChunk = envelope(object, id);
      usageChunk.put("choices", List.of());
      usageChunk.put("usage", usage(request));
      writeEvent(out, Json.write(usageChunk));
    }
    out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private String chunk(String object, String id, boolean chat, Object content, @Nullable String finishReason) {
    Map<String, Object> choice = new LinkedHashMap<>();
    choice.put("index", 0);
    if (chat) {
      choice.put("delta", content);
    } else {
      choice.put("text", content);
    }
    choice.put("logprobs", null);
    choice.put("finish_reason", finishReason);
    Map<String, Object> chunk = envelope(object, id);
    chunk.put("choices", List.of(choice));
    return Json.write(chunk);
  }

  private static void writeEvent(OutputStream out, String json) throws IOException {
    out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private Map<String, Object> envelope(String object, String id) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("id", id);
    m.put("object", object);
    m.put("created", System.currentTimeMillis() / 1000);
    m.put("model", config.modelName());
    return m;
  }

  private static Map<String, Object> usage(EngineRequest request) {
    Map<String, Object> usage = new LinkedHashMap<>();
    usage.put("prompt_tokens", request.numPromptTokens);
    usage.put("total_tokens", request.numPromptTokens + request.numOutputs());
    usage.put("completion_tokens", request.numOutputs());
    usage.put("prompt_tokens_details", Map.of("cached_tokens", Math.max(0, request.cachedPromptTokens)));
    return usage;
  }

  private void models(HttpExchange exchange) throws IOException {
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("id", config.modelName());
    model.put("object", "model");
    model.put("created", startedAtSeconds);
    model.put("owned_by", "kvroute-sim");
    model.put("root", config.modelName());
    model.put("parent", null);
    model.put("max_model_len", config.maxModelLen());
    Map<String, Object> response = new LinkedHashMap<>();
    response.put("object", "list");
    response.put("data", List.of(model));
    send(exchange, 200, "application/json", Json.write(response));
  }

  private void tokenize(HttpExchange exchange) throws IOException {
    byte[] raw = readBody(exchange);
    OpenAiRequest body = parseRequest(raw);
    checkModel(body);
    int[] tokens;
    if (body.has("messages")) {
      tokens = chatTokens(body, raw);
    } else if (body.has("prompt")) {
      tokens = promptTokens(body, raw);
    } else {
      throw new BadRequest(400, "Either prompt or messages is required.", "prompt");
    }
    Map<String, Object> response = new LinkedHashMap<>();
    response.put("count", tokens.length);
    response.put("max_model_len", config.maxModelLen());
    response.put("tokens", tokens);
    response.put("token_strs", null);
    send(exchange, 200, "application/json", Json.write(response));
  }

  // ---- request parsing ----

  private static byte[] readBody(HttpExchange exchange) throws IOException {
    byte[] bytes;
    try (InputStream in = exchange.getRequestBody()) {
      bytes = in.readNBytes(MAX_BODY_BYTES + 1);
    }
    if (bytes.length > MAX_BODY_BYTES) {
      throw new BadRequest(400, "The request body exceeds " + MAX_BODY_BYTES + " bytes.", null);
    }
    return bytes;
  }

  private static OpenAiRequest parseRequest(byte[] bytes) {
    try {
      return OpenAiRequest.parse(bytes);
    } catch (JsonException e) {
      throw new BadRequest(400, "Malformed JSON body: " + e.getMessage(), null);
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
  }

  private void checkModel(OpenAiRequest body) {
    String name = body.model();
    if (name != null && !name.equals(config.modelName())) {
      throw new BadRequest(404, "The model `" + name + "` does not exist.", "model");
    }
  }

  /** The configured {@link RequestTokenizer}'s ids for the raw body; its failures answer 400. */
  private static int[] externalTokens(RequestTokenizer tokenizer, byte[] raw) {
    try {
      return tokenizer.tokenizeRequest(raw);
    } catch (RuntimeException e) {
      throw new BadRequest(400, String.valueOf(e.getMessage()), null);
    }
  }

  private int[] promptTokens(OpenAiRequest body, byte[] raw) {
    OpenAiRequest.Prompt prompt;
    try {
      prompt = body.completionPrompt();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
    if (prompt.text() != null) {
      return requestTokenizer != null ? externalTokens(requestTokenizer, raw)
          : config.tokenizer().encode(prompt.text());
    }
    int[] tokens = prompt.tokens();
    int vocabulary = config.tokenizer().vocabularySize();
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i] >= vocabulary) {
        throw new BadRequest(400, "prompt[" + i + "] must be a token id in [0, " + vocabulary + ") but was "
            + tokens[i], "prompt");
      }
    }
    return tokens;
  }

  private int[] chatTokens(OpenAiRequest body, byte[] raw) {
    if (requestTokenizer != null) {
      return externalTokens(requestTokenizer, raw);
    }
    List<ChatMessage> messages;
    try {
      messages = body.chatMessages();
    } catch (OpenAiRequestException e) {
      throw new BadRequest(400, e.getMessage(), e.param());
    }
    return config.tokenizer().encodeChat(messages);
  }

  private static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", contentType);
    exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
    if (bytes.length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(bytes);
      }
    }
  }

  private static void error(HttpExchange exchange, int status, String message, @Nullable String param)
      throws IOException {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", switch (status) {
      case 400 -> "BadRequestError";
      case 404 -> "NotFoundError";
      case 405 -> "MethodNotAllowedError";
      case 503 -> "ServiceUnavailableError";
      default -> "InternalServerError";
    });
    error.put("param", param);
    error.put("code", status);
    send(exchange, status, "application/json", Json.write(Map.of("error", error)));
  }

  /**
   * A response that must not end normally: thrown out of the handler without closing the exchange, so that the
   * JDK server closes the connection and the client sees the stream break (for chunked bodies, no last chunk).
   */
  private static final class AbortConnection extends IOException {
    private static final long serialVersionUID = 1L;

    AbortConnection(String message, @Nullable Throwable cause) {
      super(message, cause);
    }
  }

  /** A client error, answered with an OpenAI-style JSON error body. */
  static final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;
    final @Nullable String param;

    BadRequest(int status, String message, @Nullable String param) {
      super(message, null, false, false);
      this.status = status;
      this.param = param;
    }
  }

  /** Hands a request's tokens from the engine thread to its HTTP thread. */
  private static final class Pending implements EngineRequest.Observer {
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();

    @Override
    public void onToken(EngineRequest request, int token) {
      queue.add(token);
    }

    @Override
    public void onFinished(EngineRequest request) {
      queue.add(END);
    }

    Object take() throws IOException {
      try {
        return queue.take();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for tokens", e);
      }
    }
  }
}
