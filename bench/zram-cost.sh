#!/usr/bin/env bash
# Where ringlab's CPU goes per read against t/io_uring's, thread by thread,
# both reading /dev/zram0 at once on one CPU.
#
# On zram a read is CPU work (the copy out of zram), so with both tools on
# one CPU, each in a CPU cgroup of equal weight, the ratio of the reads
# they make over one window is the inverse ratio of what a read costs them.
# This script measures that ratio as bench/libaio-corun.sh does (the block
# layer's block_bio_queue events on that CPU over BENCH_RUNTIME seconds,
# starting 2 s after both started, counted by the submitting thread) and,
# over the same window, each thread's CPU time (the first field of
# /proc/PID/task/TID/schedstat, nanoseconds on a CPU), so it says which
# threads a difference comes from:
#
#   job    the thread that submits and reaps (ringlab-job0; t/io_uring's
#          submitter thread)
#   wrk    io_uring's io-wq workers (iou-wrk-*): zram cannot read without
#          blocking, so each read is handed to one
#   other  every other thread (ringlab's main thread and kernel-evidence
#          sampler; t/io_uring's main thread)
#
# in nanoseconds per read, and the ratio of the two totals. The rows are
# kstat-overhead.sh's: qd1 (-d1 -s1 -c1), qd32 (-d32 -s32 -c1), qd8cb8
# (--complete-batch 8 against -d8 -s8 -c8). Each line is one co-run; the
# last lines give, per row, the median read ratio with its 95%
# distribution-free interval (bench/lib/pairs.py), to four places, and
# the verdict against issue 25's bar (met or missed only when the whole
# interval is on one side of it), and the median cost of each role.
#
# Needs root (zram, cgroups, perf), perf (installed with apt-get when
# missing) and fio's t/io_uring at T_IO_URING (built outside this tree).
#
# Environment:
#   T_IO_URING (required), BENCH_ROWS ("qd8cb8"), BENCH_CPU (0),
#   BENCH_RUNTIME seconds counted (3), BENCH_REPEATS (6), RINGLAB_BIN
#   (default: this tree, built), BENCH_RINGLAB_EXTRA (more ringlab flags,
#   e.g. "--no-kstat"), BENCH_SIDE_NAME (what RINGLAB_BIN is called in the
#   lines, "ringlab"; another name judges nothing: bench/uring-floor.sh
#   runs bench/floor's program in ringlab's place), BENCH_SELF (1: t/io_uring
#   itself in ringlab's place, with the peer's flags, named "self": the
#   same program on both sides, so the ratio's spread is the method's own
#   on this machine, the yardstick for reading ringlab's; 0)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
cpu=${BENCH_CPU:-0}
window=${BENCH_RUNTIME:-3}
repeats=${BENCH_REPEATS:-6}
read -r -a rows <<<"${BENCH_ROWS:-qd8cb8}"
read -r -a extra <<<"${BENCH_RINGLAB_EXTRA:-}"
side=${BENCH_SIDE_NAME:-ringlab}
self_check=${BENCH_SELF:-0}
((self_check)) && side=self
total=$((window + 4))
if [[ $EUID -ne 0 ]]; then
    echo "zram-cost.sh: needs root (zram, cgroups, perf on every thread)" >&2
    exit 2
fi
tiou=${T_IO_URING:-}
if [[ -z $tiou || ! -x $tiou ]]; then
    echo "zram-cost.sh: set T_IO_URING to fio's t/io_uring (build it outside this tree)" >&2
    exit 2
fi

bench_need perf linux-perf
if ((self_check)); then
    ringlab=$tiou
else
    bench_ringlab
fi
bench_quiet
groups=()
out=$(mktemp -d)
trap 'rm -rf "$out"; rmdir "${groups[@]}" 2>/dev/null || true' EXIT
bench_cpu_groups ringlab-zram-cost || exit 1
bench_zram

# Every thread of the two processes: "pid tid comm ns_on_cpu".
threads() {
    local p t
    for p in "$@"; do
        for t in /proc/"$p"/task/*; do
            echo "$p ${t##*/} $(cat "$t/comm" 2>/dev/null) $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)"
        done 2>/dev/null
    done
}

# in_group CGROUP CMD...: starts CMD in the background, in CGROUP, on $cpu
# ($! is its pid).
in_group() {
    local g=$1
    shift
    (echo $BASHPID >"$g/cgroup.procs"; exec taskset -c "$cpu" "$@") &
}

