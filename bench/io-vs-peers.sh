#!/usr/bin/env bash
# ringlab io against its peers, in one run, pinned to the same CPU.
#
# 4 KiB random reads with O_DIRECT at iodepth 1 and 32 on one target:
#   ringlab --engine sync      vs  fio --ioengine=psync     (iodepth 1)
#   ringlab --engine uring     vs  fio --ioengine=io_uring  (iodepth 1 and 32;
#                                  at 32 both submitting one request per
#                                  system call, and both in batches)
#   ringlab --engine libaio    vs  fio --ioengine=libaio    (iodepth 1 and 32;
#                                  at 32 one request per io_submit on both
#                                  sides, and batches on both sides)
#   ringlab --engine posixaio  vs  fio --ioengine=posixaio  (iodepth 1 and 32)
# Page-cache-hot rows ("cached": no O_DIRECT, the target read once right
# before each tool's run so every page is cached, and kept: ringlab
# --invalidate 0, fio --invalidate=0 --direct=0):
#   ringlab --engine sync      vs  fio --ioengine=psync     (iodepth 1)
#   ringlab --engine uring     vs  fio --ioengine=io_uring  (iodepth 32, batches)
#   (libaio is left out: Linux AIO on a buffered file completes inside
#   io_submit, so it measures nothing asynchronous.)
# and, if $T_IO_URING is set, against fio's t/io_uring:
#   uring (1, 32), libaio --submit-batch 1 (-a1: with -c1 it submits and
#   reaps one request per system call), uring --fixed-files --fixed-buffers (-B1 -F1),
#   uring --rw nop (-N1: the cost of the ring itself), and uring waiting
#   for 16 or 32 completions per io_uring_enter (--complete-batch, -c16 and
#   -c32: t/io_uring's own default is -s32 -c32).
# Rows labelled "(as typed)" run ringlab exactly as a user types it, with
# kernel evidence on (its default; no --no-kstat), beside the same rows
# with --no-kstat, which every other row passes: the peers count nothing,
# and the as-typed rows show what a user comparing the two defaults sees
# (bench/kstat-overhead.sh measures the difference on its own). The peer
# of an as-typed row runs again in that row, so each row's pair ran side
# by side. Each as-typed row follows its --no-kstat twin; "libaio (as
# typed)" at depth 32 follows "libaio sb1", since one request per
# io_submit is ringlab's default as it is fio's.
# "uring gtod" rows run ringlab with --gtod-reduce (no I/O timed) against
# t/io_uring (-t0 times nothing) and fio --gtod_reduce=1: like with like,
# where the other rows charge ringlab for the latency it measures.
# Both peers set up their rings with COOP_TASKRUN, SINGLE_ISSUER and
# DEFER_TASKRUN whenever the kernel has them (fio since 3.33, t/io_uring
# always, neither can turn them off); ringlab's default ring is the same
# ("uring", no knob flags, as a user types it). The bare kernel ring
# ("uring iou", --mode iou) is shown against fio too, as the cost of
# leaving those flags off.
# Each repeat runs every tool once, in the same order, so drift on a noisy
# machine hits all of them alike; the table shows medians (min-max), the
# ratio ringlab/peer of the medians, and the ratio of each repeat's two
# runs (run next to each other): their median, a 95% distribution-free
# interval for that median (bench/lib/pairs.py; 6 repeats or more) and
# the min-max.
#
# Environment:
#   RINGLAB_BENCH_TARGET  file or block device (default: a 1 GiB file laid out
#                         next to the repo and removed afterwards)
#   BENCH_ZRAM=1          run on /dev/zram0 instead (set up as root if needed).
#                         zram completes I/O inline in the context that
#                         submits it (for io_uring an io-wq worker: zram
#                         cannot take a request without blocking), so a queue
#                         depth cannot overlap anything there: it measures
#                         CPU cost per I/O, not device parallelism. The
#                         "cached" rows then read a 1 GiB file laid out next
#                         to the repo (and removed afterwards): a buffered
#                         read of a block device cannot be tried without
#                         blocking either, so on zram every cached io_uring
#                         read would go to io-wq, which is not the
#                         page-cache-hot path the rows are for.
#   BENCH_CPU (1), BENCH_RUNTIME seconds (5), BENCH_REPEATS (5)
#   BENCH_CASES           a grep -E pattern: only the rows whose
#                         "label|depth|ringlab flags|peer|peer flags" matches
#                         (for example 'libaio' or '^nop')
#   T_IO_URING            path of fio's t/io_uring, built outside this repo
#   RINGLAB_BIN           a ringlab binary to measure instead of building this
#                         tree's (for a before/after comparison)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
cpu=${BENCH_CPU:-1}
runtime=${BENCH_RUNTIME:-5}
repeats=${BENCH_REPEATS:-5}

