#!/usr/bin/env bash
# fio's own example job files (Debian's fio-examples package) through
# `ringlab fio --parse-only` beside `fio --parse-only`, then a short real
# run of each file both accept, by both tools, with the work compared: I/O
# count, bytes, read share (and trim share), mean block size, and the IOPS
# ratio. Trims count in the I/O, the bytes and the mix.
#
# A short run is the example with its sizes and run times shrunk (size,
# filesize, io_size, runtime, ramp_time, startdelay and loops rewritten in
# a copy, and runtime=3 added where none is given; the
# copy is run by both tools, in a scratch directory, so its relative file
# names land there; an absolute directory= or filename= is moved there
# too). Files naming a device (filename=/dev/...) are parsed but not run.
#
# Environment:
#   FIO_EXAMPLES  directory of *.fio files (default: the package's)
#   RINGLAB_BIN   a ringlab binary instead of building this tree's
#   RUN=0         parse only
#   SCRATCH       where to run (default: a new directory under /tmp)
#   SIZE          the size a short run uses (default 16m)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${FIO_EXAMPLES:-/usr/share/doc/fio/examples}
if [[ ! -d $dir ]]; then
    apt-get update -qq && apt-get install -y -qq fio fio-examples >/dev/null
fi
if [[ -n "${RINGLAB_BIN:-}" ]]; then
    ringlab=$RINGLAB_BIN
else
    (cd "$repo" && cargo build --release -q -p ringlab)
    ringlab="$repo/target/release/ringlab"
fi
run=${RUN:-1}
size=${SIZE:-16m}
scratch=${SCRATCH:-$(mktemp -d /tmp/fio-examples.XXXXXX)}
mkdir -p "$scratch"

