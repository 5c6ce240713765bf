#!/usr/bin/env bash
# What kernel-evidence collection costs, and whether its counts are right.
#
# 1. Overhead: the same `ringlab io` run (4 KiB randread, O_DIRECT, uring,
#    iodepth $BENCH_DEPTH) with and without collection (--no-kstat),
#    interleaved, pinned to one CPU; prints median IOPS of each and the
#    cost in percent (aim: under 3%).
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

with=() without=()
for ((r = 1; r <= repeats; r++)); do
    echo "repeat $r/$repeats" >&2
    with+=("$(run | field 'round(r["total"]["iops"])')")
    without+=("$(run --no-kstat | field 'round(r["total"]["iops"])')")
done
python3 - "${with[*]}" "${without[*]}" <<'PY'
import statistics, sys
w = [int(x) for x in sys.argv[1].split()]
n = [int(x) for x in sys.argv[2].split()]
mw, mn = statistics.median(w), statistics.median(n)
print(f"overhead: with kstat {mw/1000:.1f}k IOPS ({min(w)/1000:.1f}-{max(w)/1000:.1f}k), "
      f"without {mn/1000:.1f}k ({min(n)/1000:.1f}-{max(n)/1000:.1f}k): cost {100*(mn-mw)/mn:+.2f}%")
PY

if command -v perf >/dev/null; then
    for engine in sync uring; do
        out=$(mktemp)
        cleanup+=("$out")
        perf stat -x, -e raw_syscalls:sys_enter -o "$out.perf" -- \
            taskset -c "$cpu" "$ringlab" io "$target" --engine "$engine" --rw randread --bs 4k \
            --direct --iodepth "$depth" --runtime "${runtime}s" --output-format json >"$out"
        cleanup+=("$out.perf")
        python3 - "$engine" "$out" "$out.perf" <<'PY'
import json, sys
engine, res, perf = sys.argv[1:]
r = json.load(open(res))
ops = r["total"]["ops"]
mine = r["kstat"]["per_op"].get("syscalls_per_op")
count = next(int(l.split(",")[0]) for l in open(perf) if "raw_syscalls:sys_enter" in l)
theirs = count / ops
if mine is None:
    print(f"cross-check {engine}: ringlab could not count ({r['kstat']['unavailable'][0]['reason']})")
else:
    print(f"cross-check {engine}: ringlab {mine:.4f} syscalls/op, perf stat {theirs:.4f} "
          f"({count} calls / {ops} ops): difference {100*(mine-theirs)/theirs:+.2f}%")
PY
    done
fi
