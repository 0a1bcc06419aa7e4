#!/usr/bin/env bash
# Issue 11's select() target with the peer replica in a JVM of its own (about 75 seconds on 2 cores): sync off
# against sync on, measured thread CPU per request, with nats-server and the peer process pinned to CPU 1 and the
# measured thread alone on CPU 0. Run from the repository root on a quiet machine; output to stdout and
# jmh/target/issue11-<date>.txt. Read "NATSP - NONE per round" (SyncAb) and the "thread cpu" lines (JMH).
#
#   jmh/run-issue11.sh              # build, then measure
#   SKIP_BUILD=1 jmh/run-issue11.sh # with the jmh/target/benchmarks.jar already built
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=jmh/target/benchmarks.jar
OUT=jmh/target/issue11-$(date -u +%Y%m%dT%H%M%SZ).txt
if [ -z "${SKIP_BUILD:-}" ]; then
  mvn -B -q -pl jmh -am package -DskipTests # from source, no install
fi
mkdir -p jmh/target
exec > >(tee "$OUT") 2>&1
NATS_BIN=$(command -v nats-server || echo /usr/sbin/nats-server)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
taskset -c 1 "$NATS_BIN" -a 127.0.0.1 -p "$PORT" > "jmh/target/issue11-nats-$PORT.log" 2>&1 &
NATS_PID=$!
trap 'kill $NATS_PID 2>/dev/null || true' EXIT
sleep 1
PROPS="-Dbench.natsUrl=nats://127.0.0.1:$PORT -Dbench.peerCpus=1 -Dbench.measuredCpu=0"

. jmh/bench-lib.sh

section "machine"
run java -version
nproc

# Same-JVM interleaved A/B (thread CPU), the peer (2,000 req/s) in its own process: NONE is one router routing
# both clients, NATSP two replicas over nats-server. Both policies.  (about 15 s each)
for POLICY in approximate kvAware; do
  section "SyncAb $POLICY: NONE against NATSP (peer process), pinned"
  run java -Xms3g -Xmx3g $PROPS -cp $JAR io.kvroute.jmh.SyncAb $POLICY 2000 300000 40 20000 NONE NATSP
done

# The same layout under JMH (the "thread cpu" lines are the measured thread's CPU per request).  (about 50 s)
section "SharedLoadBenchmark.select, peer=PROCESS, pinned"
run java -jar $JAR 'SharedLoadBenchmark.select$' -p peer=PROCESS -p peerRate=2000 -f 1 -wi 3 -w 1s -i 5 -r 1s \
    -jvmArgsAppend "-Xms1g -Xmx1g $PROPS"

section "done; results in $OUT"