bench_need fio fio
bench_ringlab

cleanup=()
mkdir -p "$repo/target"
trap 'rm -f "${cleanup[@]}" 2>/dev/null || true' EXIT
if [[ "${BENCH_ZRAM:-0}" == 1 ]]; then
    target=/dev/zram0
    [[ -e $target ]] || modprobe zram
    if [[ $(cat /sys/block/zram0/disksize) == 0 ]]; then
        echo 1G > /sys/block/zram0/disksize
    fi
    # Fill all of it: every tool reads the whole device, and a page never
    # written reads back as a zero page without decompression, far faster.
    mib=$(($(cat /sys/block/zram0/disksize) >> 20))
    dd if=/dev/urandom of=$target bs=1M count="$mib" oflag=direct status=none
    cached_target="$repo/target/bench-cached.dat"
    cleanup+=("$cached_target")
    dd if=/dev/urandom of="$cached_target" bs=1M count=1024 status=none
    sync
else
    bench_target bench-target.dat 1024
fi
cached_target=${cached_target:-$target}

pin() { taskset -c "$cpu" "$@"; }

IOU=(--mode iou)
# fio submits each request in its own system call unless told otherwise
# (iodepth_batch_submit=1); ringlab hands the kernel every request prepared
# in one loop turn at once unless told otherwise (--submit-batch 1 makes it
# submit each). Rows compare like with like: "sb1" rows one request per
# submission on both sides, the others batches on both sides.
FIO_BATCH=(--iodepth_batch_submit=32 --iodepth_batch_complete_max=32)

ringlab_iops() { # kstat|nokstat, depth, then ringlab io flags
    local kstat=()
    if [[ $1 == nokstat ]]; then kstat=(--no-kstat); fi
    local depth=$2
    shift 2
    # NOPs touch no target; everything else reads the target at random.
    local io=("$target" --rw randread --direct)
    if [[ " $* " == *" --rw nop "* ]]; then
        io=()
    elif [[ " $* " == *" --invalidate 0 "* ]]; then
        io=("$cached_target" --rw randread)
    fi
    # --no-kstat (all rows but the "as typed" ones): the peers count
    # nothing, so ringlab does not either (bench/kstat-overhead.sh measures
    # what counting costs).
    pin "$ringlab" io "${io[@]}" "$@" --bs 4k "${kstat[@]}" \
        --iodepth "$depth" --runtime "${runtime}s" --output-format json |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["total"]["iops"]))'
}

