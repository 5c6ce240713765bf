#!/usr/bin/env bash
# wrk's example scripts (Debian's wrk package: /usr/share/doc/wrk/examples/
# scripts/*.lua) run by wrk and by `ringlab wrk` with the same command line
# against `ringlab serve`, one after the other, and compared:
#   - the layout: each stdout with every number replaced by N (and the
#     lines a script prints kept as they are) must be the same skeleton;
#     "same" or the first differing line;
#   - the work: requests and bytes read, and ringlab's requests over wrk's;
#   - Requests/sec of each and their ratio (ringlab / wrk).
# A script that wrk itself rejects (none of Debian's do) is listed as such.
# Each run: -t1 -c10 -d${BENCH_DURATION}s, the server and the client on
# separate CPUs when there are two. Numbers are measured, not asserted;
# nothing here is a test.
#
# Environment: BENCH_DURATION seconds per run (3), BENCH_IO the --io of
#   ringlab wrk (epoll), BENCH_PORT (18090), BENCH_SCRIPTS a directory of
#   scripts instead of Debian's; RINGLAB_BIN: a ringlab binary to measure
#   instead of building this tree's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
dur=${BENCH_DURATION:-3}
io=${BENCH_IO:-epoll}
port=${BENCH_PORT:-18090}
scripts=${BENCH_SCRIPTS:-/usr/share/doc/wrk/examples/scripts}

if ! command -v wrk >/dev/null || [ ! -d "$scripts" ]; then
    bench_install wrk
fi
bench_ringlab

server_cpu="" client_cpu=""
if [ "$(nproc)" -ge 2 ]; then server_cpu="taskset -c 0"; client_cpu="taskset -c 1"; fi

work=$(mktemp -d)
serve_pid=""
cleanup() {
    if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

$server_cpu "$ringlab" serve --listen "127.0.0.1:$port" --body-size 128 >/dev/null 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 50); do grep -q "listening" "$work/serve.err" 2>/dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port/"

# Every number (with its unit letters) becomes N; "-nan" too.
skeleton() { sed -E 's/-?nan/N/g; s/[0-9]+(\.[0-9]+)?[a-zA-Z]*/N/g; s/ +/ /g' "$1"; }
requests() { sed -nE 's/^ +([0-9]+) requests in .*/\1/p' "$1"; }
read_bytes() { sed -nE 's/.* requests in [^,]+, ([^ ]+) read$/\1/p' "$1"; }
rate() { sed -nE 's/^Requests\/sec: +([0-9.]+)$/\1/p' "$1"; }

printf '%-14s %-8s %10s %10s %8s %10s %10s %12s %12s %7s\n' \
    script layout "wrk req" "rl req" "req r/w" "wrk read" "rl read" "wrk req/s" "rl req/s" "ratio"
for s in "$scripts"/*.lua; do
    name=$(basename "$s")
    # pipeline.lua and friends take no args; counter.lua etc. neither.
    if ! $client_cpu wrk -t1 -c10 -d"$dur"s -s "$s" "$url" >"$work/wrk.out" 2>"$work/wrk.err"; then
        printf '%-14s wrk rejects it: %s\n' "$name" "$(head -1 "$work/wrk.err")"
        continue
    fi
    if ! $client_cpu "$ringlab" wrk -t1 -c10 -d"$dur"s --io "$io" -s "$s" "$url" >"$work/rl.out" 2>"$work/rl.err"; then
        printf '%-14s ringlab wrk fails: %s\n' "$name" "$(head -1 "$work/rl.err")"
        continue
    fi
    if diff <(skeleton "$work/wrk.out") <(skeleton "$work/rl.out") >"$work/diff" 2>&1; then
        layout=same
    else
        layout="differs"
        sed -n '2,3p' "$work/diff" | sed "s/^/    $name: /" >>"$work/diffs"
    fi
    wr=$(requests "$work/wrk.out") rr=$(requests "$work/rl.out")
    wq=$(rate "$work/wrk.out") rq=$(rate "$work/rl.out")
    printf '%-14s %-8s %10s %10s %8s %10s %10s %12s %12s %7s\n' "$name" "$layout" \
        "$wr" "$rr" "$(awk -v a="$rr" -v b="$wr" 'BEGIN{if(b>0)printf "%.2f",a/b; else print "-"}')" \
        "$(read_bytes "$work/wrk.out")" "$(read_bytes "$work/rl.out")" "$wq" "$rq" \
        "$(awk -v a="$rq" -v b="$wq" 'BEGIN{if(b>0)printf "%.2f",a/b; else print "-"}')"
done
if [ -s "$work/diffs" ]; then
    echo
    echo "layout differences (wrk's skeleton line, then ringlab's):"
    cat "$work/diffs"
fi
