/**
 * JMH benchmarks of kvroute's hot paths: {@link io.kvroute.jmh.SelectBenchmark routing},
 * {@link io.kvroute.jmh.HashingBenchmark prompt hashing}, {@link io.kvroute.jmh.IngestionBenchmark event ingestion}
 * (msgpack decode plus index apply) and the {@link io.kvroute.jmh.IndexFootprint index's heap per entry}; and plain
 * harnesses for what JMH measures poorly: {@link io.kvroute.jmh.MixedLoad select latency percentiles while
 * events stream in} (HdrHistogram) and {@link io.kvroute.jmh.SocketIngestion ingestion over real ZeroMQ sockets};
 * and {@link io.kvroute.jmh.SameJvmAb}, which compares two builds in one JVM when the machine is shared.
 *
 * <p>Build with {@code mvn -pl jmh -am package}, then run {@code java -jar jmh/target/benchmarks.jar}; each class's
 * Javadoc gives its exact command, and {@code docs/PERFORMANCE.md} the measured results. Every workload is
 * synthetic and seeded, so runs are reproducible: prompts are uniformly random token ids from a Llama 3 sized
 * vocabulary, indexed in 16-token blocks as vLLM reports them.
 */
@NullMarked
package io.kvroute.jmh;

import org.jspecify.annotations.NullMarked;