echo "CPU $cpu, reads and CPU counted over ${window}s while both run, $repeats co-runs per row; $side: $ringlab ${extra[*]}; peer: $tiou" >&2
for row in "${rows[@]}"; do
    flags=$(bench_row_flags "$row")
    read -r -a rl_flags <<<"${flags%%|*}"
    read -r -a t_flags <<<"${flags#*|}"
    peer=("$tiou" "${t_flags[@]}" -b4096 -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 -P0 -r"$total" /dev/zram0)
    # The measured side: t/io_uring itself (BENCH_SELF, its chatter
    # dropped as the peer's is) or ringlab (its errors kept).
    if ((self_check)); then
        mine=("${peer[@]}") mine_err=/dev/null
    else
        mine=("$ringlab" io /dev/zram0 --direct "${rl_flags[@]}" --rw randread --bs 4k --cpus "$cpu"
            --runtime "${total}s" --output-format json "${extra[@]}")
        mine_err=/dev/stderr
    fi
    : >"$out/$row.lines"
    for ((i = 1; i <= repeats; i++)); do
        a=${groups[i % 2]} b=${groups[(i + 1) % 2]}
        in_group "$a" "${mine[@]}" >/dev/null 2>"$mine_err"
        rl_pid=$!
        in_group "$b" "${peer[@]}" >/dev/null 2>&1
        t_pid=$!
        sleep 2
        threads "$rl_pid" "$t_pid" >"$out/before"
        perf record -q -m 8M -C "$cpu" -e block:block_bio_queue -o "$out/bio.data" -- sleep "$window" >/dev/null 2>&1
        threads "$rl_pid" "$t_pid" >"$out/after"
        # Each side's own status (a bare `wait` returns 0 whatever they
        # did), both waited for before judging.
        rl_rc=0 t_rc=0
        wait "$rl_pid" || rl_rc=$?
        wait "$t_pid" || t_rc=$?
        if ((rl_rc || t_rc)); then
            echo "a co-run failed: $side exited $rl_rc, t/io_uring $t_rc (run it by hand to see why: ${mine[*]})" >&2
            exit 1
        fi
        perf script -i "$out/bio.data" -F tid 2>/dev/null >"$out/tids"
        line=$(python3 - "$out" "$rl_pid" <<'PY'
import collections, sys
out, rl_pid = sys.argv[1], sys.argv[2]
def load(name):
    d = {}
    for l in open(f"{out}/{name}"):
        f = l.split()
        if len(f) == 4:
            d[f[1]] = (f[0], f[2], int(f[3]))
    return d
before, after = load("before"), load("after")
side = lambda pid: "rl" if pid == rl_pid else "t"
reads = collections.Counter()
for l in open(f"{out}/tids"):
    t = l.strip()
    if t in after:
        reads[side(after[t][0])] += 1
cost = collections.defaultdict(int)
for tid, (pid, comm, ns) in after.items():
    if tid not in before:
        continue
    if comm.startswith("iou-wrk"):
        role = "wrk"
    elif comm == "ringlab-job0" or (comm == "io_uring" and tid != pid):
        role = "job"
    else:
        role = "other"
    cost[(side(pid), role)] += ns - before[tid][2]
if not reads["rl"] or not reads["t"]:
    print("NA no reads counted for one side:", dict(reads))
    sys.exit()
per = {s: {r: cost[(s, r)] / reads[s] for r in ("job", "wrk", "other")} for s in ("rl", "t")}
tot = {s: sum(per[s].values()) for s in per}
print(f"{reads['rl'] / reads['t']:.4f} {tot['t'] / tot['rl']:.4f} "
      + " ".join(f"{per[s][r]:.0f}" for s in ("rl", "t") for r in ("job", "wrk", "other")))
PY
)
        if [[ $line == NA* ]]; then
            echo "  $row $i: $line" >&2
            continue
        fi
        read -r ratio cost rj rw ro tj tw to <<<"$line"
        echo "  $row $i: reads $side/t $ratio, cost t/$side $cost; ns per read: $side job $rj wrk $rw other $ro | t/io_uring job $tj wrk $tw other $to"
        echo "$line" >>"$out/$row.lines"
    done
done
RINGLAB_EXTRA="${extra[*]}" SIDE="$side" python3 - "$repo/bench/lib" "$out" "${rows[@]}" <<'PY'
import os, statistics, sys
sys.path.insert(0, sys.argv[1])
import pairs
out = sys.argv[2]
# Issue 25's bars are set for ringlab as typed: with BENCH_RINGLAB_EXTRA
# the lines name the flags and judge nothing.
extra = os.environ.get("RINGLAB_EXTRA", "")
side = os.environ.get("SIDE", "ringlab")
for row in sys.argv[3:]:
    lines = [l.split() for l in open(f"{out}/{row}.lines")]
    if not lines:
        print(f"{row}: none measured")
        continue
    col = lambda i: [float(l[i]) for l in lines]
    med = lambda i: f"{statistics.median(col(i)):.0f}"
    print(f"{row}: reads {side}/t/io_uring, median [95%] (min-max): {pairs.describe(col(0), 4)}")
    if side != "ringlab":
        print(f"{row}: {side} is not ringlab: no verdict against issue 25's bars")
    elif extra:
        print(f"{row}: ringlab ran with {extra}: no verdict against issue 25's bars (set for ringlab as typed)")
    else:
        print(f"{row}: {pairs.verdict(col(0), pairs.PEER_BARS.get(row))}")
    print(f"{row}: median ns per read, {side} job {med(2)} wrk {med(3)} other {med(4)}; "
          f"t/io_uring job {med(5)} wrk {med(6)} other {med(7)}")
PY
