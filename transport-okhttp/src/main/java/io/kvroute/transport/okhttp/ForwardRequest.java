package io.kvroute.transport.okhttp;

import io.kvroute.RouteRequest;
import io.kvroute.openai.OpenAiRequest;
import java.util.Objects;
import java.util.function.Consumer;
import okhttp3.Headers;
import okhttp3.MediaType;
import org.jspecify.annotations.Nullable;

/**
 * An OpenAI-compatible request to forward to the worker the router chooses; an immutable value, thread-safe (the
 * body and token arrays are not copied: do not modify them while the request is forwarded).
 *
 * <pre>{@code
 * ForwardRequest request = ForwardRequest.newBuilder("/v1/chat/completions", body)
 *     .header("Authorization", "Bearer " + key)
 *     .model("qwen3")                 // only workers serving it (or any model)
 *     .build();                       // no tokens: the forwarder's Tokenizer reads them from the body
 * }</pre>
 */
public final class ForwardRequest {
  /** The default content type of the body. */
  public static final String DEFAULT_CONTENT_TYPE = "application/json";

  private final String path;
  private final byte[] body;
  private final int @Nullable [] tokens;
  private final Headers headers;
  private final String contentType;
  private final @Nullable String model;
  private final Consumer<RouteRequest.Builder> routeOptions;
  private volatile @Nullable OpenAiRequest parsedBody;

  private ForwardRequest(Builder b) {
    this.path = b.path;
    this.body = b.body;
    this.tokens = b.tokens;
    this.headers = b.headers.build();
    this.contentType = b.contentType;
    this.model = b.model;
    this.routeOptions = b.routeOptions;
    this.parsedBody = b.parsedBody;
  }

  /**
   * Returns a builder for a POST of {@code body} to {@code path} on the chosen worker.
   *
   * @param path the API path with any query, for example {@code /v1/completions}, appended to the worker's
   *     endpoint
   * @param body the request body, sent as given (not copied; do not modify it afterwards)
   * @return a new builder
   * @throws IllegalArgumentException if {@code path} does not start with '/'
   */
  public static Builder newBuilder(String path, byte[] body) {
    return new Builder(path, body);
  }

  /**
   * The API path, appended to the worker's endpoint.
   *
   * @return the path, starting with '/', possibly with a query
   */
  public String path() {
    return path;
  }

  /**
   * The body sent upstream, as given.
   *
   * @return the body bytes, the same array the builder was given
   */
  public byte[] body() {
    return body;
  }

  /**
   * The prompt's token ids, or null to have the forwarder's tokenizer read them from the body.
   *
   * @return the token ids, or null when the forwarder's tokenizer reads them from the body
   */
  public int @Nullable [] tokens() {
    return tokens;
  }

  /**
   * Headers sent upstream.
   *
   * @return the headers to send upstream, never null (possibly empty)
   */
  public Headers headers() {
    return headers;
  }

  /**
   * The body's content type.
   *
   * @return the media type of the body, {@link #DEFAULT_CONTENT_TYPE} unless set
   */
  public String contentType() {
    return contentType;
  }

  /**
   * The model routing is restricted to (workers serving it or any model), or null for no restriction.
   *
   * @return the model name, or null for no restriction
   */
  public @Nullable String model() {
    return model;
  }

  /**
   * Further routing options, applied to each attempt's {@link RouteRequest.Builder}.
   *
   * @return the routing options applied to every attempt, a no-op by default
   */
  public Consumer<RouteRequest.Builder> routeOptions() {
    return routeOptions;
  }

  /**
   * The body read as an OpenAI-compatible request ({@link OpenAiRequest#model()}, {@link OpenAiRequest#stream()},
   * the prompt): the one given to {@link Builder#parsedBody}, else the body parsed once, on the first call.
   *
   * @return the parsed body
   * @throws io.kvroute.openai.JsonException if the body is not a JSON object
   * @throws io.kvroute.openai.OpenAiRequestException if its {@code model} or {@code stream} has the wrong type
   */
  public OpenAiRequest parsedBody() {
    OpenAiRequest parsed = parsedBody;
    if (parsed == null) {
      parsed = OpenAiRequest.parse(body);
      parsedBody = parsed;
    }
    return parsed;
  }

