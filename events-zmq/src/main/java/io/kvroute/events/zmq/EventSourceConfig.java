package io.kvroute.events.zmq;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where one worker's engine publishes its KV events; an immutable value, thread-safe.
 *
 * <p>For a worker with {@code dataParallelRanks} ranks, rank {@code r} is expected at {@code endpoint} with its
 * TCP port offset by {@code r} (and likewise the replay endpoint), as vLLM and SGLang bind them.
 *
 * @param workerName the worker name events are reported under ({@link io.kvroute.WorkerId#name()})
 * @param endpoint the engine's PUB endpoint for rank 0, for example {@code tcp://10.0.0.5:5557}
 * @param replayEndpoint the engine's ROUTER replay endpoint for rank 0, or null when it has none
 * @param topic the topic to subscribe to (a prefix match on the first frame; empty for all)
 * @param dataParallelRanks how many data-parallel ranks the engine runs, at least 1
 * @param serverPublicKey the engine's CURVE public key (Z85), or null for a plain connection
 */
public record EventSourceConfig(
    String workerName,
    String endpoint,
    @Nullable String replayEndpoint,
    String topic,
    int dataParallelRanks,
    @Nullable String serverPublicKey) {

  /** The most data-parallel ranks one source may have. */
  public static final int MAX_DATA_PARALLEL_RANKS = 1024;

  /**
   * @throws NullPointerException if a required argument is null
   * @throws IllegalArgumentException if the name is blank, an endpoint is not tcp, ipc or inproc, the rank count is
   *     outside [1, 1024], or the server key is not Z85
   */
  public EventSourceConfig {
    Objects.requireNonNull(workerName, "workerName");
    if (workerName.isBlank()) {
      throw new IllegalArgumentException("workerName must not be blank");
    }
    Endpoints.checkConnectable(endpoint, "endpoint");
    if (replayEndpoint != null) {
      Endpoints.checkConnectable(replayEndpoint, "replayEndpoint");
    }
    Objects.requireNonNull(topic, "topic");
    if (dataParallelRanks < 1 || dataParallelRanks > MAX_DATA_PARALLEL_RANKS) {
      throw new IllegalArgumentException("dataParallelRanks must be in [1, " + MAX_DATA_PARALLEL_RANKS + "] but was "
          + dataParallelRanks);
    }
    if (dataParallelRanks > 1) {
      Endpoints.offset(endpoint, dataParallelRanks - 1); // fails early on endpoints that cannot be offset
      if (replayEndpoint != null) {
        Endpoints.offset(replayEndpoint, dataParallelRanks - 1);
      }
    }
    if (serverPublicKey != null) {
      CurveKeyPair.checkKey(serverPublicKey, "serverPublicKey");
    }
  }

  /** A source with one rank, no replay, the empty topic and no encryption. */
  public static EventSourceConfig of(String workerName, String endpoint) {
    return new EventSourceConfig(workerName, endpoint, null, "", 1, null);
  }

  /** This source with a replay endpoint (or none). */
  public EventSourceConfig withReplayEndpoint(@Nullable String replayEndpoint) {
    return new EventSourceConfig(workerName, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey);
  }

  /** This source with another topic. */
  public EventSourceConfig withTopic(String topic) {
    return new EventSourceConfig(workerName, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey);
  }

  /** This source with another number of data-parallel ranks. */
  public EventSourceConfig withDataParallelRanks(int ranks) {
    return new EventSourceConfig(workerName, endpoint, replayEndpoint, topic, ranks, serverPublicKey);
  }

  /** This source with the engine's CURVE public key (or null for a plain connection). */
  public EventSourceConfig withServerPublicKey(@Nullable String serverPublicKey) {
    return new EventSourceConfig(workerName, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey);
  }

  /** The live endpoint of rank {@code rank}. */
  String endpointOf(int rank) {
    return Endpoints.offset(endpoint, rank);
  }

  /** The replay endpoint of rank {@code rank}, or null. */
  @Nullable String replayEndpointOf(int rank) {
    return replayEndpoint == null ? null : Endpoints.offset(replayEndpoint, rank);
  }
}
