#!/usr/bin/env bash
# ringlab http against wrk, in one run, on the same CPUs.
#
# nginx (Debian's package, 1 worker, `return 200`, keep-alive without a
# request limit) runs pinned to CPU 0; each client runs with one thread
# pinned to CPU 1: wrk -t1, then ringlab http -t1 with every --io, at 1, 10,
# 50, 100 and 400 connections. Each repeat runs every client once at every
# point, in the same order, so drift on a noisy machine hits all alike. The
# table shows medians over the repeats of
#   - requests per second, as the client printed it;
#   - client CPU microseconds per request: the client process's own user +
#     system time (wait4's rusage of the child) over its request count;
#   - ratios to wrk: requests/s, and requests per client CPU-second, as
#     the ratio of the medians and as the median of each repeat's ratio
#     to wrk's run of the same repeat (pairwise), with a 95% interval for
#     that median (bench/lib/pairs.py; 6 repeats or more) and the min-max.
# Then the same with a wrk Lua script whose request() builds every request
# (wrk.format with a new path each time), run by wrk -s and by ringlab -s
# (BENCH_SCRIPT_IOS), at BENCH_SCRIPT_CONNS connections: the cost of a
# request() script, side by side, as requests/s and client CPU per request.
# Then 10,000 connections are held for a few seconds with each ringlab
# driver and the client's peak resident memory (ru_maxrss) is printed.
# ringlab runs with --no-kstat: wrk counts nothing in the kernel, and the
# kernel-evidence counters would add their own cost to ringlab's CPU time.
# A client name ending in "@typed" (shown as "NAME (as typed)") runs the
# same without --no-kstat: ringlab exactly as a user types it, kernel
# evidence on (the default), beside the --no-kstat row of the same driver
# (bench/kstat-overhead.sh measures that difference on its own).
# Numbers are measured, not asserted; nothing here is a test.
#
# Environment: BENCH_DURATION seconds per run (3), BENCH_REPEATS (3),
#   BENCH_CONNS ("1 10 50 100 400"), BENCH_IOS ("epoll uring-nb uring
#   uring@typed uring-iou uring-mshot"), BENCH_PORT (18089), BENCH_BIG_CONNS
#   (10000), BENCH_SCRIPT_CONNS ("10 100"), BENCH_SCRIPT_IOS ("epoll uring
#   uring@typed");
#   an empty BENCH_CONNS skips the plain table, an empty
#   BENCH_SCRIPT_CONNS the request() script table. "uring" is --io uring as a
#   user types it (the default ring: COOP_TASKRUN, SINGLE_ISSUER and
#   DEFER_TASKRUN where the kernel has them); uring-iou is --io uring
#   --mode iou (the bare kernel ring); uring+coop (--coop-taskrun only) and
#   uring+dt (--single-issuer --defer-taskrun) may be named too. Every
#   name runs with --no-kstat; NAME@typed runs NAME without it (kernel
#   evidence on, exactly as a user types it), shown as "NAME (as typed)".
#   RINGLAB_BIN: a ringlab binary to measure instead of building this tree's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
dur=${BENCH_DURATION:-3}
repeats=${BENCH_REPEATS:-3}
conns_list=${BENCH_CONNS-"1 10 50 100 400"}
ios=${BENCH_IOS:-"epoll uring-nb uring uring@typed uring-iou uring-mshot"}
port=${BENCH_PORT:-18089}
big=${BENCH_BIG_CONNS:-10000}
script_conns=${BENCH_SCRIPT_CONNS-"10 100"}
script_ios=${BENCH_SCRIPT_IOS:-"epoll uring uring@typed"}

# Debian's lighter nginx where it has one.
bench_need wrk wrk nginx nginx-light || bench_need wrk wrk nginx nginx
if [ "$(nproc)" -lt 2 ]; then
    echo "needs 2 CPUs (server on CPU 0, client on CPU 1)" >&2
    exit 2
fi

bench_ringlab

work=$(mktemp -d)
nginx_pid=""
cleanup() {
    if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/logs"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
master_process on;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 32768; }
http {
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 300s;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    server {
        listen 127.0.0.1:$port backlog=16384 reuseport;
        location / { return 200; }
    }
}
EOF
ulimit -n 65536 2>/dev/null || true
taskset -c 0 nginx -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then break; fi
    sleep 0.1
done
url="http://127.0.0.1:$port/"

# Runs a command pinned to CPU 1; prints "requests req_per_s cpu_s maxrss_kib".
measure() {
    python3 - "$@" <<'PY'
import os, re, subprocess, sys
p = subprocess.Popen(["taskset", "-c", "1"] + sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
out = p.stdout.read().decode(errors="replace")
_, status, ru = os.wait4(p.pid, 0)
m = re.search(r"(\d+) requests in", out)
r = re.search(r"Requests/sec:\s*([0-9.]+)", out)
if status != 0 or not m or not r:
    sys.stderr.write("failed: %s\n%s\n" % (" ".join(sys.argv[1:]), out))
    print("0 0 0 0")
else:
    print(m.group(1), r.group(1), ru.ru_utime + ru.ru_stime, ru.ru_maxrss)
PY
}

# The ringlab flags of a client name: --no-kstat, unless the name ends in
# "@typed" (kernel evidence on, as a user types it).
io_args() {
    local kstat="--no-kstat " name=$1
    if [[ $name == *@typed ]]; then kstat="" name=${name%@typed}; fi
    case "$name" in
        uring-iou) echo "$kstat--io uring --mode iou" ;;
        uring+coop) echo "$kstat--io uring --mode iou --coop-taskrun" ;;
        uring+dt) echo "$kstat--io uring --single-issuer --defer-taskrun" ;;
        *) echo "$kstat--io $name" ;;
    esac
}

