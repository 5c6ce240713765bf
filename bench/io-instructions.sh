#!/usr/bin/env bash
# The instructions each read costs ringlab's job loop in user space, against
# the bare loop (bench/floor), counted by valgrind's callgrind.
#
# The co-runs (bench/uring-floor.sh, bench/zram-cost.sh) time the whole
# read, kernel and io-wq worker included, and move by a percent or two
# between machines of one kind. What ringlab's own code adds to a read is
# a smaller figure inside that noise. Callgrind counts it instead: the
# instructions executed in user space inside ringlab's job loop
# (ringlab_io::worker::run_job and all it calls) and inside the floor's
# (ringlab_floor::run), which are the same for the same binary and
# arguments whatever else the machine does (within about one instruction
# a read: how many completions a reap finds can vary). The kernel's part of a read
# (the system call, io-wq, the device) is not counted: it is the same
# kernel path for both, and the co-runs measure it.
#
# Each side runs twice, and the figure is the difference between the two
# runs divided by the difference in reads, so the loop's setup cancels
# out: ringlab with --number-ios BENCH_IOS/10 and BENCH_IOS, the floor
# (which stops on time only) for 1 s and 3 s with the reads it reports.
# Then ringlab's functions that cost most per read (instructions in the
# function itself, by the same difference), and each loop's code
# footprint: the 64-byte lines of code that ran, on average, at least one
# instruction a read in the longer run (a loop that runs through more
# code leaves less of the instruction cache to the io-wq worker that
# shares its CPU; docs/benchmarks.md, 2026-11-29, fourth machine).
#
# ringlab runs as a user types it (evidence on, the default ring and
# reaping); the row's flags are bench_row_flags's (bench/lib/common.sh),
# the same as bench/zram-cost.sh's.
#
# Environment:
#   RINGLAB_BENCH_TARGET  a file or block device to read (default: a 64 MiB
#                         file next to the repo, removed afterwards); both
#                         read it with O_DIRECT
#   BENCH_ROWS ("qd1 qd8cb8"), BENCH_IOS (200000), BENCH_TOP (12),
#   RINGLAB_BIN (default: this tree, built)
#   T_IO_URING_GENERIC    optional: fio's t/io_uring built without
#                         -march=native (fio's ./configure --disable-native,
#                         outside this tree; callgrind cannot run the
#                         AVX-512 code of a native build). Its submitter
#                         thread (submitter_uring_fn) is counted too, with
#                         the row's t/io_uring flags, over a 2 s and a 6 s
#                         run; its reads are the calls to its offset draw
#                         (get_offset, one a read).
# Needs valgrind (installed with apt-get when missing) and cargo.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
read -r -a rows <<<"${BENCH_ROWS-qd1 qd8cb8}"
ios=${BENCH_IOS:-200000}
top=${BENCH_TOP:-12}
tiou_generic=${T_IO_URING_GENERIC:-}
if [[ -n $tiou_generic && ! -x $tiou_generic ]]; then
    echo "T_IO_URING_GENERIC=$tiou_generic: not an executable (build fio's t/io_uring with ./configure --disable-native, outside this tree)" >&2
    exit 2
fi
if ! [[ $ios =~ ^[0-9]+$ ]] || ((ios < 10000)); then
    echo "BENCH_IOS=$ios: give a whole number of reads, at least 10000" >&2
    exit 2
fi

bench_need valgrind valgrind callgrind_annotate valgrind
bench_ringlab
echo "building bench/floor (cargo, release)" >&2
CARGO_TARGET_DIR="$repo/target/floor" cargo build --release -q --manifest-path "$repo/bench/floor/Cargo.toml"
floor="$repo/target/floor/release/ringlab-floor"

out=$(mktemp -d)
cleanup=()
trap 'rm -f "${cleanup[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT
bench_target io-instructions.dat 64

# callgrind OUT FUNCTION CMD... : counts the instructions inside FUNCTION
# (and what it calls); the command's stdout goes to OUT.json.
callgrind() {
    local o=$1 fn=$2
    shift 2
    if ! valgrind --tool=callgrind --toggle-collect="$fn" --dump-instr=yes --callgrind-out-file="$o.cg" \
        "$@" >"$o.json" 2>"$o.err"; then
        echo "failed under valgrind: $*" >&2
        tail -5 "$o.err" >&2
        exit 1
    fi
}

