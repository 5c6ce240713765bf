#!/usr/bin/env bash
# What kernel evidence costs ringlab as a user types it, and whether its
# counts are right.
#
# 1. Overhead. Each row runs four variants:
#      as typed   ringlab with kernel evidence on (the default, no flag)
#      no-kstat   the same with --no-kstat (nothing collected)
#      full       the same with --evidence full (every io_uring tracepoint,
#                 per-request stage latencies)
#      peer       t/io_uring (I/O rows) or wrk (HTTP rows)
#    Rows:
#      zram qd1    ringlab io /dev/zram0 --direct --iodepth 1 --rw randread
#                  --bs 4k --cpus CPU  vs  t/io_uring -d1 -s1 -c1
#      zram qd32   the same at --iodepth 32     vs  t/io_uring -d32 -s32 -c1
#      zram qd8cb8 --iodepth 8 --complete-batch 8  vs  t/io_uring -d8 -s8 -c8
#      http cN     ringlab http --io uring -t1 -cN  vs  wrk -t1 -cN, both
#                  against `ringlab serve` pinned to the other CPU
#      nop-ROW     (not run unless named in BENCH_IO_ROWS) ROW's batching
#                  with no device: ringlab io --rw nop  vs  t/io_uring -N1,
#                  IORING_OP_NOP requests, which the kernel completes at
#                  once, so the ratio is what each tool's own loop costs
#                  per request. A diagnostic row, with no bar: on zram the
#                  same loops run beside 4 us of the kernel's work.
#    t/io_uring always runs with -b4096 -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 -P0:
#    4 KiB random O_DIRECT reads, one thread, no polling, no fixed buffers
#    or files and no registered ring fd (t/io_uring's defaults are -p1 -B1
#    -F1 -X1; ringlab's default ring uses none of them), no latency
#    tracking (-t0 is its default; ringlab does time every I/O, which
#    favours the peer). Its per-second "IOPS=" lines are averaged, the first
#    (ramp) skipped. BENCH_TIOURING_EXTRA adds flags (e.g. "-X1").
#    The figure of an I/O row is IOPS as the tool printed it; of an HTTP
#    row, requests per client CPU-second: the responses the client counted
#    over the user + system time of the whole client process (wait4's
#    rusage, as bench/http-vs-wrk.sh measures wrk), for ringlab and wrk
#    alike, so whatever collection costs outside the client's threads
#    (loading BPF programs, reading maps) is charged too. ringlab's own
#    figure (its threads' CPU during the measured run, from its JSON) and
#    requests/s are printed beside it.
#    Every run is pinned with taskset to BENCH_CPU, the peer's too. Each
#    repeat runs every variant of a row once, back to back, the order
#    rotated by one each repeat so no variant always goes first. The table
#    shows the median (min-max) over the repeats, and the ratios
#    as-typed/no-kstat, as-typed/peer, full/no-kstat as the median of each
#    repeat's ratio (pairwise: variants of the same repeat ran seconds
#    apart), a 95% distribution-free interval for that median (order
#    statistics of the binomial; it needs 6 repeats or more) and the
#    min-max. A last block holds each ratio against issue 25's bars: met
#    or missed only when the whole interval lies on one side of the bar,
#    otherwise undecided at the spread of that run.
# 2. Cross-check: ringlab's own syscalls_per_op (counted by its BPF program
#    on raw_syscalls:sys_enter for the whole thread group, during the
#    measured run) against `perf stat -e raw_syscalls:sys_enter` around the
#    same kind of run on zram at depth 32, for the sync and uring engines
#    (aim: within 2%). perf counts the whole process from exec to exit,
#    setup and teardown included; a run of one queue's worth of I/O
#    (--io-size) counts that fixed part, and (calls_full - calls_tiny) /
#    (ops_full - ops_tiny) is perf's figure for the full run's steady state.
# 3. The observer by profile. On a shared host the pairs of part 1 move by
#    +-30% from run to run, too much to tell a 2% cost; a profile measures
#    the observer directly. For each row, the as-typed run and the
#    --no-kstat run are sampled (perf record -e cpu-clock on the client's
#    CPU only), BENCH_PROFILE_REPEATS times each, alternating. The evidence's
#    share of that CPU's busy samples in an as-typed run is the samples of
#    (a) the evidence's own threads (ringlab-windows, ringlab-stages), (b)
#    the kernel's BPF and tracepoint-call path (bpf_prog_*, bpf_trace_run*,
#    __bpf_trace_*, trace_call_bpf, the syscall slow path that an attached
#    sys_enter program forces: syscall_trace_enter, trace_sys_enter), and
#    (c) the main thread's samples beyond its median share in the
#    --no-kstat runs (it reads /proc for the context switches and the
#    counters at the end). On a CPU-bound row the IOPS lost to the observer
#    is at most that share, so "as typed / --no-kstat >= 1 - share".
# 4. Co-runs against the peer. Two runs made one after the other meet a
#    different host; two runs made at the same moment on the same CPU meet
#    the same one. ringlab as typed and its peer run BENCH_CORUN_REPEATS
#    times at once on the client CPU, each in a CPU cgroup of its own with
#    equal weight (sides swapped every repeat), so each gets half the CPU
#    and the ratio of their figures (IOPS; for HTTP, responses per
#    CPU-second of each client's rusage, against the same server) is the
#    ratio of their costs per operation. Two identical ringlab runs co-run
#    this way gave 1.000 (0.999-1.000), and a 300 ns spin per I/O on one
#    side 1.056 (about 4.8% of a zram read at depth 1). On the I/O rows both
#    figures cover the same seconds: t/io_uring runs N s (N = the run time,
#    at least 6) and prints a line per second up to N-1, of which the first
#    and the last are dropped, so its figure covers seconds 1 to N-2;
#    ringlab runs with --ramp-time 1s --runtime N-3 s, so its figure covers
#    the same seconds (the ramp's I/O is not counted; the work is the
#    same). Before, ringlab's figure covered its whole run and t/io_uring's
#    two seconds of it, and sets of co-runs moved far more. The HTTP rows
#    compare whole runs of equal length. The ratios get the same median,
#    95% interval and verdicts as part 1. Under each HTTP row: ringlab's
#    voluntary context switches per response (each is the client finding
#    no completion and sleeping; bench/lib/corun.py's CORUN_DETAIL) and
#    Spearman's rho of them with the ratio.
#    Not for as typed against --no-kstat: the evidence's BPF programs sit
#    on global tracepoints, so the co-running side pays for them too (as
#    typed against --evidence full co-ran at 0.999, against 0.90 in
#    turns); part 3 measures that cost. For the same reason the peer pays
#    the default's windowed programs on its own system calls during a
#    co-run: a bias in ringlab's favour, at most the BPF/tracepoint share
#    of part 3 scaled by the peer's system calls per operation (wrk makes
#    about 4 a request, ringlab 0.15-0.55).
#
# Needs root (zram setup, BPF) and 2 CPUs. Sets up /dev/zram0 if its
# disksize is 0 (1 GiB) and fills it once from /dev/urandom (a page never
# written reads back as a zero page without decompression, far faster).
# Installs wrk (and perf for the cross-check) with apt-get when missing.
#
# Environment:
#   BENCH_CPU (1)            the CPU every client and t/io_uring run on
#   BENCH_SERVER_CPU         the CPU of `ringlab serve` (the other of 0/1)
#   BENCH_RUNTIME (5)        seconds per run
#   BENCH_REPEATS (5)        repeats (each runs every variant of every row)
#   BENCH_IO_ROWS ("qd1 qd32 qd8cb8")   I/O rows; empty skips them; add
#                            nop-qd1 nop-qd32 nop-qd8cb8 for the NOP rows
#   BENCH_CONNS ("10 50")    HTTP rows' connection counts; empty skips them
#   BENCH_SERVE_IO (epoll)   `ringlab serve --io`
#   BENCH_PORT (18090)       the server's port on 127.0.0.1
#   BENCH_CROSSCHECK (1)     0 skips the perf cross-check
#   BENCH_PROFILE (1)        0 skips the observer's profile (part 3)
#   BENCH_PROFILE_REPEATS (3) profiled runs of each variant per row
#   BENCH_CORUN (1)          0 skips the co-runs with the peer (part 4)
#   BENCH_CORUN_REPEATS (16) co-runs per row (sets of 8 left the HTTP rows'
#                            intervals 10-20% wide and undecided; 16 decided
#                            c50 and c400, docs/benchmarks.md 2026-11-28)
#   T_IO_URING               path of fio's t/io_uring, built outside this
#                            repo; unset: its columns say "unavailable"
#   BENCH_TIOURING_EXTRA     more t/io_uring flags (override the above)
#   BENCH_RINGLAB_EXTRA      more flags for every ringlab run (e.g.
#                            "--gtod-reduce": no I/O timed, as t/io_uring -t0);
#                            printed with the peers; the co-run lines then
#                            say "with FLAGS" for "as typed" and give no
#                            verdict against the bars (set for as typed)
#   BENCH_BASELINE_BIN       a second ringlab build (say, before a change):
#                            each co-run repeat (part 4) co-runs it with the
#                            peer too, and each row adds "baseline / peer"
#                            and "as typed / baseline, paired" (the ratio of
#                            the two builds' ratios within each repeat). Two
#                            builds are compared through the peer because
#                            co-running one against the other hides what
#                            they differ by: a build that records no
#                            latency co-ran at 1.008 against the head, and
#                            at 1.021 [1.017-1.027] through t/io_uring
#                            (docs/benchmarks.md, 2026-11-27 23:16 UTC).
#                            bench/floor's program takes the HTTP rows'
#                            command line too: as the baseline it shows
#                            where a bare io_uring client on the io-uring
#                            crate stands against wrk (bench/uring-floor.sh)
#   RINGLAB_BIN              a ringlab binary to measure instead of building
#                            this tree's
# Numbers are measured, not asserted; nothing here is a test.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
cpu=${BENCH_CPU:-1}
runtime=${BENCH_RUNTIME:-5}
repeats=${BENCH_REPEATS:-5}
io_rows=${BENCH_IO_ROWS-"qd1 qd32 qd8cb8"}
conns_list=${BENCH_CONNS-"10 50"}
serve_io=${BENCH_SERVE_IO:-epoll}
port=${BENCH_PORT:-18090}
crosscheck=${BENCH_CROSSCHECK:-1}
profile=${BENCH_PROFILE:-1}
profile_repeats=${BENCH_PROFILE_REPEATS:-3}
corun=${BENCH_CORUN:-1}
corun_repeats=${BENCH_CORUN_REPEATS:-16}
tiou_extra=${BENCH_TIOURING_EXTRA:-}
ringlab_extra=${BENCH_RINGLAB_EXTRA:-}
baseline_bin=${BENCH_BASELINE_BIN:-}
if [[ -n $baseline_bin && ! -x $baseline_bin ]]; then
    echo "kstat-overhead.sh: BENCH_BASELINE_BIN=$baseline_bin is not an executable" >&2
    exit 2
