package io.kvroute.micrometer;

import io.kvroute.WorkerId;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.util.Objects;

/**
 * What the binders share: an internal composite registry that every registry passed to {@link #bindTo} joins, so
 * that meters created before binding (for example by a listener callback) are published to registries bound later;
 * thread-safe.
 */
abstract class BoundMeters implements MeterBinder {
  final CompositeMeterRegistry meters = new CompositeMeterRegistry();
  final Tags tags;

  BoundMeters(Iterable<Tag> tags) {
    this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
  }

  /**
   * Publishes this binder's meters to {@code registry}, those that exist now and those created later; may be called
   * for several registries.
   *
   * @param registry the registry to publish to
   */
  @Override
  public void bindTo(MeterRegistry registry) {
    Objects.requireNonNull(registry, "registry");
    meters.add(registry);
  }

  /** The common tags plus a worker's name and rank. */
  Tags workerTags(WorkerId worker) {
    return tags.and("worker", worker.name(), "rank", Integer.toString(worker.dataParallelRank()));
  }
}