echo "target $target; user-space instructions counted by callgrind inside each job loop; ringlab: $ringlab; floor: $floor" >&2
for row in "${rows[@]}"; do
    flags=$(bench_row_flags "$row")
    # bench/floor takes ringlab's flags.
    read -r -a rl_flags <<<"${flags%%|*}"
    small=$((ios / 10))
    for n in "$small" "$ios"; do
        callgrind "$out/r$n" 'ringlab_io::worker::run_job*' "$ringlab" io "$target" --direct \
            "${rl_flags[@]}" --rw randread --bs 4k --number-ios "$n" --output-format json
    done
    for s in 1 3; do
        callgrind "$out/f$s" 'ringlab_floor::run*' "$floor" io "$target" "${rl_flags[@]}" \
            --runtime "${s}s" --output-format json
    done
    if [[ -n $tiou_generic ]]; then
        read -r -a t_flags <<<"${flags#*|}"
        for s in 2 6; do
            callgrind "$out/t$s" submitter_uring_fn "$tiou_generic" "${t_flags[@]}" -b4096 -p0 -B0 -F0 \
                -n1 -O1 -X0 -R1 -t0 -P0 -r"$s" "$target"
        done
    fi
    python3 - "$row" "$out" "$small" "$ios" "$top" <<'PY'
import json, os, re, subprocess, sys
row, out, small, big, top = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

def total(f):
    for line in open(f + ".cg"):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    sys.exit(f"{f}.cg: no totals line")

def ops(f):
    return json.load(open(f + ".json"))["total"]["ops"]

def by_function(f):
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=no", "--threshold=100", f + ".cg"],
                          capture_output=True, text=True, check=True).stdout
    d = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            # "file:function [object]": the function the instructions ran
            # in (code inlined from other files is named by its file).
            name = re.sub(r" \[.*\]$", "", m.group(2))
            where, _, fn = name.partition(":")
            fn = fn or where
            d[fn] = d.get(fn, 0) + int(m.group(1).replace(",", ""))
    return d

def code_lines(f, reads):
    # Cost lines of a --dump-instr=yes profile: "INSTR LINE COST", each
    # position absolute (0x..., a number), relative (+n, -n) or the same
    # as before (*); the line after a "calls=" line is the call's
    # inclusive cost, counted where the callee's own lines are.
    def pos(tok, prev):
        if tok == "*":
            return prev
        if tok.startswith("0x"):
            return int(tok, 16)
        if tok[0] in "+-":
            return prev + int(tok)
        return int(tok)
    at = ln = 0
    call = False
    per_line = {}
    for text in open(f + ".cg"):
        t = text.split()
        if not t:
            continue
        if t[0].startswith("calls="):
            call = True
            continue
        if len(t) < 3 or not re.fullmatch(r"0x[0-9a-f]+|[+-]\d+|\*", t[0]):
            continue
        at, ln = pos(t[0], at), pos(t[1], ln)
        if call:
            call = False
            continue
        per_line[at // 64] = per_line.get(at // 64, 0) + int(t[2])
    return sum(1 for ir in per_line.values() if ir >= reads)

r_small, r_big = f"{out}/r{small}", f"{out}/r{big}"
f1, f3 = f"{out}/f1", f"{out}/f3"
r_reads = ops(r_big) - ops(r_small)
f_reads = ops(f3) - ops(f1)
if r_reads <= 0 or f_reads <= 0:
    sys.exit(f"{row}: the longer runs made no more reads than the shorter ones")
rl = (total(r_big) - total(r_small)) / r_reads
fl = (total(f3) - total(f1)) / f_reads
print(f"{row}: instructions a read in the job loop (user space): ringlab {rl:.1f}, floor {fl:.1f}, "
      f"ringlab - floor {rl - fl:.1f} ({r_reads} and {f_reads} reads apart)")
rc, fc = code_lines(r_big, ops(r_big)), code_lines(f3, ops(f3))
print(f"{row}: code footprint, 64-byte lines running at least one instruction a read: "
      f"ringlab {rc} ({rc * 64 / 1024:.1f} KiB), floor {fc} ({fc * 64 / 1024:.1f} KiB)")
a, b = by_function(r_small), by_function(r_big)
rows = sorted(((b[k] - a.get(k, 0)) / r_reads, k) for k in b)
print(f"{row}: ringlab's costliest functions, instructions a read in the function itself (inlined code counts where it was inlined):")
for v, k in reversed(rows[-top:]):
    if v >= 0.5:
        print(f"  {v:7.1f}  {k[:140]}")

def reads(f):
    # t/io_uring's calls to get_offset (or its outlined part): one a read.
    # Callgrind names a function once, "(id) name", and by "(id)" after that.
    names, n, lines = {}, 0, open(f + ".cg").read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
        if not m:
            continue
        if m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith("cfn=") and names.get(m.group(1), "").startswith("get_offset"):
            for nxt in lines[i + 1:i + 3]:
                if nxt.startswith("calls="):
                    n += int(nxt.split()[0][6:])
                    break
    return n

t2, t6 = f"{out}/t2", f"{out}/t6"
if os.path.exists(t6 + ".cg"):
    d = reads(t6) - reads(t2)
    if d <= 0:
        sys.exit(f"{row}: t/io_uring's 6 s run made no more reads than its 2 s run (no get_offset calls counted?)")
    print(f"{row}: t/io_uring's submitter thread (user space): {(total(t6) - total(t2)) / d:.1f} instructions a read ({d} reads apart)")
PY
done