fi
target=/dev/zram0

if [[ $EUID -ne 0 ]]; then
    echo "kstat-overhead.sh: needs root (zram setup, BPF counters); run it with sudo" >&2
    exit 2
fi
if [[ $(nproc) -lt 2 ]]; then
    echo "kstat-overhead.sh: needs 2 CPUs (client on one, server on the other)" >&2
    exit 2
fi
if [[ -z ${BENCH_SERVER_CPU:-} ]]; then
    if [[ $cpu == 0 ]]; then server_cpu=1; else server_cpu=0; fi
else
    server_cpu=$BENCH_SERVER_CPU
fi

tiou=""
if [[ -n ${T_IO_URING:-} && -x ${T_IO_URING} ]]; then
    tiou=$T_IO_URING
elif [[ -n $io_rows ]]; then
    echo "note: T_IO_URING not set (or not executable): the t/io_uring columns say unavailable" >&2
fi

need=()
if [[ -n $conns_list ]]; then need+=(wrk wrk); fi
if [[ $crosscheck == 1 || $profile == 1 ]]; then need+=(perf linux-perf); fi
bench_need "${need[@]}" ||
    echo "note: apt-get could not install what is missing; what needs it is skipped" >&2
if [[ -n $conns_list ]] && ! command -v wrk >/dev/null; then
    echo "kstat-overhead.sh: wrk is missing and apt-get could not install it" >&2
    exit 1
