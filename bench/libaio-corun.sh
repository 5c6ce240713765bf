#!/usr/bin/env bash
# ringlab's libaio against fio's libaio, both at once on one device.
#
# Run one after the other, the two differ by up to 10% from run to run on
# this shared machine (bench/io-vs-peers.sh: 30 repeats still left the
# libaio row undecided). Here each repeat starts both at once, pinned to
# the same CPU, each in a CPU cgroup of equal weight, reading the same
# file at random (4 KiB, O_DIRECT, depth 32): both meet the same device
# and the same host at the same moment. At depth 32 on the virtio disk the
# CPU is mostly idle and the device is what they share, so the ratio of
# their IOPS is the ratio of how fast each one's requests come back.
#
# Each line: both IOPS, the ratio, and for each side its mean completion
# latency and Little's law L = IOPS x mean latency, the requests it had
# in flight on average by its own clock (32 means no slot was idle between
# a completion and the next submission). The last line: the median ratio
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
#   BENCH_CPU (0), BENCH_RUNTIME seconds measured (4; both ramp 1 s first),
#   BENCH_REPEATS (8), RINGLAB_BIN (default: this tree, built), BENCH_RINGLAB_EXTRA
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cpu=${BENCH_CPU:-0}
runtime=${BENCH_RUNTIME:-4}
repeats=${BENCH_REPEATS:-8}
read -r -a extra <<<"${BENCH_RINGLAB_EXTRA:-}"

if ! command -v fio >/dev/null; then
    apt-get update -qq && apt-get install -y -qq fio >/dev/null
fi
if [[ -n "${RINGLAB_BIN:-}" ]]; then
    ringlab=$RINGLAB_BIN
else
    (cd "$repo" && cargo build --release -q -p ringlab)
    ringlab="$repo/target/release/ringlab"
fi
cleanup=()
trap 'rm -f "${cleanup[@]}" 2>/dev/null || true; rmdir "${groups[@]}" 2>/dev/null || true' EXIT
if [[ -n "${RINGLAB_BENCH_TARGET:-}" ]]; then
    target=$RINGLAB_BENCH_TARGET
else
    mkdir -p "$repo/target"
    target="$repo/target/bench-target.dat"
    cleanup+=("$target")
    dd if=/dev/urandom of="$target" bs=1M count=1024 status=none
    sync
fi

if [[ -f /sys/fs/cgroup/cpu/cgroup.procs ]]; then
    base=/sys/fs/cgroup/cpu # cgroup v1: cpu.shares 1024 each
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    base=/sys/fs/cgroup # cgroup v2: cpu.weight 100 each
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
else
    echo "no CPU cgroup controller (neither /sys/fs/cgroup/cpu nor cgroup v2's cpu): run as root on a machine with one" >&2
    exit 1
fi
groups=("$base/ringlab-libaio-corun-a" "$base/ringlab-libaio-corun-b")
mkdir -p "${groups[@]}"

out=$(mktemp -d)
echo "target $target, CPU $cpu, ${runtime}s measured after 1s ramp, $repeats co-runs, ringlab: $ringlab ${extra[*]}" >&2
ratios=()
for ((i = 1; i <= repeats; i++)); do
    # The cgroups swap roles every repeat.
    a=${groups[i % 2]} b=${groups[(i + 1) % 2]}
    (echo $BASHPID >"$a/cgroup.procs"; exec taskset -c "$cpu" "$ringlab" io "$target" --engine libaio --direct \
        --iodepth 32 --rw randread --bs 4k --cpus "$cpu" --ramp-time 1s --runtime "${runtime}s" \
        --output-format json "${extra[@]}" >"$out/rl.json") &
    (echo $BASHPID >"$b/cgroup.procs"; exec taskset -c "$cpu" fio --name=peer --filename="$target" --direct=1 \
        --ioengine=libaio --rw=randread --bs=4k --iodepth=32 --ramp_time=1 --runtime="$runtime" \
        --time_based --output-format=json >"$out/fio.json" 2>/dev/null) &
    wait
    line=$(python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/rl.json"))["total"]
f = json.load(open(f"{d}/fio.json"))["jobs"][0]["read"]
ri, rl = r["iops"], r["read"]["lat_ns"]["mean"] / 1e3
fi, fl = f["iops"], f["lat_ns"]["mean"] / 1e3
print(f"{ri / fi:.4f} ringlab {ri:.0f} IOPS lat {rl:.0f} us L {ri * rl / 1e6:.2f} | fio {fi:.0f} IOPS lat {fl:.0f} us L {fi * fl / 1e6:.2f}")
PY
)
    echo "  $i: ${line#* } ratio ${line%% *}"
    ratios+=("${line%% *}")
done
rm -rf "$out"
python3 - "$repo/bench/lib" "${ratios[@]}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import pairs
print("ringlab/fio IOPS, median [95%] (min-max):", pairs.describe([float(x) for x in sys.argv[2:]]))
PY
