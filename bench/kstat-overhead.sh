#!/usr/bin/env bash
# What kernel-evidence collection costs, and whether its counts are right.
#
# 1. Overhead: the same `ringlab io` run (4 KiB randread, O_DIRECT, uring,
#    iodepth $BENCH_DEPTH) with and without collection (--no-kstat),
#    interleaved, pinned to one CPU; prints median IOPS of each and the
#    cost in percent (aim: under 3%), and the same for the job threads' CPU
#    time per op: where the device, not the CPU, sets the IOPS, what
#    counting costs shows only there.
# 2. Cross-check: ringlab's own syscalls_per_op against
#    `perf stat -e raw_syscalls:sys_enter` around the same kind of run
#    (ops from ringlab's result), for the sync and uring engines (aim:
#    within 2%). perf counts the whole process from exec to exit, including
#    setup and teardown that ringlab leaves out of the measured run, so the
#    run is long enough for those few hundred calls not to matter.
#
# Environment: BENCH_CPU (1), BENCH_RUNTIME seconds (5), BENCH_REPEATS (5),
#              BENCH_DEPTH (32), RINGLAB_BENCH_TARGET (default: a 1 GiB file)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cpu=${BENCH_CPU:-1}
runtime=${BENCH_RUNTIME:-5}
repeats=${BENCH_REPEATS:-5}
depth=${BENCH_DEPTH:-32}

if ! command -v perf >/dev/null; then
    apt-get update -qq && apt-get install -y -qq linux-perf >/dev/null ||
        echo "note: perf not installable; the cross-check is skipped" >&2
fi
(cd "$repo" && cargo build --release -q -p ringlab)
ringlab="$repo/target/release/ringlab"

cleanup=()
trap 'rm -f "${cleanup[@]}" 2>/dev/null || true' EXIT
if [[ -n "${RINGLAB_BENCH_TARGET:-}" ]]; then
    target=$RINGLAB_BENCH_TARGET
else
    target="$repo/target/bench-kstat.dat"
    cleanup+=("$target")
    dd if=/dev/urandom of="$target" bs=1M count=1024 status=none
    sync
fi

field() { python3 -c "import json,sys; r=json.load(sys.stdin); print($1)"; }

run() { # extra flags
    taskset -c "$cpu" "$ringlab" io "$target" --rw randread --bs 4k --direct \
        --iodepth "$depth" --runtime "${runtime}s" --output-format json "$@"
}

# Each run gives "IOPS CPU-ns-per-op" (job threads' user + system time from
# getrusage, which ringlab reports with or without collection).
with=() without=()
sample() {
    python3 -c 'import json,sys; t=json.load(sys.stdin)["total"]; print(round(t["iops"]), round((t["cpu_user_ns"] + t["cpu_sys_ns"]) / t["ops"], 1))'
}
for ((r = 1; r <= repeats; r++)); do
    echo "repeat $r/$repeats" >&2
    with+=("$(run | sample)")
    without+=("$(run --no-kstat | sample)")
done
python3 - "${with[*]}" "${without[*]}" <<'PY'
import statistics, sys
def cols(s):
    v = s.split()
    return [float(x) for x in v[0::2]], [float(x) for x in v[1::2]]
(wi, wc), (ni, nc) = cols(sys.argv[1]), cols(sys.argv[2])
mw, mn = statistics.median(wi), statistics.median(ni)
print(f"overhead: with kstat {mw/1000:.1f}k IOPS ({min(wi)/1000:.1f}-{max(wi)/1000:.1f}k), "
      f"without {mn/1000:.1f}k ({min(ni)/1000:.1f}-{max(ni)/1000:.1f}k): cost {100*(mn-mw)/mn:+.2f}% of IOPS")
cw, cn = statistics.median(wc), statistics.median(nc)
print(f"overhead: with kstat {cw/1000:.2f} CPU us/op ({min(wc)/1000:.2f}-{max(wc)/1000:.2f}), "
      f"without {cn/1000:.2f} ({min(nc)/1000:.2f}-{max(nc)/1000:.2f}): cost {100*(cw-cn)/cn:+.2f}% of CPU per op")
PY

# perf stat counts the whole process, setup and teardown included; ringlab
# only the measured run, and not the calls of its own sampling thread
# (attaching and detaching the windowed counters), which it reports as
# kstat.sampler_syscalls and which are taken off perf's count. A run of one queue's worth of I/O (--io-size) counts
# the fixed part, which the full run's count less that is perf's figure for
# the full run's steady state: (calls_full - calls_tiny) / (ops_full -
# ops_tiny), compared with ringlab's own syscalls_per_op of the full run.
# (Two full runs of different length would assume that both have the same
# rate per op; on a CPU-bound device they do not.)
perf_run() { # engine, then extra ringlab flags -> "calls ops ringlab_per_op"
    local out
    out=$(mktemp)
    cleanup+=("$out" "$out.perf")
    perf stat -x, -e raw_syscalls:sys_enter -o "$out.perf" -- \
        taskset -c "$cpu" "$ringlab" io "$target" --engine "$1" --rw randread --bs 4k \
        --direct --iodepth "$depth" "${@:2}" --output-format json >"$out"
    python3 - "$out" "$out.perf" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
count = next(int(l.split(",")[0]) for l in open(sys.argv[2]) if "raw_syscalls:sys_enter" in l)
mine = r["kstat"]["per_op"].get("syscalls_per_op")
# ringlab's sampling thread is left out of its own count; perf has it.
count -= r["kstat"].get("sampler_syscalls", 0)
print(count, r["total"]["ops"], "none" if mine is None else mine)
PY
}

if command -v perf >/dev/null; then
    for engine in sync uring; do
        read -r c1 o1 _ <<<"$(perf_run "$engine" --io-size "$((4 * depth))k")"
        read -r c2 o2 mine <<<"$(perf_run "$engine" --runtime "${runtime}s")"
        python3 - "$engine" "$c1" "$o1" "$c2" "$o2" "$mine" <<'PY'
import sys
engine, c1, o1, c2, o2, mine = sys.argv[1:]
c1, o1, c2, o2 = int(c1), int(o1), int(c2), int(o2)
theirs = (c2 - c1) / (o2 - o1)
if mine == "none":
    print(f"cross-check {engine}: ringlab could not count system calls here")
else:
    mine = float(mine)
    print(f"cross-check {engine}: ringlab {mine:.4f} syscalls/op, perf stat {theirs:.4f} "
          f"(({c2}-{c1}) calls / ({o2}-{o1}) ops): difference {100*(mine-theirs)/theirs:+.2f}%")
PY
    done
fi