ok=0 refused=0 fio_ok=0 both=0 ran=0 same=0
declare -a accepted=()
printf '%-34s %-8s %-8s %s\n' example fio ringlab "ringlab's reason"
for f in "$dir"/*.fio; do
    name=$(basename "$f")
    if fio --parse-only "$f" >/dev/null 2>&1; then fio_says=ok; fio_ok=$((fio_ok + 1)); else fio_says=refused; fi
    if out=$("$ringlab" fio --parse-only "$f" 2>&1 >/dev/null); then
        printf '%-34s %-8s %-8s\n' "$name" "$fio_says" ok
        ok=$((ok + 1))
        if [[ $fio_says == ok ]]; then
            both=$((both + 1))
            accepted+=("$f")
        fi
    else
        reason=$(grep -v 'note:' <<<"$out" | head -1 | sed "s|$dir/||; s|^ringlab fio: ||")
        printf '%-34s %-8s %-8s %s\n' "$name" "$fio_says" refused "${reason:0:150}"
        refused=$((refused + 1))
    fi
done
echo
echo "$((ok + refused)) example job files: ringlab fio accepts $ok ($both of them fio accepts too), refuses $refused; $(fio --version) accepts $fio_ok here"
[[ $run == 1 ]] || exit 0

# The work of one JSON output: ios, bytes, read share, mean bytes per I/O,
# IOPS (summed over its entries).
work() {
    python3 - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
ios = rb = wb = tb = ri = wi = ti = 0
iops = 0.0
for j in doc["jobs"]:
    for d in ("read", "write", "trim"):
        x = j[d]
        ios += x["total_ios"]
        iops += x["iops"]
    ri += j["read"]["total_ios"]; wi += j["write"]["total_ios"]; ti += j["trim"]["total_ios"]
    rb += j["read"]["io_bytes"]; wb += j["write"]["io_bytes"]; tb += j["trim"]["io_bytes"]
# The mix: the read share of reads, writes and trims, and the trim share
# (0 for a job without trims).
n = max(ri + wi + ti, 1)
print(ios, rb + wb + tb, "%.4f" % (ri / n), "%.1f" % ((rb + wb + tb) / n), "%.1f" % iops, "%.4f" % (ti / n))
EOF
}

echo
printf '%-34s %10s %10s %12s %12s %6s %6s %8s %8s %7s %s\n' example fio_ios rl_ios fio_bytes rl_bytes fio_rd rl_rd fio_bs rl_bs iops_x verdict
for f in "${accepted[@]}"; do
    name=$(basename "$f" .fio)
    if grep -Eq '^[[:space:]]*filename[[:space:]]*=[[:space:]]*/dev/' "$f"; then
        printf '%-34s %s\n' "$name" "not run: names a device"
        continue
    fi
    w="$scratch/$name"
    rm -rf "$w" && mkdir -p "$w"
    {
        # A run time bound for files without one (rate-limited jobs would
        # otherwise run for minutes); both tools run this same copy.
        grep -Eq '^[[:space:]]*(runtime|timeout)[[:space:]]*=' "$f" || printf '[global]\nruntime=3\n'
        # Absolute directories and files become the scratch directory's.
        sed -E "s|^([[:space:]]*directory[[:space:]]*=)[[:space:]]*/.*|\1.|; s|^([[:space:]]*filename[[:space:]]*=)[[:space:]]*/.*/([^/]*)$|\1\2|; s/^([[:space:]]*(size|filesize|io_size|io_limit)[[:space:]]*=).*/\1$size/; s/^([[:space:]]*(runtime|timeout)[[:space:]]*=).*/\12/; s/^([[:space:]]*ramp_time[[:space:]]*=).*/\10/; s/^([[:space:]]*startdelay[[:space:]]*=).*/\11/; s/^([[:space:]]*loops[[:space:]]*=).*/\12/" "$f"
    } >"$w/job.fio"
    # Relative directories the job names must exist (fio does not make them).
    grep -E '^[[:space:]]*directory[[:space:]]*=' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//' | while read -r sub; do
        mkdir -p "$w/$sub"
    done || true
    # A run whose jobs failed (fio exits 1 with every job's report, each
    # failed one with its error) is compared by its jobs' errors.
    fio_rc=0
    (cd "$w" && timeout -s KILL 60 fio --output-format=json --output=fio.json job.fio >fio.err 2>&1) || fio_rc=$?
    # fio 3.33's io_submit_mode=offload hangs here, and its job processes
    # outlive the killed parent: kill what still runs in this copy's directory.
    for p in $(pgrep -x fio || true); do
        [[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$w" ]] && kill -9 "$p" 2>/dev/null || true
    done
    if [[ $fio_rc != 0 ]] && ! grep -q '"jobs"' "$w/fio.json" 2>/dev/null; then
        printf '%-34s %s\n' "$name" "fio failed: $(head -c 120 "$w/fio.err" | tr '\n' ' ')"
        continue
    fi
    rm -f "$w"/*.0 "$w"/*.0.* 2>/dev/null || true
    rl_rc=0
    (cd "$w" && timeout -s KILL 60 "$ringlab" fio --output-format=json --output=rl.json job.fio >rl.err 2>&1) || rl_rc=$?
    if [[ $rl_rc != 0 ]] && { [[ $rl_rc != "$fio_rc" ]] || ! grep -q '"jobs"' "$w/rl.json" 2>/dev/null; }; then
        printf '%-34s %s\n' "$name" "ringlab failed: $(grep -v note: "$w/rl.err" | head -c 150 | tr '\n' ' ')"
        continue
    fi
    if [[ $fio_rc != 0 || $rl_rc != 0 ]]; then
        errs() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); print(','.join('%s=%s' % (j['jobname'], j['error']) for j in json.loads(t[t.index('{'):])['jobs']))" "$1"; }
        printf '%-34s %s\n' "$name" "jobs failed: fio exit $fio_rc [$(errs "$w/fio.json")], ringlab exit $rl_rc [$(errs "$w/rl.json")]"
        continue
    fi
    ran=$((ran + 1))
    read -r fi_ios fi_bytes fi_rd fi_bs fi_iops fi_tr <<<"$(work "$w/fio.json")"
    read -r rl_ios rl_bytes rl_rd rl_bs rl_iops rl_tr <<<"$(work "$w/rl.json")"
    # A time-based job's I/O count is its speed, not its work.
    timed=0
    grep -Eq '^[[:space:]]*time_based' "$w/job.fio" && timed=1
    verdict=$(python3 -c "
fi,rl=($fi_ios,$fi_bytes,$fi_rd,$fi_bs),($rl_ios,$rl_bytes,$rl_rd,$rl_bs)
def near(a,b,t): return abs(a-b) <= t*max(abs(a),abs(b),1e-9)
count = $timed == 1 or near(fi[0],rl[0],0.01) or near(fi[1],rl[1],0.01)
mix = abs(fi[2]-rl[2]) <= 0.02 and abs($fi_tr-$rl_tr) <= 0.02
bs = near(fi[3],rl[3],0.02)
print(('same' + (' (time based: count not compared)' if $timed else '')) if count and mix and bs else 'differs:' + ','.join(n for n,ok in (('count',count),('mix',mix),('bs',bs)) if not ok))")
    [[ $verdict == same* ]] && same=$((same + 1))
    ratio=$(python3 -c "print('%.2f' % ($rl_iops / $fi_iops) if $fi_iops > 0 else 'n/a')")
    printf '%-34s %10s %10s %12s %12s %6s %6s %8s %8s %7s %s\n' "$name" "$fi_ios" "$rl_ios" "$fi_bytes" "$rl_bytes" "$fi_rd" "$rl_rd" "$fi_bs" "$rl_bs" "$ratio" "$verdict"
    rm -rf "$w"
done
echo
echo "short runs: $ran of the $both files both tools accept ran under both; $same did the same work (I/O count or bytes within 1%, read share within 2 points, mean block size within 2%)"
