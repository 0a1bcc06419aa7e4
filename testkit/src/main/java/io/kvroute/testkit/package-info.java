/**
 * Test helpers for code built on kvroute (JUnit 5): {@link io.kvroute.testkit.FakeTicker}, a manually advanced
 * {@link io.kvroute.Ticker}; {@link io.kvroute.testkit.Await}, polling for a condition with a deadline;
 * {@link io.kvroute.testkit.Fixtures}, seeded prompts and the KV events an engine would publish for them;
 * {@link io.kvroute.testkit.NatsServer}, a real {@code nats-server} on a free loopback port; and
 * {@link io.kvroute.testkit.RouterPolicyContract}, the contract every {@link io.kvroute.RouterPolicy} keeps, as an
 * abstract test that a custom policy's test extends. kvroute's own tests use the same classes.
 */
@NullMarked
package io.kvroute.testkit;

import org.jspecify.annotations.NullMarked;