fi

bench_ringlab
bench_quiet

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

if [[ -n $io_rows || $crosscheck == 1 ]]; then
    bench_zram
fi

# Runs a command pinned to CPU $1; prints "exit_code cpu_seconds" on the
# first line (user + system time of the whole process and its children,
# from wait4's rusage, as bench/http-vs-wrk.sh measures wrk), then what the
# command wrote to stdout; its stderr is shown only when it fails.
pinned() {
    python3 - "$@" <<'PY'
import os, selectors, sys
cmd = ["taskset", "-c", sys.argv[1]] + sys.argv[2:]
r, w = os.pipe()
er, ew = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(w, 1); os.dup2(ew, 2)
    os.close(r); os.close(er)
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
os.close(w); os.close(ew)
sel = selectors.DefaultSelector()
sel.register(r, selectors.EVENT_READ, "out"); sel.register(er, selectors.EVENT_READ, "err")
bufs = {"out": b"", "err": b""}
while sel.get_map():
    for key, _ in sel.select():
        data = os.read(key.fd, 65536)
        if data:
            bufs[key.data] += data
        else:
            sel.unregister(key.fd); os.close(key.fd)
_, status, ru = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
if code != 0:
    sys.stderr.write("failed (exit %d): %s\n%s" % (code, " ".join(cmd), bufs["err"].decode(errors="replace")[-2000:]))
print(code, ru.ru_utime + ru.ru_stime)
sys.stdout.write(bufs["out"].decode(errors="replace"))
PY
}