fio_iops() { # depth, then fio flags (--ioengine=... and any more)
    local depth=$1
    shift
    # --direct=1 first: a cached row's --direct=0 (in "$@") overrides it.
    local file=$target
    if [[ " $* " == *" --invalidate=0 "* ]]; then file=$cached_target; fi
    pin fio --name=peer --filename="$file" --direct=1 "$@" \
        --rw=randread --bs=4k --iodepth="$depth" --runtime="$runtime" --time_based \
        --output-format=json 2>/dev/null |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

# t/io_uring without polling (-p0), fixed buffers (-B0) or files (-F0), or a
# registered ring fd (-X0), which ringlab's engine does not use; no latency
# tracking (-t0; ringlab does track latency, so this favours the peer: the
# "gtod" rows run ringlab with --gtod-reduce, which times nothing either). The
# batches match ringlab's loop: prepare up to DEPTH requests and submit them
# (-s DEPTH) in the same io_uring_enter that waits for one completion (-c1).
# Its per-second "IOPS=" lines are averaged, skipping the first (ramp).
tiouring_iops() { # depth, then t/io_uring flags that override the defaults
    local depth=$1
    shift
    pin "$T_IO_URING" -d"$depth" -s"$depth" -c1 -b4096 -p0 -B0 -F0 -X0 -O1 -R1 -t0 -n1 \
        -r"$runtime" "$@" "$target" 2>/dev/null |
        python3 -c '
import re, sys
v = []
for line in sys.stdin:
    m = re.search(r"IOPS=([0-9.]+)([KM]?)", line)
    if m and not line.startswith("Maximum"):
        v.append(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)])
v = v[1:] or v
if not v or max(v) == 0:
    print("t/io_uring printed no IOPS line (for -a1 it must be built with libaio-dev installed: a t/io_uring.o compiled before that lacks it, so remove it and rebuild)", file=sys.stderr)
    print("NA")
else:
    print(round(sum(v) / len(v)))'
}

# Reads the whole target through the page cache, so a cached row finds
# every page there (24 GiB of RAM hold the 1 GiB target many times over).
# A block device's page cache is dropped when its last opener closes it, so
# the script holds the target open (fd 9) for as long as it runs.
warm() { dd if="$cached_target" of=/dev/null bs=1M status=none; }
exec 9<"$cached_target"

declare -A res
# label | depth | ringlab flags | peer | peer flags
cases=(
    "sync|1|--engine sync|fio|--ioengine=psync"
    "sync (as typed)|1|--engine sync|fio|--ioengine=psync"
    "uring|1|--engine uring|fio|--ioengine=io_uring"
    "uring (as typed)|1|--engine uring|fio|--ioengine=io_uring"
    "uring sb1|32|--engine uring --submit-batch 1|fio|--ioengine=io_uring"
    "uring|32|--engine uring|fio|--ioengine=io_uring ${FIO_BATCH[*]}"
    "uring (as typed)|32|--engine uring|fio|--ioengine=io_uring ${FIO_BATCH[*]}"
    "uring iou|32|--engine uring ${IOU[*]}|fio|--ioengine=io_uring ${FIO_BATCH[*]}"
    "libaio|1|--engine libaio|fio|--ioengine=libaio"
    "libaio (as typed)|1|--engine libaio|fio|--ioengine=libaio"
    "libaio sb1|32|--engine libaio --submit-batch 1|fio|--ioengine=libaio"
    "libaio (as typed)|32|--engine libaio|fio|--ioengine=libaio"
    "libaio|32|--engine libaio|fio|--ioengine=libaio ${FIO_BATCH[*]}"
    "posixaio|1|--engine posixaio|fio|--ioengine=posixaio"
    "posixaio (as typed)|1|--engine posixaio|fio|--ioengine=posixaio"
    "posixaio|32|--engine posixaio|fio|--ioengine=posixaio"
    "cached sync|1|--engine sync --invalidate 0|fio|--ioengine=psync --direct=0 --invalidate=0"
    "uring gtod|1|--engine uring --gtod-reduce|fio|--ioengine=io_uring --gtod_reduce=1"
    "cached uring|32|--engine uring --invalidate 0|fio|--ioengine=io_uring --direct=0 --invalidate=0 ${FIO_BATCH[*]}"
    "cached uring (as typed)|32|--engine uring --invalidate 0|fio|--ioengine=io_uring --direct=0 --invalidate=0 ${FIO_BATCH[*]}"
)
if [[ -n "${T_IO_URING:-}" && -x "${T_IO_URING}" ]]; then
    cases+=(
        "uring|1|--engine uring|t/io_uring|"
        "uring (as typed)|1|--engine uring|t/io_uring|"
        "uring|32|--engine uring|t/io_uring|"
        "uring (as typed)|32|--engine uring|t/io_uring|"
        "libaio sb1|32|--engine libaio --submit-batch 1|t/io_uring|-a1"
        "uring+fixed|32|--engine uring --fixed-files --fixed-buffers|t/io_uring|-B1 -F1"
        "uring cb16|32|--engine uring --complete-batch 16|t/io_uring|-c16"
        "uring cb32|32|--engine uring --complete-batch 32|t/io_uring|-c32"
        "nop|32|--engine uring --rw nop|t/io_uring|-N1"
        "uring gtod|1|--engine uring --gtod-reduce|t/io_uring|"
        "uring gtod|32|--engine uring --gtod-reduce|t/io_uring|"
    )
