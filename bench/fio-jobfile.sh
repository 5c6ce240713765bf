#!/usr/bin/env bash
# fio and ringlab run side by side from the same fio job file.
#
# Each repeat runs `fio JOBFILE --output-format=json` and then
# `ringlab io --fio JOBFILE --output-format fio-json`, both pinned to the
# same CPU, and the table shows, per job of the file, the medians over the
# repeats of IOPS, bandwidth, mean latency (lat, and slat/clat apart) and
# syncs as each tool wrote them in fio's JSON shape (reads and writes
# together; sync.total_ios counts no end_fsync in either), the mean size of
# an I/O (bandwidth over IOPS), and the ratio of ringlab's IOPS to fio's. Both set up the same ring (fio's
# io_uring engine sets COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN, as
# ringlab's default ring does where the kernel has them) and, in a job
# file, submit one request per system call (fio's iodepth_batch_submit=1);
# where their defaults still differ, the job file
# says only what both honour. Numbers are measured, not asserted.
#
# Usage: bench/fio-jobfile.sh [JOBFILE]   (default bench/jobs/side-by-side.fio;
#   bench/jobs/bssplit-end-fsync.fio mixes block sizes and ends with fsync)
# Environment: BENCH_DIR (a directory for the data file; default a new one
#   under the current directory), BENCH_SIZE (256m), BENCH_RUNTIME (3),
#   BENCH_REPEATS (3), BENCH_CPU (1), RINGLAB_BIN (a ringlab binary to
#   measure instead of building this tree's).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
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

bench_need fio fio
bench_ringlab
out=$(mktemp -d)

echo "job file: $job; $(fio --version) and ringlab $($ringlab --version | cut -d' ' -f2); CPU $cpu; size $BENCH_SIZE; runtime ${BENCH_RUNTIME}s; $repeats repeats" >&2
for r in $(seq 1 "$repeats"); do
    taskset -c "$cpu" fio "$job" --output-format=json --output="$out/fio-$r.json" >/dev/null
    # fio laid the data file out first: ringlab may write to it (it is
    # this script's own file, in BENCH_DIR).
    taskset -c "$cpu" "$ringlab" io --fio "$job" --output-format fio-json --no-kstat \
        --allow-destructive --output "$out/ringlab-$r.json" 2>/dev/null
done

python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def both(j, key):
    """Mean of key over reads and writes, weighted by their I/Os."""
    n = sum(j[d]["total_ios"] for d in ("read", "write"))
    return sum(j[d][key]["mean"] * j[d]["total_ios"] for d in ("read", "write")) / max(n, 1)
def load(tool):
    per = {}
    for r in range(1, repeats + 1):
        with open(f"{out}/{tool}-{r}.json") as f:
            doc = json.load(f)
        for j in doc["jobs"]:
            iops = j["read"]["iops"] + j["write"]["iops"]
            mib = (j["read"]["bw"] + j["write"]["bw"]) / 1024
            slat_n = j["read"]["slat_ns"]["N"] + j["write"]["slat_ns"]["N"]
            per.setdefault(j["jobname"], []).append(
                (iops, mib, both(j, "lat_ns") / 1000,
                 both(j, "slat_ns") / 1000 if slat_n else None,
                 both(j, "clat_ns") / 1000, j["sync"]["total_ios"]))
    return per
def med(rows, i):
    v = [x[i] for x in rows if x[i] is not None]
    return statistics.median(v) if v else None
def us(v):
    return "-" if v is None else f"{v:.1f}"
fio, rl = load("fio"), load("ringlab")
print("| job | fio IOPS | ringlab IOPS | ratio | fio MiB/s | ringlab MiB/s | KiB per I/O fio/ringlab | fio lat us (slat+clat) | ringlab lat us (slat+clat) | syncs fio/ringlab |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in fio:
    f, r = fio[name], rl[name]
    print(f"| {name} | {med(f, 0):,.0f} | {med(r, 0):,.0f} | {med(r, 0) / med(f, 0):.2f} "
          f"| {med(f, 1):.1f} | {med(r, 1):.1f} "
          f"| {med(f, 1) * 1024 / med(f, 0):.1f}/{med(r, 1) * 1024 / med(r, 0):.1f} "
          f"| {us(med(f, 2))} ({us(med(f, 3))}+{us(med(f, 4))}) "
          f"| {us(med(r, 2))} ({us(med(r, 3))}+{us(med(r, 4))}) "
          f"| {med(f, 5):.0f}/{med(r, 5):.0f} |")
PY
rm -rf "$out"