# Each measurement prints one line: "figure extra..." or "NA reason".
# I/O: IOPS.
# A row's flags are bench_row_flags's (bench/lib/common.sh), the table
# zram-cost.sh and io-instructions.sh use; a nop- row takes its device
# row's.
io_flags() { # row -> ringlab io flags
    local f
    if ! f=$(bench_row_flags "${1#nop-}" 2>/dev/null); then
        echo "unknown I/O row '$1' (BENCH_IO_ROWS: qd1 qd32 qd8cb8, and nop-qd1 nop-qd32 nop-qd8cb8)" >&2
        exit 2
    fi
    echo "${f%%|*}"
}
tiou_flags() { # row -> t/io_uring flags
    local f
    f=$(bench_row_flags "${1#nop-}")
    echo "${f#*|}"
}
# The command of a row's variant, in the array cmd, SECONDS long: ringlab
# as the variant says (flags_of), t/io_uring or wrk for "peer". Every part
# (turns, profile, co-runs) runs these, so they compare the same commands.
row_cmd() { # row variant seconds
    local row=$1 v=$2 s=$3
    # shellcheck disable=SC2046,SC2086 # the flag strings are word lists
    case $row:$v in
        c*:peer) cmd=(wrk -t1 -c"${row#c}" -d"${s}s" "$url") ;;
        c*) cmd=("$ringlab" http --io uring -t1 -c"${row#c}" -d"${s}s" --output-format json $(flags_of "$v") "$url") ;;
        nop-*:peer) cmd=("$tiou" -N1 $(tiou_flags "$row") -b4096 -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 -P0 $tiou_extra -r"$s" "$target") ;;
        *:peer) cmd=("$tiou" $(tiou_flags "$row") -b4096 -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 -P0 $tiou_extra -r"$s" "$target") ;;
        nop-*) cmd=("$ringlab" io --rw nop $(io_flags "$row") \
            --cpus "$cpu" --runtime "${s}s" --output-format json $(flags_of "$v")) ;;
        *) cmd=("$ringlab" io "$target" --direct $(io_flags "$row") --rw randread --bs 4k \
            --cpus "$cpu" --runtime "${s}s" --output-format json $(flags_of "$v")) ;;
    esac
}
ringlab_io() { # row variant
    row_cmd "$1" "$2" "$runtime"
    pinned "$cpu" "${cmd[@]}" |
        python3 -c '
import json, sys
code, _ = sys.stdin.readline().split()
if code != "0":
    print("NA failed"); sys.exit()
print(round(json.load(sys.stdin)["total"]["iops"]))'
}
peer_io() { # row
    if [[ -z $tiou ]]; then
        echo "NA T_IO_URING not set"
        return
    fi
    row_cmd "$1" peer "$runtime"
    pinned "$cpu" "${cmd[@]}" |
        python3 -c '
import re, sys
code, _ = sys.stdin.readline().split()
v = []
for line in sys.stdin:
    m = re.search(r"IOPS=([0-9.]+)([KM]?)", line)
    if m and not line.startswith("Maximum"):
        v.append(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6}[m.group(2)])
v = v[1:] or v
if code != "0" or not v or max(v) == 0:
    # It prints one line per second after the first: -r1 prints none.
    print("NA t/io_uring printed no IOPS line (it needs BENCH_RUNTIME of 2 or more)")
else:
    print(round(sum(v) / len(v)))'
}

# HTTP: "req_per_client_cpu_s req_per_s in_run_thread_figure".
url="http://127.0.0.1:$port/"
ringlab_http() { # row variant
    row_cmd "$1" "$2" "$runtime"
    pinned "$cpu" "${cmd[@]}" |
        python3 -c '
import json, sys
code, cpu = sys.stdin.readline().split()
if code != "0":
    print("NA failed"); sys.exit()
r = json.load(sys.stdin)
n = r["http"]["responses"]
t = r["total"]
ns = t["cpu_user_ns"] + t["cpu_sys_ns"]
if float(cpu) <= 0:
    print("NA no CPU time in the rusage"); sys.exit()
print(round(n / float(cpu)), round(t["iops"]), round(n / (ns / 1e9)) if ns else "-")'
}
peer_http() { # row
    row_cmd "$1" peer "$runtime"
    pinned "$cpu" "${cmd[@]}" |
        python3 -c '
import re, sys
code, cpu = sys.stdin.readline().split()
out = sys.stdin.read()
m = re.search(r"(\d+) requests in", out)
r = re.search(r"Requests/sec:\s*([0-9.]+)", out)
if code != "0" or not m or not r or float(cpu) <= 0:
    print("NA wrk printed no request count")
else:
    print(round(int(m.group(1)) / float(cpu)), round(float(r.group(1))), "-")'
}

start_server() {
    ulimit -n 65536 2>/dev/null || true
    taskset -c "$server_cpu" "$ringlab" serve --io "$serve_io" --listen "127.0.0.1:$port" \
        >"$work/serve.out" 2>"$work/serve.err" &
    server_pid=$!
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return; fi
        if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "kstat-overhead.sh: ringlab serve did not listen on 127.0.0.1:$port:" >&2
    cat "$work/serve.err" >&2
    exit 1
}