else
    echo "note: T_IO_URING not set (or not executable): t/io_uring rows skipped" >&2
fi

if [[ -n "${BENCH_CASES:-}" ]]; then
    kept=()
    for c in "${cases[@]}"; do
        if grep -Eq -- "$BENCH_CASES" <<<"$c"; then kept+=("$c"); fi
    done
    ((${#kept[@]})) || { echo "BENCH_CASES='$BENCH_CASES' matches no row" >&2; exit 2; }
    cases=("${kept[@]}")
fi
echo "target: $target (cached rows: $cached_target), cpu $cpu, ${runtime}s per run, $repeats repeats" >&2
for ((r = 1; r <= repeats; r++)); do
    echo "repeat $r/$repeats" >&2
    for c in "${cases[@]}"; do
        IFS='|' read -r label depth rflags peer pflags <<<"$c"
        # A cached row starts with every page of the target in the page
        # cache (the direct rows before it may have dropped them).
        if [[ $label == cached* ]]; then warm; fi
        evidence=nokstat
        if [[ $label == *"(as typed)"* ]]; then evidence=kstat; fi
        # shellcheck disable=SC2086 # the flag strings are word lists
        res["$c|ringlab"]+="$(ringlab_iops "$evidence" "$depth" $rflags) "
        if [[ $label == cached* ]]; then warm; fi
        case $peer in
            fio)
                # shellcheck disable=SC2086
                p=$(fio_iops "$depth" $pflags)
                ;;
            t/io_uring)
                # shellcheck disable=SC2086
                p=$(tiouring_iops "$depth" $pflags)
                ;;
        esac
        res["$c|peer"]+="$p "
    done
done

printf '%-40s %-28s %-20s %-28s %-7s %s\n' workload "ringlab median (min-max)" peer "peer median (min-max)" ratio "pairwise: median [95% interval] (min-max)"
for c in "${cases[@]}"; do
    IFS='|' read -r label depth rflags peer pflags <<<"$c"
    python3 - "$label" "$depth" "$peer $pflags" "${res[$c|ringlab]}" "${res[$c|peer]}" "$repo/bench/lib" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[6])
import pairs
engine, depth, peer, a, b = sys.argv[1:6]
peer = peer.replace("--ioengine=", "").replace("--iodepth_batch_submit=32 --iodepth_batch_complete_max=32", "batch 32").replace("--direct=0 --invalidate=0", "cached").strip()
a = [int(x) for x in a.split()]
if "NA" in b.split():
    print(f"{'randread qd' + depth + ' ' + engine:<40} {'':<28} {peer:<20} unavailable (see the note above)")
    sys.exit(0)
b = [int(x) for x in b.split()]
ma, mb = statistics.median(a), statistics.median(b)
k = lambda v: f"{v/1000:.1f}k"
print(f"{'randread qd' + depth + ' ' + engine:<40} {k(ma) + ' (' + k(min(a)) + '-' + k(max(a)) + ')':<28} "
      f"{peer:<20} {k(mb) + ' (' + k(min(b)) + '-' + k(max(b)) + ')':<28} {ma / mb if mb else float('nan'):<7.3f} "
      f"{pairs.describe([x / y for x, y in zip(a, b) if y])}")
PY
done
