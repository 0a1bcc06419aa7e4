/**
 * Shares load bookings and approximate-mode predictions between router replicas over NATS: each replica publishes
 * compact binary deltas of its own bookings, and applies its peers' deltas to its router's view of remote load;
 * optionally, a JetStream key-value snapshot of each replica's recent predictions warms up replicas that start later.
 *
 * <ul>
 *   <li>{@link io.kvroute.sync.nats.NatsLoadSync}: the {@link io.kvroute.SharedLoad} port over a NATS connection;
 *   <li>{@link io.kvroute.sync.nats.SyncListener}: membership, connection and malformed-frame notifications.
 * </ul>
 */
@NullMarked
package io.kvroute.sync.nats;

import org.jspecify.annotations.NullMarked;