variants=(typed nokstat full peer)
flags_of() { # variant -> extra ringlab flags (BENCH_RINGLAB_EXTRA after them)
    case $1 in
        typed) echo "$ringlab_extra" ;;
        nokstat) echo "--no-kstat $ringlab_extra" ;;
        full) echo "--evidence full $ringlab_extra" ;;
    esac
}

rows=()
for r in $io_rows; do io_flags "$r" >/dev/null; rows+=("$r"); done
for c in $conns_list; do rows+=("c$c"); done
((${#rows[@]})) || { echo "kstat-overhead.sh: no rows (BENCH_IO_ROWS and BENCH_CONNS both empty)" >&2; exit 2; }
if [[ -n $conns_list ]]; then start_server; fi

results="$work/results"
: >"$results"
start_utc=$(date -u +%H:%M)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "kstat overhead: client on CPU $cpu, server on CPU $server_cpu, ${runtime}s per run, $repeats repeats" >&2
for ((rep = 0; rep < repeats; rep++)); do
    for row in "${rows[@]}"; do
        for ((i = 0; i < ${#variants[@]}; i++)); do
            v=${variants[$(((i + rep) % ${#variants[@]}))]}
            # shellcheck disable=SC2046 # flag strings are word lists
            case "$row:$v" in
                c*:peer) line=$(peer_http "$row") ;;
                c*) line=$(ringlab_http "$row" "$v") ;;
                *:peer) line=$(peer_io "$row") ;;
                *) line=$(ringlab_io "$row" "$v") ;;
            esac
            echo "$row $v $rep $line" >>"$results"
            echo "  repeat $((rep + 1))/$repeats, $row, $v: $line" >&2
        done
    done
done

echo "ringlab $("$ringlab" --version | cut -d' ' -f2) ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "commit unknown")), kernel $(uname -r)"
echo "client CPU $cpu, server (ringlab serve --io $serve_io) CPU $server_cpu, ${runtime}s per run, $repeats repeats;" \
    "started $start_utc UTC with load average $load_start, done $(date -u +%H:%M) UTC with $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n $tiou ]]; then
    peers="$tiou -b4096 -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 -P0${tiou_extra:+ $tiou_extra}"
else
    peers="t/io_uring unavailable (T_IO_URING not set)"
fi
echo "peers: $peers; wrk $(wrk -v 2>&1 | head -1 | cut -d' ' -f2 || true)${ringlab_extra:+; every ringlab run with $ringlab_extra}${baseline_bin:+; baseline build (co-runs) $baseline_bin}"
python3 - "$results" "$cpu" "$repo/bench/lib" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[3])
import pairs as pairs_lib
rows = {}
order = []
for line in open(sys.argv[1]):
    row, v, rep, *rest = line.split()
    if row not in order:
        order.append(row)
    val = None if rest[0] == "NA" else float(rest[0])
    why = " ".join(rest[1:]) if rest[0] == "NA" else None
    rows.setdefault(row, {}).setdefault(v, {})[int(rep)] = (val, rest[1:] if val is not None else why)

def k(x):
    return f"{x/1000:.1f}k"

def summary(vals):
    m = statistics.median(vals)
    return f"{k(m)} ({k(min(vals))}-{k(max(vals))})"

cpu = sys.argv[2]
names = {}
for row in order:
    if row.startswith("c"):
        names[row] = (pairs_lib.row_title(row), "requests per client CPU-second", f"wrk -t1 -c{row[1:]}")
    else:
        nop = "-N1 " if row.startswith("nop-") else ""
        names[row] = (pairs_lib.row_title(row), "IOPS", nop + pairs_lib.IO_ROWS[row.removeprefix("nop-")][1])
label = {
    "typed": "as typed (evidence default)",
    "nokstat": "--no-kstat",
    "full": "--evidence full",
}

def pairs_of(d, a, b):
    A, B = d.get(a, {}), d.get(b, {})
    return sorted(A[r][0] / B[r][0] for r in A if r in B and A[r][0] and B[r][0])

def ratio(d, a, b):
    """Pairwise median [95% interval] (min-max), or the reason."""
    A, B = d.get(a, {}), d.get(b, {})
    pairs = pairs_of(d, a, b)
    if not pairs:
        why = next((B[r][1] for r in B if B[r][0] is None), None) or next((A[r][1] for r in A if A[r][0] is None), "no pair")
        return f"unavailable ({why})"
    return pairs_lib.describe(pairs)

def verdict(d, a, b, bar):
    return pairs_lib.verdict(pairs_of(d, a, b), bar)

for row in order:
    title, unit, peer = names[row]
    d = rows[row]
    print()
    print(f"{title}: {unit}, median (min-max) of {max(len(x) for x in d.values())} repeats")
    for v in ("typed", "nokstat", "full", "peer"):
        got = d.get(v, {})
        vals = [x[0] for x in got.values() if x[0] is not None]
        name = label.get(v) or (peer if row.startswith("c") else f"t/io_uring {peer}")
        if not vals:
            why = next((x[1] for x in got.values()), "not run")
            print(f"  {name:<32} unavailable ({why})")
            continue
        line = f"  {name:<32} {summary(vals):<26}"
        if row.startswith("c"):
            rps = [float(x[1][0]) for x in got.values() if x[0] is not None]
            line += f" req/s {summary(rps)}"
            if v != "peer":
                own = [float(x[1][1]) for x in got.values() if x[0] is not None and x[1][1] != "-"]
                if own:
                    line += f"; per thread CPU-second in the run (ringlab's JSON) {summary(own)}"
        bad = len(got) - len(vals)
        if bad:
            line += f"; {bad} run(s) failed"
        print(line.rstrip())

print()
print("ratios: median [95% interval of that median] (min-max) of each repeat's ratio")
w = max(len(names[r][0]) for r in order)
print(f"  {'row':<{w}}  {'as typed / --no-kstat':<36} {'as typed / peer':<36} {'full / --no-kstat'}")
for row in order:
    d = rows[row]
    print(f"  {names[row][0]:<{w}}  {ratio(d, 'typed', 'nokstat'):<36} {ratio(d, 'typed', 'peer'):<36} {ratio(d, 'full', 'nokstat')}")

print()
print("against issue 25's bars (met or missed only when the 95% interval is wholly on one side)")
for row in order:
    d = rows[row]
    own = verdict(d, "typed", "nokstat", pairs_lib.EVIDENCE_BAR)
    peer = verdict(d, "typed", "peer", pairs_lib.peer_bar(row))
    print(f"  {names[row][0]:<{w}}  as typed / --no-kstat {own}; as typed / peer {peer}")
PY

# 3. The observer by profile (see the head of this file).
# prof_run: output file, row, variant: one sampled run on the client CPU.
prof_run() {
    local out=$1
    row_cmd "$2" "$3" "$runtime"
    perf record -q -C "$cpu" -e cpu-clock -o "$out" -- taskset -c "$cpu" "${cmd[@]}" >/dev/null 2>"$work/prof.err" ||
        { echo "  (perf record failed: $(tail -1 "$work/prof.err"))" >&2; return 1; }
    perf script -i "$out" -F comm,ip,sym 2>/dev/null >"$out.txt"
}
if [[ $profile == 1 ]]; then
    echo
    if ! command -v perf >/dev/null; then
        echo "profile: skipped (perf is not installed)"
    else
        echo "the observer by profile: the evidence's share of the client CPU's busy samples in the as-typed runs"
        echo "(median of $profile_repeats runs per variant; threads ringlab-windows/-stages, BPF and tracepoint-call path, main thread beyond --no-kstat's)"
        main_comm=$(basename "$ringlab" | cut -c1-15)
        prof_rows=()
        for r in $io_rows; do prof_rows+=("$r"); done
        for c in $conns_list; do prof_rows+=("c$c"); done
        for row in "${prof_rows[@]}"; do
            files=()
            for ((i = 1; i <= profile_repeats; i++)); do
                for v in typed nokstat; do
                    f="$work/prof-$row-$v-$i"
                    if prof_run "$f" "$row" "$v"; then files+=("$v=$f.txt"); fi
                done
            done
            python3 - "$row" "$main_comm" "$repo/bench/lib" "${files[@]}" <<'PY'
import re, statistics, sys
row, main_comm = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import pairs
name = pairs.row_title(row)
BPF = re.compile(r"^(bpf_prog_|bpf_trace_run|__bpf_trace_|trace_call_bpf|bpf_get_current_pid_tgid|"
                 r"percpu_array_map_lookup|syscall_trace_enter|trace_sys_enter|__traceiter_)")
runs = {"typed": [], "nokstat": []}
for arg in sys.argv[4:]:
    v, path = arg.split("=", 1)
    busy = threads = bpf = main = 0
    for line in open(path):
        t = line.split()
        if not t:
            continue
        comm, sym = t[0], (t[2] if len(t) > 2 else "")
        if comm.startswith("swapper"):
            continue
        busy += 1
        if comm in ("ringlab-windows", "ringlab-stages"):
            threads += 1
        elif BPF.match(sym):
            bpf += 1
        elif comm == main_comm:
            main += 1
    if busy:
        runs[v].append((busy, threads / busy, bpf / busy, main / busy))
if not runs["typed"] or not runs["nokstat"]:
    print(f"  {name}: no profile (perf record failed)")
    sys.exit()
med = lambda xs: statistics.median(xs)
base_main = med([r[3] for r in runs["nokstat"]])
base_bpf = med([r[2] for r in runs["nokstat"]])
th = med([r[1] for r in runs["typed"]])
bp = med([r[2] for r in runs["typed"]])
mn = med([r[3] for r in runs["typed"]])
shares = sorted(r[1] + r[2] + max(0.0, r[3] - base_main) for r in runs["typed"])
share = med(shares)
print(f"  {name:<40} {100*share:5.2f}% ({100*shares[0]:.2f}-{100*shares[-1]:.2f}) of {med([r[0] for r in runs['typed']]):.0f} busy samples: "
      f"threads {100*th:.2f}%, BPF/tracepoint path {100*bp:.2f}% (--no-kstat {100*base_bpf:.2f}%), "
      f"main thread {100*mn:.2f}% (--no-kstat {100*base_main:.2f}%); as typed / --no-kstat >= {1-share:.3f} by this measure")
PY
        done
    fi
fi

# 4. Co-runs (see the head of this file).
if [[ $corun == 1 ]]; then
    echo
    corun_runtime=$((runtime > 6 ? runtime : 6))
    if ! bench_cpu_groups ringlab-corun 2>"$work/corun.err"; then
        echo "co-runs: skipped ($(cat "$work/corun.err"))"
    else
        echo "co-runs against the peer: both at once on CPU $cpu, each in a CPU cgroup of equal weight, ${corun_runtime}s, $corun_repeats repeats;"
        if [[ -n $io_rows ]]; then
            echo "I/O rows: both figures over seconds 1-$((corun_runtime - 2)) (ringlab --ramp-time 1s --runtime $((corun_runtime - 3))s, t/io_uring's per-second lines);"
        fi
        echo "ratio of the two sides' figures: median [95% interval of that median] (min-max), and against issue 25's bars"
        co_rows=()
        for r in $io_rows; do co_rows+=("$r"); done
        for c in $conns_list; do co_rows+=("c$c"); done
        for row in "${co_rows[@]}"; do
            if [[ $row != c* && -z $tiou ]]; then
                echo "  I/O row $row: no co-run (T_IO_URING not set)"
                continue
            fi
            if [[ $row == c* ]]; then
                row_cmd "$row" typed "$corun_runtime"
                typed_cmd=("${cmd[@]}")
                kinds=(rl-http wrk)
            else
                # The seconds t/io_uring's kept lines cover (see part 4).
                row_cmd "$row" typed "$((corun_runtime - 3))"
                typed_cmd=("${cmd[@]}" --ramp-time 1s)
                kinds=(rl-io tiou)
            fi
            row_cmd "$row" peer "$corun_runtime"
            peer_cmd=("${cmd[@]}")
            base_cmd=("$baseline_bin" "${typed_cmd[@]:1}")
            ratios=()
            base_ratios=()
            for ((i = 1; i <= corun_repeats; i++)); do
                ga=${groups[0]}
                gb=${groups[1]}
                if ((i % 2 == 0)); then g=$ga; ga=$gb; gb=$g; fi
                # With a baseline build, each repeat co-runs both builds
                # with the peer, one after the other, which one first
                # alternating every two repeats.
                sides=(typed)
                if [[ -n $baseline_bin ]]; then
                    if ((i % 4 < 2)); then sides=(typed baseline); else sides=(baseline typed); fi
                fi
                for side in "${sides[@]}"; do
                    if [[ $side == typed ]]; then mine=("${typed_cmd[@]}"); else mine=("${base_cmd[@]}"); fi
                    line=$(CORUN_DETAIL="$work/corun-$row-$side.jsonl" python3 "$repo/bench/lib/corun.py" \
                        "$ga" "$gb" "$cpu" "${kinds[@]}" -- "${mine[@]}" -- "${peer_cmd[@]}")
                    echo "  co-run $i/$corun_repeats, $row, $side vs peer: $line" >&2
                    # A failed side leaves a gap; the pairs below need both.
                    [[ $line == NA* ]] && line="NA"
                    if [[ $side == typed ]]; then ratios+=("$line"); else base_ratios+=("$line"); fi
                done
            done
            RINGLAB_EXTRA="$ringlab_extra" CORUN_DETAIL="$work/corun-$row-typed.jsonl" \
                CORUN_BASE_DETAIL="$work/corun-$row-baseline.jsonl" \
                python3 - "$row" "$repo/bench/lib" "${ratios[@]}" -- "${base_ratios[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, sys.argv[2])
import pairs
row = sys.argv[1]
# With BENCH_RINGLAB_EXTRA the runs are not ringlab as typed: the lines
# name the flags, and issue 25's bars (set for ringlab as typed) give no
# verdict on them.
extra = os.environ.get("RINGLAB_EXTRA", "")
side = f"with {extra}" if extra else "as typed"
name = pairs.row_title(row)
args = sys.argv[3:]
cut = args.index("--")

def ratios(lines):
    out = []
    for x in lines:
        f = x.split()
        out.append(float(f[0]) / float(f[1]) if len(f) == 2 and float(f[1]) > 0 else None)
    return out

mine, base = ratios(args[:cut]), ratios(args[cut + 1:])
r = [x for x in mine if x is not None]
peer = "wrk, per CPU-second" if row.startswith("c") else "t/io_uring"
what = f"{side} / {peer}"
if not r:
    print(f"  {name:<40} {what:<32} no co-run succeeded (see stderr)")
else:
    verdict = "" if extra else pairs.verdict(r, pairs.peer_bar(row))
    print(f"  {name:<40} {what:<32} {pairs.describe(r):<36} {verdict}".rstrip())
# HTTP: how often ringlab's client found nothing to do and slept (its
# voluntary context switches per response), and how the ratio moves with
# it (at 10 connections a Spearman rho of -0.90 over 12 co-runs,
# docs/benchmarks.md 2026-11-28): a set of co-runs that fell into a sleepy
# rhythm says so here. With a baseline, its sleeps too (from the kernel's
# count, so any client): at 10 connections ringlab slept 0.034 times per
# response and the bare client 0.008 (docs/benchmarks.md 2026-11-29).
def sleeps_per_response(path, ratios_):
    """Voluntary context switches per response of one side's co-runs, with
    the ratio each co-run gave; empty when the lines cannot be matched."""
    if not os.path.exists(path):
        return [], []
    details = [json.loads(l) for l in open(path) if l.strip()]
    # One line per co-run; a co-run that failed to start wrote none, and
    # then the lines cannot be matched to the ratios.
    if len(details) != len(ratios_):
        return [], []
    sleeps, kept = [], []
    for d, r_ in zip(details, ratios_):
        a = d["a"]
        if r_ is not None and a.get("ops"):
            sleeps.append(a["nvcsw"] / a["ops"])
            kept.append(r_)
    return sleeps, kept

if row.startswith("c"):
    sleeps, kept = sleeps_per_response(os.environ["CORUN_DETAIL"], mine)
    if sleeps:
        rho = pairs.spearman(sleeps, kept)
        rho_text = "n/a" if rho is None else f"{rho:+.2f}"
        s_sorted = sorted(sleeps)
        print(f"  {'':<40} {'ringlab sleeps per response':<32} {statistics.median(sleeps):.3f} ({s_sorted[0]:.3f}-{s_sorted[-1]:.3f}); "
              f"Spearman rho with the ratio {rho_text} over {len(sleeps)} co-runs")
    # The baseline's, from the kernel's count as well: a client that finds
    # a response ready more often sleeps less, and each sleep hands the CPU
    # to the peer and back.
    b_sleeps, _ = sleeps_per_response(os.environ["CORUN_BASE_DETAIL"], base)
    if b_sleeps:
        s_sorted = sorted(b_sleeps)
        print(f"  {'':<40} {'baseline sleeps per response':<32} {statistics.median(b_sleeps):.3f} ({s_sorted[0]:.3f}-{s_sorted[-1]:.3f})")
if base:
    b = [x for x in base if x is not None]
    paired = [m / x for m, x in zip(mine, base) if m is not None and x is not None]
    print(f"  {'':<40} {'baseline / ' + peer:<32} {pairs.describe(b)}")
    print(f"  {'':<40} {side + ' / baseline, paired':<32} {pairs.describe(paired)}")
PY
        done
        rmdir "${groups[@]}" 2>/dev/null || true
    fi
fi

# Cross-check of ringlab's system-call count against perf's.
# perf_run: engine, then extra ringlab flags -> "calls ops ringlab_per_op".
perf_run() {
    local out=$work/perf.json
    perf stat -x, -e raw_syscalls:sys_enter -o "$work/perf.out" -- \
        taskset -c "$cpu" "$ringlab" io "$target" --engine "$1" --rw randread --bs 4k \
        --direct --iodepth 32 "${@:2}" --output-format json >"$out"
    python3 - "$out" "$work/perf.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
count = next(int(l.split(",")[0]) for l in open(sys.argv[2]) if "raw_syscalls:sys_enter" in l)
mine = (r.get("kstat") or {}).get("per_op", {}).get("syscalls_per_op")
print(count, r["total"]["ops"], "none" if mine is None else mine)
PY
}
if [[ $crosscheck == 1 ]]; then
    echo
    if ! command -v perf >/dev/null; then
        echo "cross-check: skipped (perf is not installed)"
    else
        for engine in sync uring; do
            read -r c1 o1 _ <<<"$(perf_run "$engine" --io-size 128k)"
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
    print(f"cross-check {engine} (zram qd32): ringlab {mine:.4f} syscalls/op, perf stat {theirs:.4f} "
          f"(({c2}-{c1}) calls / ({o2}-{o1}) ops): difference {100*(mine-theirs)/theirs:+.2f}%")
PY
        done
    fi
fi
