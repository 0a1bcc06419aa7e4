package io.kvroute.events.zmq;

import io.kvroute.WorkerId;
import io.kvroute.internal.Checks;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where one worker's engine publishes its KV events; an immutable value, thread-safe.
 *
 * <p>For a source with {@code dataParallelRanks} ranks, rank {@code worker.dataParallelRank() + r} is expected at
 * {@code endpoint} with its TCP port offset by {@code r} (and likewise the replay endpoint), as vLLM and SGLang bind
 * them. Events are reported under {@code worker}'s name and the rank the batch names.
 *
 * @param worker the worker (name and first data-parallel rank) events are reported under
 * @param endpoint the engine's PUB endpoint for the first rank, for example {@code tcp://10.0.0.5:5557}; in
 *     {@linkplain #bind() bind mode} the local address engines connect to
 * @param replayEndpoint the engine's ROUTER replay endpoint for the first rank, or null when it has none
 * @param topic the topic to subscribe to (a prefix match on the first frame; empty for all)
 * @param dataParallelRanks how many data-parallel ranks the engine runs, at least 1
 * @param serverPublicKey the engine's CURVE public key (Z85), or null for a plain connection
 * @param bind whether the subscriber binds {@code endpoint} and the engine connects out to it (for engines behind
 *     NAT or started before the router knows their address), instead of connecting to the engine
 */
public record EventSourceConfig(
    WorkerId worker,
    String endpoint,
    @Nullable String replayEndpoint,
    String topic,
    int dataParallelRanks,
    @Nullable String serverPublicKey,
    boolean bind) {

  /** The most data-parallel ranks one source may have. */
  public static final int MAX_DATA_PARALLEL_RANKS = 1024;

  /**
   * Validates the source.
   *
   * @param worker the worker (name and first data-parallel rank) events are reported under
   * @param endpoint the engine's PUB endpoint for the first rank, for example {@code tcp://10.0.0.5:5557}; in
   *     {@linkplain #bind() bind mode} the local address engines connect to
   * @param replayEndpoint the engine's ROUTER replay endpoint for the first rank, or null when it has none
   * @param topic the topic to subscribe to (a prefix match on the first frame; empty for all)
   * @param dataParallelRanks how many data-parallel ranks the engine runs, at least 1
   * @param serverPublicKey the engine's CURVE public key (Z85), or null for a plain connection
   * @param bind whether the subscriber binds {@code endpoint} and the engine connects out to it (for engines behind NAT
   *     or started before the router knows their address), instead of connecting to the engine
   * @throws NullPointerException if a required argument is null
   * @throws IllegalArgumentException if an endpoint is not tcp, ipc or inproc (or names a wildcard host to connect
   *     to), the rank count is outside [1, 1024], or the server key is not Z85
   */
  public EventSourceConfig {
    Objects.requireNonNull(worker, "worker");
    if (bind) {
      Endpoints.check(endpoint, "endpoint");
    } else {
      Endpoints.checkConnectable(endpoint, "endpoint");
    }
    if (replayEndpoint != null) {
      Endpoints.checkConnectable(replayEndpoint, "replayEndpoint");
    }
    Objects.requireNonNull(topic, "topic");
    Checks.inRange("dataParallelRanks", dataParallelRanks, 1, MAX_DATA_PARALLEL_RANKS);
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

  /**
   * A source with one rank, no replay, the empty topic and no encryption.
   *
   * @param worker the worker events are reported under
   * @param endpoint the engine's PUB endpoint
   * @return the source
   */
  public static EventSourceConfig of(WorkerId worker, String endpoint) {
    return new EventSourceConfig(worker, endpoint, null, "", 1, null, false);
  }

  /**
   * This source with a replay endpoint (or none).
   *
   * @param replayEndpoint the engine's ROUTER replay endpoint, or null
   * @return the changed source
   */
  public EventSourceConfig withReplayEndpoint(@Nullable String replayEndpoint) {
    return new EventSourceConfig(worker, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey, bind);
  }

  /**
   * This source with another topic.
   *
   * @param topic the topic prefix
   * @return the changed source
   */
  public EventSourceConfig withTopic(String topic) {
    return new EventSourceConfig(worker, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey, bind);
  }

  /**
   * This source with another number of data-parallel ranks.
   *
   * @param ranks the number of ranks
   * @return the changed source
   */
  public EventSourceConfig withDataParallelRanks(int ranks) {
    return new EventSourceConfig(worker, endpoint, replayEndpoint, topic, ranks, serverPublicKey, bind);
  }

  /**
   * This source with the engine's CURVE public key (or null for a plain connection).
   *
   * @param serverPublicKey the engine's Z85 public key, or null
   * @return the changed source
   */
  public EventSourceConfig withServerPublicKey(@Nullable String serverPublicKey) {
    return new EventSourceConfig(worker, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey, bind);
  }

  /**
   * This source in bind mode (the subscriber binds {@code endpoint}; the engine's PUB connects to it) or not.
   *
   * @param bind whether to bind
   * @return the changed source
   */
  public EventSourceConfig withBind(boolean bind) {
    return new EventSourceConfig(worker, endpoint, replayEndpoint, topic, dataParallelRanks, serverPublicKey, bind);
  }

  /** The worker id of rank offset {@code r}. */
  WorkerId workerOf(int r) {
    return r == 0 ? worker : worker.withRank(worker.dataParallelRank() + r);
  }

  /** The live endpoint of rank offset {@code r}. */
  String endpointOf(int r) {
    return Endpoints.offset(endpoint, r);
  }

  /** The replay endpoint of rank offset {@code r}, or null. */
  @Nullable String replayEndpointOf(int r) {
    return replayEndpoint == null ? null : Endpoints.offset(replayEndpoint, r);
  }
}
