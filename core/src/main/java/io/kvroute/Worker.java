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

  /** A worker with one HTTP endpoint. */
  public static Worker of(WorkerId id, URI httpEndpoint) {
    return newBuilder(id).endpoint(HTTP, httpEndpoint).build();
  }

  /** A worker with no endpoints, for in-process use. */
  public static Worker of(WorkerId id) {
    return newBuilder(id).build();
  }

  /** Returns a builder for a worker with this id. */
  public static Builder newBuilder(WorkerId id) {
    return new Builder(id);
  }

  /** Returns a builder starting from this worker's values. */
  public Builder toBuilder() {
    Builder b = new Builder(id);
    b.endpoints.putAll(endpoints);
    b.labels.putAll(labels);
    b.model = model;
    b.loraAdapters.addAll(loraAdapters);
    return b;
  }

  public WorkerId id() {
    return id;
  }

  /** All named endpoints. */
  public Map<String, URI> endpoints() {
    return endpoints;
  }

  /** The named endpoint, or null. */
  public @Nullable URI endpoint(String name) {
    return endpoints.get(name);
  }

  public Map<String, String> labels() {
    return labels;
  }

  /** The model this worker serves, or null if it serves any. */
  public @Nullable String model() {
    return model;
  }

  public Set<String> loraAdapters() {
    return loraAdapters;
  }

  /** Whether this worker can serve a request for {@code model} (null: any) with adapter {@code lora} (null: none). */
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

    public Builder loraAdapter(String adapter) {
      loraAdapters.add(Objects.requireNonNull(adapter, "adapter"));
      return this;
    }

    public Worker build() {
      return new Worker(this);
    }
  }
}
