#!/usr/bin/env bash
# ringlab's libaio against fio's libaio, both at once on one device,
# counted by the kernel over one common window.
#
# Run one after the other, the two differ by up to 10% from run to run on
# this shared machine (bench/io-vs-peers.sh: 30 repeats still left the
# libaio row undecided). Here each repeat starts both at once, pinned to
# the same CPU, each in a CPU cgroup of equal weight, reading the same
# file at random (4 KiB, O_DIRECT, depth 32): both meet the same device
# and the same host at the same moment. At depth 32 on the virtio disk the
# CPU is mostly idle and the device is what they share.
#
# Each tool's own IOPS figure covers its own window, and the two windows
# do not line up: fio starts its I/O later than ringlab, so a figure
# measured over "1 s ramp, then 4 s" by each covers different seconds, and
# in fio's last part ringlab has already left and fio has the device to
# itself (that made fio look 5% faster, 2026-11-28 in
# docs/benchmarks.md). So both run longer than the window, and the window
# is the kernel's: `perf record` of block:block_rq_issue on every CPU for
# BENCH_RUNTIME seconds, starting 2 s after both started, and each side's
# figure is the requests the block layer issued for it (counted by the
# submitting thread's name: ringlab-job0, fio) per second of that window.
# Each line: both figures and their ratio; the last line the median ratio
# with its 95% distribution-free interval (bench/lib/pairs.py).
#
# ringlab runs as a user types it (evidence on, its default reaping);
# fio with its defaults (iodepth_batch_submit=1, and one completion per
# io_getevents: iodepth_batch_complete_max defaults to the minimum, 1).
# BENCH_RINGLAB_EXTRA adds flags to ringlab (for example
# "--complete-max 1 --no-kstat").
#
# Environment:
#   RINGLAB_BENCH_TARGET  a file (default: a 1 GiB file laid out next to
#                         the repo and removed afterwards)
#   BENCH_CPU (0), BENCH_RUNTIME seconds counted (3), BENCH_REPEATS (8),
#   RINGLAB_BIN (default: this tree, built), BENCH_RINGLAB_EXTRA
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
cpu=${BENCH_CPU:-0}
window=${BENCH_RUNTIME:-3}
repeats=${BENCH_REPEATS:-8}
read -r -a extra <<<"${BENCH_RINGLAB_EXTRA:-}"
# Both start, the window opens after 2 s and lasts $window s; both keep
# going 2 s past its end.
total=$((window + 4))

bench_need fio fio perf linux-perf
bench_ringlab
bench_quiet
cleanup=()
groups=()
out=$(mktemp -d)
trap 'rm -f "${cleanup[@]}" 2>/dev/null || true; rm -rf "$out"; rmdir "${groups[@]}" 2>/dev/null || true' EXIT
bench_target bench-target.dat 1024

bench_cpu_groups ringlab-libaio-corun || exit 1

echo "target $target, CPU $cpu, requests counted over ${window}s while both run, $repeats co-runs, ringlab: $ringlab ${extra[*]}" >&2
ratios=()
for ((i = 1; i <= repeats; i++)); do
    # The cgroups swap roles every repeat.
    a=${groups[i % 2]} b=${groups[(i + 1) % 2]}
    (echo $BASHPID >"$a/cgroup.procs"; exec taskset -c "$cpu" "$ringlab" io "$target" --engine libaio --direct \
        --iodepth 32 --rw randread --bs 4k --cpus "$cpu" --runtime "${total}s" \
        --output-format json "${extra[@]}" >/dev/null) &
    (echo $BASHPID >"$b/cgroup.procs"; exec taskset -c "$cpu" fio --name=peer --filename="$target" --direct=1 \
        --ioengine=libaio --rw=randread --bs=4k --iodepth=32 --runtime="$total" \
        --time_based --output-format=json >/dev/null 2>&1) &
    sleep 2
    perf record -q -m 8M -a -e block:block_rq_issue -o "$out/issue.data" -- sleep "$window" >/dev/null 2>&1
    if ! wait; then
        echo "a co-run failed (run the two commands above by hand to see why)" >&2
        exit 1
    fi
    line=$(perf script -i "$out/issue.data" -F comm 2>/dev/null | python3 -c '
import collections, sys
window = float(sys.argv[1])
n = collections.Counter(l.strip() for l in sys.stdin)
r, f = n["ringlab-job0"], n["fio"]
if not r or not f:
    print("NA neither side issued a request in the window:", dict(n.most_common(3)))
else:
    print(f"{r / f:.4f} ringlab {r / window:.0f}/s fio {f / window:.0f}/s")
' "$window")
    if [[ $line == NA* ]]; then
        echo "  $i: $line" >&2
        continue
    fi
    echo "  $i: ${line#* } ratio ${line%% *}"
    ratios+=("${line%% *}")
done
python3 - "$repo/bench/lib" "${ratios[@]}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import pairs
v = [float(x) for x in sys.argv[2:]]
print("ringlab/fio requests issued, median [95%] (min-max):", pairs.describe(v) if v else "none measured")
PY
