#!/usr/bin/env bash
# fio and ringlab run side by side from the same fio job file.
#
# Each repeat runs `fio JOBFILE --output-format=json` and then
# `ringlab io --fio JOBFILE --output-format fio-json`, both pinned to the
# same CPU, and the table shows, per job of the file, the medians over the
# repeats of IOPS and mean latency as each tool wrote them in fio's JSON
# shape, and the ratio ringlab/fio. Both set up the same ring (fio's
# io_uring engine sets COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN, as
# ringlab's default ring does where the kernel has them) and, in a job
# file, submit one request per system call (fio's iodepth_batch_submit=1);
# where their defaults still differ, the job file
# says only what both honour. Numbers are measured, not asserted.
#
# Usage: bench/fio-jobfile.sh [JOBFILE]   (default bench/jobs/side-by-side.fio)
# Environment: BENCH_DIR (a directory for the data file; default a new one
#   under the current directory), BENCH_SIZE (256m), BENCH_RUNTIME (3),
#   BENCH_REPEATS (3), BENCH_CPU (1).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
job=${1:-$repo/bench/jobs/side-by-side.fio}
repeats=${BENCH_REPEATS:-3}
cpu=${BENCH_CPU:-1}
export BENCH_SIZE=${BENCH_SIZE:-256m}
export BENCH_RUNTIME=${BENCH_RUNTIME:-3}
if [ -z "${BENCH_DIR:-}" ]; then
    BENCH_DIR=$(mktemp -d -p . fio-jobfile.XXXXXX)
    trap 'rm -rf "$BENCH_DIR"' EXIT
fi
export BENCH_DIR=$(cd "$BENCH_DIR" && pwd)

if ! command -v fio >/dev/null; then
    echo "installing fio (apt-get)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
fi
cargo build --release -q --manifest-path "$repo/Cargo.toml" -p ringlab
ringlab=$repo/target/release/ringlab
out=$(mktemp -d)

echo "job file: $job; $(fio --version) and ringlab $($ringlab --version | cut -d' ' -f2); CPU $cpu; size $BENCH_SIZE; runtime ${BENCH_RUNTIME}s; $repeats repeats" >&2
for r in $(seq 1 "$repeats"); do
    taskset -c "$cpu" fio "$job" --output-format=json --output="$out/fio-$r.json" >/dev/null
    taskset -c "$cpu" "$ringlab" io --fio "$job" --output-format fio-json --no-kstat \
        --output "$out/ringlab-$r.json" 2>/dev/null
done

python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def load(tool):
    per = {}
    for r in range(1, repeats + 1):
        with open(f"{out}/{tool}-{r}.json") as f:
            doc = json.load(f)
        for j in doc["jobs"]:
            d = j["read"] if j["read"]["total_ios"] else j["write"]
            per.setdefault(j["jobname"], []).append((d["iops"], d["lat_ns"]["mean"] / 1000))
    return per
fio, rl = load("fio"), load("ringlab")
print("| job | fio IOPS | ringlab IOPS | ratio | fio lat us | ringlab lat us |")
print("|---|---|---|---|---|---|")
for name in fio:
    fi = statistics.median(x[0] for x in fio[name]); fl = statistics.median(x[1] for x in fio[name])
    ri = statistics.median(x[0] for x in rl[name]); rlat = statistics.median(x[1] for x in rl[name])
    print(f"| {name} | {fi:,.0f} | {ri:,.0f} | {ri / fi:.2f} | {fl:.1f} | {rlat:.1f} |")
PY
rm -rf "$out"
