package io.kvroute;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A routing target: one engine instance with its endpoints and labels; an immutable value, thread-safe.
 *
 * <p>Endpoints are named URIs, for example {@code http} (the OpenAI-compatible server), {@code kv-events} (the ZMQ
 * publisher) and {@code kv-replay}. Labels are free-form; {@link #model()} and {@link #loraAdapters()} let requests
 * be restricted to workers that serve them.
 */
public final class Worker {
  /** The conventional name of the HTTP endpoint. */
  public static final String HTTP = "http";

  private final WorkerId id;
  private final Map<String, URI> endpoints;
  private final Map<String, String> labels;
  private final @Nullable String model;
  private final Set<String> loraAdapters;

  private Worker(Builder builder) {
    this.id = builder.id;
    this.endpoints = Map.copyOf(builder.endpoints);
    this.labels = Map.copyOf(builder.labels);
    this.model = builder.model;
    this.loraAdapters = Set.copyOf(builder.loraAdapters);
  }

  /**
   * A worker with one HTTP endpoint.
   *
   * @param id the worker's id
   * @param httpEndpoint the base URI of its OpenAI-compatible server, such as {@code http://10.0.0.7:8000}
   * @return a worker with the {@link #HTTP} endpoint, serving any model
   */
  public static Worker of(WorkerId id, URI httpEndpoint) {
    return newBuilder(id).endpoint(HTTP, httpEndpoint).build();
  }

  /**
   * A worker with no endpoints, for in-process use.
   *
   * @param id the worker's id
   * @return a worker with no endpoints, labels, model or adapters
   */
  public static Worker of(WorkerId id) {
    return newBuilder(id).build();
  }

  /**
   * Returns a builder for a worker with this id.
   *
   * @param id the worker's id
   * @return a new builder
   */
  public static Builder newBuilder(WorkerId id) {
    return new Builder(id);
  }

  /**
   * Returns a builder starting from this worker's values.
   *
   * @return a new builder holding this worker's id, endpoints, labels, model and adapters
   */
  public Builder toBuilder() {
    Builder b = new Builder(id);
    b.endpoints.putAll(endpoints);
    b.labels.putAll(labels);
    b.model = model;
    b.loraAdapters.addAll(loraAdapters);
    return b;
  }

  /**
   * The worker's identity: its name and data-parallel rank.
   *
   * @return the id, not null
   */
  public WorkerId id() {
    return id;
  }

  /**
   * All named endpoints.
   *
   * @return an immutable map from endpoint name (such as {@link #HTTP}) to URI; possibly empty
   */
  public Map<String, URI> endpoints() {
    return endpoints;
  }

  /**
   * The named endpoint, or null.
   *
   * @param name the endpoint's name, such as {@link #HTTP}
   * @return the endpoint's URI, or null if the worker has none of that name
   */
  public @Nullable URI endpoint(String name) {
    return endpoints.get(name);
  }

  /**
   * Free-form labels (for example zone or hardware); the router ignores them, while other modules may read their
   * own keys (events-zmq's subscriber takes a KV event topic from {@code kv-events.topic}).
   *
   * @return an immutable map from label name to value; possibly empty
   */
  public Map<String, String> labels() {
    return labels;
  }

  /**
   * The model this worker serves, or null if it serves any.
   *
   * @return the model's name, or null
   */
  public @Nullable String model() {
    return model;
  }

  /**
   * The LoRA adapters this worker has loaded; a request naming an adapter only goes to workers listing it.
   *
   * @return an immutable set of adapter names; possibly empty
   */
  public Set<String> loraAdapters() {
    return loraAdapters;
  }

  /**
   * Whether this worker can serve a request for {@code model} (null: any) with adapter {@code lora} (null: none).
   *
   * @param requestModel the model the request names, or null for any
   * @param lora the adapter the request names, or null (or empty) for the base model
   * @return true if the worker's model matches (or either is unset) and it lists the adapter (or none is asked)
   */
  public boolean serves(@Nullable String requestModel, @Nullable String lora) {
    if (requestModel != null && model != null && !model.equals(requestModel)) {
      return false;
    }
    return lora == null || lora.isEmpty() || loraAdapters.contains(lora);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Worker w && id.equals(w.id) && endpoints.equals(w.endpoints) && labels.equals(w.labels)
        && Objects.equals(model, w.model) && loraAdapters.equals(w.loraAdapters);
  }

  @Override
  public int hashCode() {
    return Objects.hash(id, endpoints, labels, model, loraAdapters);
  }

  @Override
  public String toString() {
    return "Worker{" + id + (endpoints.isEmpty() ? "" : ", " + endpoints) + (model == null ? "" : ", model=" + model)
        + "}";
  }

  /** Builds a {@link Worker}; not thread-safe. */
  public static final class Builder {
    private final WorkerId id;
    private final Map<String, URI> endpoints = new LinkedHashMap<>();
    private final Map<String, String> labels = new LinkedHashMap<>();
    private @Nullable String model;
    private final Set<String> loraAdapters = new LinkedHashSet<>();

    private Builder(WorkerId id) {
      this.id = Objects.requireNonNull(id, "id");
    }

    /**
     * Sets a named endpoint, replacing one of the same name, for example {@link Worker#HTTP} or {@code kv-events}.
     * Default: no endpoints (an in-process worker).
     *
     * @param name the endpoint's name
     * @param uri where it is
     * @return this builder
     */
    public Builder endpoint(String name, URI uri) {
      endpoints.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(uri, "uri"));
      return this;
    }

    /**
     * Sets a free-form label, replacing one with the same key; the router does not interpret labels. Default: none.
     *
     * @param key the label's key
     * @param value its value
     * @return this builder
     */
    public Builder label(String key, String value) {
      labels.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * The model this worker serves: requests naming another model are not routed to it. Default: null, which
     * serves requests for any model.
     *
     * @param model the served model's name, or null for any
     * @return this builder
     */
    public Builder model(@Nullable String model) {
      this.model = model;
      return this;
    }

    /**
     * Adds a LoRA adapter this worker has loaded; call once per adapter.
     *
     * @param adapter the adapter's name, as requests name it
     * @return this builder
     */
    public Builder loraAdapter(String adapter) {
      loraAdapters.add(Objects.requireNonNull(adapter, "adapter"));
      return this;
    }

    /**
     * Builds the worker.
     *
     * @return a new immutable worker
     */
    public Worker build() {
      return new Worker(this);
    }
  }
}
