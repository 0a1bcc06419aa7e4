package io.kvroute;

import io.kvroute.internal.Checks;

/**
 * Identifies one engine instance: a worker name plus its data-parallel rank (0 when data parallelism is off);
 * an immutable value, thread-safe.
 */
public record WorkerId(String name, int dataParallelRank) implements Comparable<WorkerId> {
  /**
   * @param name the worker's name, not blank
   * @param dataParallelRank the engine's data-parallel rank, zero or more
   * @throws NullPointerException if {@code name} is null
   * @throws IllegalArgumentException if {@code name} is blank or {@code dataParallelRank} is negative
   */
  public WorkerId {
    Checks.notBlank("name", name);
    Checks.notNegative("dataParallelRank", dataParallelRank);
  }

  /**
   * A worker without data parallelism (rank 0).
   *
   * @param name the worker's name, not blank
   * @return the id of rank 0
   */
  public static WorkerId of(String name) {
    return new WorkerId(name, 0);
  }

  /**
   * The same worker name at another data-parallel rank.
   *
   * @param rank the data-parallel rank, zero or more
   * @return an id with this name and that rank
   */
  public WorkerId withRank(int rank) {
    return new WorkerId(name, rank);
  }

  @Override
  public int compareTo(WorkerId other) {
    int byName = name.compareTo(other.name);
    return byName != 0 ? byName : Integer.compare(dataParallelRank, other.dataParallelRank);
  }

  @Override
  public String toString() {
    return dataParallelRank == 0 ? name : name + "#" + dataParallelRank;
  }
}
