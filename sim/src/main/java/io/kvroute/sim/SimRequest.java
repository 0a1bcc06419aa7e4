package io.kvroute.sim;

import io.kvroute.internal.Checks;
import java.util.Objects;

/**
 * One request of a simulated workload; an immutable value, thread-safe (the token array must not be modified).
 *
 * @param promptTokens the prompt's token ids
 * @param maxTokens output tokens to generate
 * @param prefixGroup the workload's name for the request's shared prefix (for example its prefix kind), or -1
 */
public record SimRequest(int[] promptTokens, int maxTokens, int prefixGroup) {
  /**
   * @param promptTokens the prompt's token ids
   * @param maxTokens output tokens to generate
   * @param prefixGroup the workload's name for the request's shared prefix (for example its prefix kind), or -1
   * @throws NullPointerException if {@code promptTokens} is null
   * @throws IllegalArgumentException if the prompt is empty or {@code maxTokens} is not positive
   */
  public SimRequest {
    Objects.requireNonNull(promptTokens, "promptTokens");
    if (promptTokens.length == 0) {
      throw new IllegalArgumentException("promptTokens must not be empty");
    }
    Checks.positive("maxTokens", maxTokens);
  }
}
