#!/usr/bin/env bash
# Measures every target of issue 13 (performance under real load), in about 10 minutes on 2 cores. Run from the
# repository root on a quiet machine; the output goes to stdout and, with every command line, to
# jmh/target/issue13-<date>.txt. Each section names the target it measures and the number to read.
#
#   jmh/run-issue13.sh              # build, then measure
#   SKIP_BUILD=1 jmh/run-issue13.sh # measure with the jmh/target/benchmarks.jar already built
#
# Target configuration throughout: 2,048-token prompts, 64 workers, 1M indexed blocks, no transparent huge pages
# (the JVM's default; the kernel's setting is printed below).
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=jmh/target/benchmarks.jar
OUT=jmh/target/issue13-$(date -u +%Y%m%dT%H%M%SZ).txt
if [ -z "${SKIP_BUILD:-}" ]; then
  mvn -B -q -pl jmh -am package -DskipTests # core and events-zmq from source, no install
fi
mkdir -p jmh/target
exec > >(tee "$OUT") 2>&1

. jmh/bench-lib.sh

section "machine"
run java -version
uname -a
nproc
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"

# Cold hit <= 5 us mean, cold miss <= 3 us mean, < 256 B per select (<= 168 B): the "select" rows, avgt, and
# gc.alloc.rate.norm. 512 distinct prompts keep a 1M-block index cold; distinctPrompts=1 is the in-cache reference.
# Two forks: cold rows differ by up to 25 % from one fork to the next.  (~3 min)
section "select(): cold hit and miss, allocation per call"
run java -jar $JAR 'SelectBenchmark.select$' -p promptTokens=2048 -p workers=64 -p indexedBlocks=1000000 \
    -p distinctPrompts=512,1 -p match=HIT,MISS -prof gc -f 2 -wi 3 -w 1s -i 5 -r 1s

# The match alone on the same cold index (the part of a cold hit that waits on memory).  (~1 min)
section "match alone (findMatches), cold"
run java -jar $JAR 'MatchBenchmark.findMatches$' -p promptTokens=2048 -p workers=64 -p indexedBlocks=1000000 \
    -p distinctPrompts=512 -p match=HIT,MISS -f 1 -wi 3 -w 1s -i 5 -r 1s

# Sequence hashing >= 2 tokens/ns: the "sequenceHashes:tokens" row, in tokens per microsecond (2,000 = 2/ns).
# localHashes is the local XXH3 alone, without the chain.  (~25 s)
section "hashing"
run java -jar $JAR 'HashingBenchmark.(sequenceHashes|localHashes)$' -p promptTokens=2048 -f 1 -wi 3 -w 1s -i 5 -r 1s

# Decode + apply >= 5M blocks/s on one core at 1M blocks, no THP: the "decodeAndApply:blocks" and
# "decodeIntoIndex:blocks" rows (block operations per second), the first through KvEvent objects, the second
# decoded straight into the index's primitive buffers. Decoder garbage <= 16 B per block: gc.alloc.rate.norm of
# "decode" and "decodeColumns" divided by 128 (one operation is one batch of 128 block operations).  (~1.5 min)
section "decode + apply, decoder garbage"
run java -jar $JAR 'IngestionBenchmark.(decodeAndApply|decodeIntoIndex|applyDecoded|decode|decodeColumns)$' \
    -p blocksPerEvent=16 -p indexedBlocks=1000000 -prof gc -f 1 -wi 3 -w 1s -i 5 -r 1s

# select() p99 <= 10 us while another thread ingests >= 2M blocks/s, and the curve: each row's p99 against its
# achieved rate; the bisected rate at which p99 crosses 10 us is printed last, for misses and hits.  (~2.5 min)
section "mixed load: select latency against the ingestion rate"
run java -Xms3g -Xmx3g -XX:+AlwaysPreTouch -cp $JAR io.kvroute.jmh.MixedLoad \
    rates=0,max,1000000,2000000,3000000,4000000 match=MISS,HIT seconds=3 warmup=2 bisect=3

# End to end over sockets >= 1M blocks/s on one core with 16-block batches: blocks/s end to end, and the
# subscriber thread's CPU ns per block (1e9 / that = blocks/s per core).  (~1 min)
section "end to end over ZeroMQ on loopback"
run java -Xms2g -Xmx2g -XX:+AlwaysPreTouch -cp $JAR io.kvroute.jmh.SocketIngestion \
    batches=1,16,64 seconds=5 warmup=3

section "done; results in $OUT"