tools="wrk $ios"
results="$work/results"
: >"$results"
echo "ringlab http vs wrk: nginx on CPU 0, client on CPU 1, ${dur}s per run, $repeats repeats" >&2
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start_utc=$(date -u +%H:%M)
for rep in $(seq "$repeats"); do
    for c in $conns_list; do
        for tool in $tools; do
            if [ "$tool" = wrk ]; then
                line=$(measure wrk -t1 -c"$c" -d"${dur}s" "$url")
            else
                # shellcheck disable=SC2046
                line=$(measure "$ringlab" http -t1 -c"$c" -d"${dur}s" $(io_args "$tool") "$url")
            fi
            echo "$c $tool $line" >>"$results"
            echo "  repeat $rep, $c connections, $tool: $line" >&2
        done
    done
done

# A request() script: a new request string for every request.
cat >"$work/request.lua" <<'LUA'
counter = 0
request = function()
   counter = counter + 1
   return wrk.format(nil, "/" .. (counter % 100))
end
LUA
script_results="$work/script_results"
: >"$script_results"
script_tools="wrk $script_ios"
for rep in $(seq "$repeats"); do
    for c in $script_conns; do
        for tool in $script_tools; do
            if [ "$tool" = wrk ]; then
                line=$(measure wrk -t1 -c"$c" -d"${dur}s" -s "$work/request.lua" "$url")
            else
                # shellcheck disable=SC2046
                line=$(measure "$ringlab" http -t1 -c"$c" -d"${dur}s" $(io_args "$tool") -s "$work/request.lua" "$url")
            fi
            echo "$c $tool $line" >>"$script_results"
            echo "  repeat $rep, $c connections, $tool -s request.lua: $line" >&2
        done
    done
done

table() {
python3 - "$1" "$2" "$repo/bench/lib" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[3])
import pairs as pairs_lib
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
tools = sys.argv[2].split()
data = {}
for c, tool, n, rps, cpu, rss in rows:
    n, rps, cpu = int(n), float(rps), float(cpu)
    data.setdefault((int(c), tool), []).append((rps, cpu * 1e6 / n if n else float("nan")))
print(f"{'conns':>5} {'client':<18} {'req/s median (min-max)':>26} {'CPU us/req median (min-max)':>28} {'req/s vs wrk':>12} {'req/CPU-s vs wrk':>16}  {'req/CPU-s vs wrk, pairwise: median [95% interval] (min-max)'}")
for c in sorted({k[0] for k in data}):
    base = data.get((c, "wrk"))
    b_rps = statistics.median(r for r, _ in base) if base else None
    b_cpu = statistics.median(u for _, u in base) if base else None
    for tool in tools:
        v = data.get((c, tool))
        if not v:
            continue
        rps = statistics.median(r for r, _ in v)
        cpu = statistics.median(u for _, u in v)
        r1 = f"{rps / b_rps:.2f}x" if b_rps else "-"
        r2 = f"{b_cpu / cpu:.2f}x" if b_cpu and cpu == cpu and cpu > 0 else "-"
        rr = f"{rps:.0f} ({min(r for r, _ in v):.0f}-{max(r for r, _ in v):.0f})"
        cc = f"{cpu:.2f} ({min(u for _, u in v):.2f}-{max(u for _, u in v):.2f})"
        # Each repeat's run against wrk's run of the same repeat (run
        # next to it): on a host whose speed drifts between repeats, the
        # median of these pairs is steadier than the ratio of medians.
        # Their median has a 95% interval (bench/lib/pairs.py).
        pairs = sorted(bu / u for (_, u), (_, bu) in zip(v, base or []) if u == u and u > 0 and bu == bu)
        r3 = pairs_lib.describe(pairs, 2) if pairs and tool != "wrk" else "-"
        name = tool.replace("@typed", " (as typed)")
        print(f"{c:>5} {name:<18} {rr:>26} {cc:>28} {r1:>12} {r2:>16}  {r3}")
PY
}
echo "started $start_utc UTC with load average $load_start; tables at $(date -u +%H:%M) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$conns_list" ]; then table "$results" "$tools"; fi
if [ -n "$script_conns" ]; then
    echo
    echo "with a request() script (-s request.lua, both clients):"
    table "$script_results" "$script_tools"
fi

echo
echo "$big connections held for ${dur}s (client peak RSS):"
for tool in $ios; do
    # shellcheck disable=SC2046
    line=$(measure "$ringlab" http -t1 -c"$big" -d"${dur}s" --timeout 10s $(io_args "$tool") "$url")
    read -r n rps cpu rss <<<"$line"
    echo "  ringlab $(io_args "$tool"): $n requests, $(( rss / 1024 )) MiB resident (limit 200 MiB)"
done