  @Override
  public String toString() {
    return "ForwardRequest{" + path + ", " + body.length + " bytes" + (tokens == null ? "" : ", " + tokens.length
        + " tokens") + (model == null ? "" : ", model=" + model) + "}";
  }

  /** Builds a {@link ForwardRequest}; not thread-safe. */
  public static final class Builder {
    private final String path;
    private final byte[] body;
    private int @Nullable [] tokens;
    private final Headers.Builder headers = new Headers.Builder();
    private String contentType = DEFAULT_CONTENT_TYPE;
    private @Nullable String model;
    private Consumer<RouteRequest.Builder> routeOptions = b -> {};
    private @Nullable OpenAiRequest parsedBody;

    private Builder(String path, byte[] body) {
      this.path = Urls.checkPath(Objects.requireNonNull(path, "path"), "path");
      this.body = Objects.requireNonNull(body, "body");
    }

    /**
     * The prompt's token ids, as the engine will see them; without them the forwarder's {@link Tokenizer} reads
     * the body.
     *
     * @param tokens the token ids, not empty (not copied)
     * @return this builder
     * @throws IllegalArgumentException if empty
     */
    public Builder tokens(int[] tokens) {
      if (tokens.length == 0) {
        throw new IllegalArgumentException("tokens must not be empty");
      }
      this.tokens = tokens;
      return this;
    }

    /**
     * Adds a header sent upstream. Hop-by-hop headers ({@code Connection}, {@code Transfer-Encoding}, …) and those
     * OkHttp sets itself ({@code Host}, {@code Content-Length}, {@code Content-Type}: see {@link #contentType};
     * {@code Accept-Encoding}: OkHttp negotiates and decompresses gzip) are not forwarded, so a gateway may pass
     * its client's headers as they came.
     *
     * @param name the header name
     * @param value the header value
     * @return this builder
     * @throws IllegalArgumentException if the name or value is not a valid header
     */
    public Builder header(String name, String value) {
      headers.add(name, value);
      return this;
    }

    /**
     * Adds all these headers.
     *
     * @param headers the headers to add, in order (the same exclusions as {@link #header} apply)
     * @return this builder
     */
    public Builder headers(Headers headers) {
      this.headers.addAll(headers);
      return this;
    }

    /**
     * The body's content type (default {@link #DEFAULT_CONTENT_TYPE}).
     *
     * @param contentType a media type, such as {@code application/json; charset=utf-8}
     * @return this builder
     * @throws IllegalArgumentException if it is not a media type
     */
    public Builder contentType(String contentType) {
      MediaType.get(Objects.requireNonNull(contentType, "contentType")); // throws IllegalArgumentException if invalid
      this.contentType = contentType;
      return this;
    }

    /**
     * Restricts routing to workers serving {@code model} (or any model); null for none (default).
     *
     * @param model the model name the body asks for, or null
     * @return this builder
     */
    public Builder model(@Nullable String model) {
      this.model = model;
      return this;
    }

    /**
     * Sets further routing options (LoRA adapter, allowed workers, per-request weights, explanation) on each
     * attempt's route request; the forwarder still removes the workers that failed from the allowed ones.
     *
     * @param routeOptions applied to each attempt's route request builder, not null
     * @return this builder
     */
    public Builder routeOptions(Consumer<RouteRequest.Builder> routeOptions) {
      this.routeOptions = Objects.requireNonNull(routeOptions, "routeOptions");
      return this;
    }

    /**
     * The body as the gateway already parsed it, so that {@link ForwardRequest#parsedBody()} does not parse it
     * again; it must be the parse of this builder's body. Default: none (parsed when first asked for).
     *
     * @param parsedBody the parsed body
     * @return this builder
     */
    public Builder parsedBody(OpenAiRequest parsedBody) {
      this.parsedBody = Objects.requireNonNull(parsedBody, "parsedBody");
      return this;
    }

    /**
     * Builds the request.
     *
     * @return a new immutable request
     */
    public ForwardRequest build() {
      return new ForwardRequest(this);
    }
  }
}
