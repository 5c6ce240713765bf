#!/usr/bin/env bash
# fio's own example job files (Debian's fio-examples package) through
# `ringlab fio --parse-only` beside `fio --parse-only`, then a short real
# run of each eligible file by both tools, with the work compared: I/O
# count, bytes, read share (and trim share), mean block size, and the IOPS
# ratio. Trims count in the I/O, the bytes and the mix.
#
# Eligible: fio accepts the file (--parse-only) and ringlab has every
# engine it names (ioengine=, psync when none). An engine is missing when
# `ringlab fio --parse-only` refuses a one-job file with that engine for
# "no equivalent of this engine" (ringlab itself decides, no list here).
# An eligible file ringlab refuses counts as not doing the same work.
#
# A short run is the example with its sizes and run times shrunk (size,
# filesize, io_size, runtime, ramp_time, startdelay and loops rewritten in
# a copy, and runtime=3 added where none is given); the copy is run by
# both tools, in a scratch directory, so its relative file names land
# there; an absolute directory= or filename= is moved there too. A job of
# several files (nrfiles=N, fio's file engines) keeps at most 64 of them,
# each of SIZE over its count (the job's bytes stay SIZE, as for one
# file): SIZE per file would lay out N x SIZE per job (filestat-
# ioengine.fio: 6 jobs x 200 files x 16m, 19 GB), and filecreate-
# ioengine.fio's 31250 files with openfiles=1 make fio walk past every
# other file before each I/O, so runtime=3 and fio's walk, not the size,
# would end it. What a copy needs beyond that, said in its verdict:
#   - each /dev/ path a filename= names (not a character device such as
#     /dev/null) becomes a loop device over a file in /dev/shm of SIZE
#     (root only; detached at exit);
#   - a file a job without size= reads is made first, of SIZE;
#   - io_submit_mode=offload can hang fio 3.33 here: when fio's run of
#     the copy is killed at 20 s, fio runs it again with
#     io_submit_mode=inline, ringlab the copy as it is;
#   - a job that fills its device or file system (fill_device, fill_fs)
#     runs in a fresh tmpfs of 32m per tool (root only; unmounted after).
# A job whose end is its speed or its criterion (time_based, ss= steady
# state, latency_target) has its count not compared; its mix and mean
# block size are.
#
# Environment:
#   FIO_EXAMPLES  directory of *.fio files (default: the package's)
#   RINGLAB_BIN   a ringlab binary instead of building this tree's
#   RUN=0         parse only
#   SCRATCH       where to run (default: a new directory under /tmp)
#   SIZE          the size a short run uses (default 16m)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
dir=${FIO_EXAMPLES:-/usr/share/doc/fio/examples}
if [[ ! -d $dir ]]; then
    bench_install fio fio-examples
fi
bench_ringlab
run=${RUN:-1}
size=${SIZE:-16m}
scratch=${SCRATCH:-$(mktemp -d /tmp/fio-examples.XXXXXX)}

mkdir -p "$scratch"

# Loop devices, their files in /dev/shm and tmpfs mounts made here, undone
# at exit whatever happens.
declare -a loops=() shm_files=() mounts=()
# Detaches the loop devices made so far (a device still open, say by
# udev's probe, is tried again) and removes their files.
release_loops() {
    local l _
    for l in "${loops[@]}"; do
        # A busy device is only marked to detach at its last close (udev
        # probes a device after it was written): wait until it is gone.
        for _ in $(seq 20); do
            losetup -d "$l" 2>/dev/null || true
            [[ -e /sys/block/${l#/dev/}/loop/backing_file ]] || break
            sleep 0.5
        done
    done
    for l in "${shm_files[@]}"; do
        if [[ -n $(losetup -j "$l" 2>/dev/null) ]]; then
            echo "warning: a loop device is still over $l (losetup -j $l), left with its file: detach it and remove the file" >&2
        else
            rm -f "$l"
        fi
    done
    loops=() shm_files=()
}
cleanup() {
    local m
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
    release_loops
}
trap cleanup EXIT
is_root=0
[[ $(id -u) == 0 ]] && is_root=1

# Whether ringlab has an engine: its own refusal of a one-job file says.
declare -A engine_known=()
has_engine() {
    local e=$1
    if [[ -z ${engine_known[$e]+x} ]]; then
        printf '[probe]\nioengine=%s\nsize=4k\nfilename=%s/probe\n' "$e" "$scratch" >"$scratch/probe.fio"
        local said
        said=$("$ringlab" fio --parse-only "$scratch/probe.fio" 2>&1 >/dev/null || true)
        if [[ $said == *"no equivalent of this engine"* ]]; then
            engine_known[$e]=0
        else
            engine_known[$e]=1
        fi
        rm -f "$scratch/probe.fio"
    fi
    [[ ${engine_known[$e]} == 1 ]]
}
# The engines a job file names (comments dropped), psync when none.
engines_of() {
    local e
    e=$(sed -E 's/[;#].*//' "$1" | grep -E '^[[:space:]]*ioengine[[:space:]]*=' | sed -E 's/^[^=]*=[[:space:]]*//; s/[[:space:]]*$//' | sort -u || true)
    echo "${e:-psync}"
}

ok=0 refused=0 fio_ok=0 both=0 ran=0 same=0 eligible=0 fio_cannot=0
declare -a accepted=() eligible_files=() not_same=()
declare -A rl_reason=()
printf '%-34s %-8s %-8s %-8s %s\n' example fio ringlab engines "ringlab's reason"
for f in "$dir"/*.fio; do
    name=$(basename "$f")
    if fio --parse-only "$f" >/dev/null 2>&1; then fio_says=ok; fio_ok=$((fio_ok + 1)); else fio_says=refused; fi
    engines=yes
    while read -r e; do
        has_engine "$e" || engines="no:$e"
    done < <(engines_of "$f")
    if [[ $fio_says == ok && $engines == yes ]]; then
        eligible=$((eligible + 1))
        eligible_files+=("$f")
    fi
    if out=$("$ringlab" fio --parse-only "$f" 2>&1 >/dev/null); then
        printf '%-34s %-8s %-8s %-8s\n' "$name" "$fio_says" ok "$engines"
        ok=$((ok + 1))
        if [[ $fio_says == ok ]]; then
            both=$((both + 1))
            accepted+=("$f")
        fi
    else
        reason=$(grep -v 'note:' <<<"$out" | head -1 | sed "s|$dir/||; s|^ringlab fio: ||")
        printf '%-34s %-8s %-8s %-8s %s\n' "$name" "$fio_says" refused "$engines" "${reason:0:150}"
        refused=$((refused + 1))
        rl_reason[$f]=$reason
    fi
done
echo
echo "$((ok + refused)) example job files: ringlab fio accepts $ok ($both of them fio accepts too), refuses $refused; $(fio --version) accepts $fio_ok here"
echo "eligible: $eligible (fio --parse-only accepts them, and ringlab has every engine they name: an engine is missing when ringlab fio --parse-only refuses a one-job file of it for 'no equivalent of this engine'); ringlab fio accepts $both of them"
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
# The mix shown: the read share of reads, writes and trims (compare()
# judges the trim share too).
n = max(ri + wi + ti, 1)
print(ios, rb + wb + tb, "%.4f" % (ri / n), "%.1f" % ((rb + wb + tb) / n), "%.1f" % iops)
EOF
}

# The verdict on ringlab's run ($2) against fio's ($3...), $1 being why
# the count is not the work ("time based", ...; empty: it is). With one fio
# run: same when the I/O count or bytes are within 1%, the read and trim
# shares within 2 points, the mean block size within 2% (per group when
# timed). With several: each figure of ringlab's run within the range of
# fio's runs widened by those tolerances, said only when fio's runs differ
# among themselves by more than the tolerances.
compare() {
    python3 - "$@" <<'EOF'
import json, sys
timed, rl, fios = sys.argv[1], sys.argv[2], sys.argv[3:]

def load(p):
    t = open(p).read()
    return json.loads(t[t.index('{'):])

def figures(doc):
    """(ios, bytes, {group: (read share, trim share, mean bs)}), the whole
    run as group None."""
    sums = {}
    for j in doc["jobs"]:
        for key in (None, j["groupid"]):
            g = sums.setdefault(key, [0, 0, 0, 0])
            for k, d in enumerate(("read", "write", "trim")):
                g[k] += j[d]["total_ios"]
            g[3] += sum(j[d]["io_bytes"] for d in ("read", "write", "trim"))
    out = {}
    for key, (r, w, t, b) in sums.items():
        n = r + w + t
        out[key] = (r / n, t / n, b / n) if n else None
    return sum(sums[None][:3]), sums[None][3], out

R = figures(load(rl))
F = [figures(load(p)) for p in fios]
# The mix and size over the whole run, or per group when timed.
keys = sorted((k for k in R[2] if k is not None), key=str) if timed else [None]

def within(x, vals, rel=None, pts=None):
    lo, hi = min(vals), max(vals)
    if rel is not None:
        return lo * (1 - rel) - 1e-9 <= x <= hi * (1 + rel) + 1e-9
    return lo - pts - 1e-9 <= x <= hi + pts + 1e-9

def judge(F):
    count = bool(timed) or within(R[0], [f[0] for f in F], rel=0.01) or within(R[1], [f[1] for f in F], rel=0.01)
    mix = bs = True
    for k in keys:
        fs = [f[2].get(k) for f in F]
        r = R[2].get(k)
        if r is None or any(x is None for x in fs) or any(set(f[2]) != set(R[2]) for f in F):
            mix = bs = False
            continue
        mix &= within(r[0], [x[0] for x in fs], pts=0.02) and within(r[1], [x[1] for x in fs], pts=0.02)
        bs &= within(r[2], [x[2] for x in fs], rel=0.02)
    return count, mix, bs

why = ' (%s: count not compared; mix and block size per group)' % timed if timed else ''
count, mix, bs = judge(F)
if len(F) > 1:
    # How far fio's own runs are apart, by the same tolerances.
    spread = []
    ios = [f[0] for f in F]
    if not timed and max(ios) > min(ios) * 1.01:
        spread.append('I/Os %d-%d' % (min(ios), max(ios)))
    for k in keys:
        fs = [f[2].get(k) for f in F if f[2].get(k)]
        if not fs:
            continue
        g = '' if k is None else 'group %s ' % k
        for i, name in enumerate(('read share', 'trim share')):
            v = [x[i] for x in fs]
            if max(v) - min(v) > 0.02:
                spread.append('%s%s %.3f-%.3f' % (g, name, min(v), max(v)))
        v = [x[2] for x in fs]
        if max(v) > min(v) * 1.02:
            spread.append('%smean bs %.0f-%.0f' % (g, min(v), max(v)))
    if not spread:
        # fio repeats its own work: ringlab is judged against its first run.
        count, mix, bs = judge(F[:1])
        why += ' (fio repeated its own work in %d runs)' % len(F)
    else:
        why += " (fio's own %d runs differ: %s; ringlab's run judged against their range)" % (len(F), ', '.join(spread))
print(('same' + why) if count and mix and bs else 'differs:' + ','.join(n for n, ok in (('count', count), ('mix', mix), ('bs', bs)) if not ok) + why)
EOF
}

# Fresh tmpfs of 32m on $1 (a fill job's run directory).
mount_tmpfs() {
    mount -t tmpfs -o size=32m none "$1" || return 1
    mounts+=("$1")
    mountpoint -q "$1"
}
unmount_tmpfs() {
    umount "$1" 2>/dev/null || true
    local m keep=()
    for m in "${mounts[@]}"; do [[ $m == "$1" ]] || keep+=("$m"); done
    mounts=("${keep[@]}")
}

# The adapted copy of example $1 in $w: job.fio (both tools), fio.fio
# (fio's, when it must differ), the run directory $rd, the adaptations in
# $notes; fails with the reason in $why when the copy cannot be run here.
prepare() {
    local f=$1 d i=0 loop shm lines
    notes="" why="" fill=0 offload=0 rd=$w fio_job=job.fio
    {
        # A run time bound for files without one (rate-limited jobs would
        # otherwise run for minutes); both tools run this same copy.
        grep -Eq '^[[:space:]]*(runtime|timeout)[[:space:]]*=' "$f" || printf '[global]\nruntime=3\n'
        # Absolute directories and files (not under /dev) become the
        # scratch directory's.
        sed -E "s|^([[:space:]]*directory[[:space:]]*=)[[:space:]]*/.*|\1.|; \|^[[:space:]]*filename[[:space:]]*=[[:space:]]*/dev/|!s|^([[:space:]]*filename[[:space:]]*=)[[:space:]]*/.*/([^/]*)$|\1\2|; s/^([[:space:]]*(size|filesize|io_size|io_limit)[[:space:]]*=).*/\1$size/; s/^([[:space:]]*(runtime|timeout)[[:space:]]*=).*/\12/; s/^([[:space:]]*ramp_time[[:space:]]*=).*/\10/; s/^([[:space:]]*startdelay[[:space:]]*=).*/\11/; s/^([[:space:]]*loops[[:space:]]*=).*/\12/" "$f"
    } >"$w/job.fio"
    # Several files per job: at most 64, SIZE over them (whole 64 KiB).
    local nr
    nr=$(grep -E '^[[:space:]]*nrfiles[[:space:]]*=' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//; s/[^0-9].*//' | sort -n | tail -1 || true)
    if [[ -n $nr && $nr -gt 1 ]]; then
        local cap=$((nr < 64 ? nr : 64)) per
        per=$(($(numfmt --from=iec "${size^^}") / cap / 65536 * 65536))
        sed -i -E "s/^([[:space:]]*nrfiles[[:space:]]*=).*/\1$cap/; s/^([[:space:]]*filesize[[:space:]]*=).*/\1$per/" "$w/job.fio"
        notes+=" [nrfiles $nr -> $cap, filesize $per: SIZE over a job's files]"
    fi
    # Clones spread by an absolute offset_increment (cross-stripe-verify:
    # 30 clones 124g apart) share SIZE: each gets SIZE/numjobs (whole
    # 64 KiB units) as its increment and its io_size.
    if grep -Eq '^[[:space:]]*offset_increment[[:space:]]*=[[:space:]]*[0-9]+[[:alpha:]]*[[:space:]]*$' "$w/job.fio"; then
        local jobs step
        jobs=$(grep -E '^[[:space:]]*numjobs[[:space:]]*=' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//' | sort -n | tail -1 || true)
        step=$(($(numfmt --from=iec "${size^^}") / ${jobs:-1} / 65536 * 65536))
        # A clone's I/O spans io_size times (bs + the rw=...:N holes) / bs,
        # times its loops (the loops after the first go on from where it
        # ended): its io_size keeps it inside its own step (clones that
        # overlap overwrite each other's verified blocks).
        local bs hole io
        bs=$(grep -E '^[[:space:]]*bs[[:space:]]*=' "$w/job.fio" | head -1 | sed -E 's/^[^=]*=[[:space:]]*//; s/[[:space:],].*//' || true)
        bs=$(numfmt --from=iec "${bs^^}" 2>/dev/null || echo 4096)
        hole=$(grep -E '^[[:space:]]*(rw|readwrite)[[:space:]]*=.*:' "$w/job.fio" | head -1 | sed -E 's/.*:[[:space:]]*//; s/[[:space:]].*//' || true)
        hole=$(numfmt --from=iec "${hole^^}" 2>/dev/null || echo 0)
        local passes
        passes=$(grep -E '^[[:space:]]*loops[[:space:]]*=' "$w/job.fio" | head -1 | sed -E 's/^[^=]*=[[:space:]]*//; s/[^0-9].*//' || true)
        io=$((step * bs / (bs + hole) / ${passes:-1} / bs * bs))
        sed -i -E "s/^([[:space:]]*offset_increment[[:space:]]*=).*/\1$step/; s/^([[:space:]]*io_size[[:space:]]*=).*/\1$io/" "$w/job.fio"
        notes+=" [offset_increment $step, io_size $io: SIZE over ${jobs:-1} clones]"
    fi
    # A device's size: SIZE, but 128m for a mix of block sizes drawn anew
    # on each run (bssplit with randrepeat=0, jesd219.fio): over SIZE's
    # few thousand I/Os its mean block size varies by more than 2% from
    # run to run, over 128m's tens of thousands by about 0.5%.
    local dev_size=$size
    if grep -Eq '^[[:space:]]*bssplit[[:space:]]*=' "$w/job.fio" && grep -Eq '^[[:space:]]*randrepeat[[:space:]]*=[[:space:]]*0' "$w/job.fio"; then
        dev_size=128m
    fi
    # Devices: each distinct /dev/ path (a character device such as
    # /dev/null is used as it is) becomes a loop device over /dev/shm.
    while read -r d; do
        [[ -z $d || -c $d ]] && continue
        if [[ $is_root != 1 ]]; then
            why="not run: names a device (needs root for a loop device)"
            return 1
        fi
        i=$((i + 1))
        shm="/dev/shm/fio-examples.$$.$(basename "$f" .fio).$i"
        shm_files+=("$shm")
        truncate -s "$dev_size" "$shm"
        if ! loop=$(losetup -f --show "$shm"); then
            why="not run: losetup -f --show $shm failed"
            return 1
        fi
        loops+=("$loop")
        sed -i -E "s#^([[:space:]]*filename[[:space:]]*=[[:space:]]*)$d([[:space:];:]|\$)#\1$loop\2#" "$w/job.fio"
        notes+=" [$d: loop device over $dev_size in /dev/shm]"
    done < <(grep -E '^[[:space:]]*filename[[:space:]]*=[[:space:]]*/dev/' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//; s/[[:space:];:].*//' | sort -u)
    # A fill of its device or file system runs in a tmpfs of its own.
    if grep -Eq '^[[:space:]]*(fill_device|fill_fs)[[:space:]]*(=[[:space:]]*([1-9]|true|yes|on).*)?$' "$w/job.fio"; then
        if [[ $is_root != 1 ]]; then
            why="not run: fills its file system (needs root for a tmpfs)"
            return 1
        fi
        fill=1 rd=$w/fs
        mkdir -p "$rd"
        notes+=" [in a fresh 32m tmpfs per tool]"
    fi
    # A job without any size reads its file as it is: it must exist.
    if ! grep -Eq '^[[:space:]]*(size|filesize|io_size|io_limit|fill_device|fill_fs)[[:space:]]*(=|$)' "$w/job.fio"; then
        lines=$(grep -E '^[[:space:]]*filename[[:space:]]*=' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//; s/[[:space:]]*([;#].*)?$//' | sort -u || true)
        while read -r d; do
            [[ -z $d || $d == /dev/* || -e $rd/$d ]] && continue
            truncate -s "$size" "$rd/$d"
            notes+=" [$d made first, $size]"
        done <<<"$lines"
    fi
    # fio 3.33's io_submit_mode=offload hangs here at times (poisson-rate-
    # submission.fio: killed at 60 s): fio gets 20 s with it, then a copy
    # in inline mode (see run_fio).
    if grep -Eq '^[[:space:]]*io_submit_mode[[:space:]]*=[[:space:]]*offload' "$w/job.fio"; then
        sed -E 's/^([[:space:]]*io_submit_mode[[:space:]]*=[[:space:]]*)offload/\1inline/' "$w/job.fio" >"$w/fio.fio"
        offload=1
    fi
    make_dirs
    return 0
}

# Relative directories the job names must exist (fio does not make them);
# in a fill's tmpfs, once it is mounted.
make_dirs() {
    grep -E '^[[:space:]]*directory[[:space:]]*=' "$w/job.fio" | sed -E 's/^[^=]*=[[:space:]]*//' | while read -r sub; do
        mkdir -p "$rd/$sub"
    done || true
}

# fio's run of the copy (run_tool fio fio); a copy in offload mode that
# hangs fio (killed at 20 s) is run again in inline mode, and said.
run_fio() {
    if [[ $offload == 1 ]]; then
        run_tool fio fio 20
        if [[ $tool_rc == 137 ]]; then
            fio_job=fio.fio
            notes+=" [fio inline: offload hung fio 3.33, killed at 20 s]"
        else
            return 0
        fi
    fi
    run_tool fio fio
}

# One tool's run of the copy: $1 fio|ringlab, its output in $w/$2.json and
# $w/$2.err, killed after $3 seconds (60); its exit code in $tool_rc.
run_tool() {
    local tool=$1 out=$2 limit=${3:-60} job=job.fio p
    tool_rc=0
    [[ $tool == fio ]] && job=$fio_job
    if [[ $fill == 1 ]]; then
        if ! mount_tmpfs "$rd"; then
            # Never fill a file system that is not the tmpfs.
            echo "mount -t tmpfs on $rd failed" >"$w/$out.err"
            tool_rc=125
            return 0
        fi
        make_dirs
    fi
    local rel=.
    [[ $rd != "$w" ]] && rel=..
    if [[ $tool == fio ]]; then
        (cd "$rd" && timeout -s KILL "$limit" fio --output-format=json --output="$rel/$out.json" "$rel/$job" >"$w/$out.err" 2>&1) || tool_rc=$?
        # fio 3.33's io_submit_mode=offload hangs here, and its job processes
        # outlive the killed parent: kill what still runs in this copy's directory.
        for p in $(pgrep -x fio || true); do
            if [[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$rd" ]]; then kill -9 "$p" 2>/dev/null || true; fi
        done
    else
        (cd "$rd" && timeout -s KILL "$limit" "$ringlab" fio --output-format=json --output="$rel/$out.json" "$rel/$job" >"$w/$out.err" 2>&1) || tool_rc=$?
    fi
    [[ $fill == 1 ]] && unmount_tmpfs "$rd"
    return 0
}

# Whether a JSON output ($1) shows I/O: a run that failed before any
# (no report, or every job failed at its setup) is one the tool cannot do
# here.
did_io() {
    python3 - "$1" <<'EOF' 2>/dev/null
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
sys.exit(0 if any(j[d]["total_ios"] for j in doc["jobs"] for d in ("read", "write", "trim")) else 1)
EOF
}

# Records an eligible file that did not do the same work.
differs() {
    not_same+=("$1: $2")
}

echo
printf '%-34s %10s %10s %12s %12s %6s %6s %8s %8s %7s %s\n' example fio_ios rl_ios fio_bytes rl_bytes fio_rd rl_rd fio_bs rl_bs iops_x verdict
for f in "${eligible_files[@]}"; do
    # The previous file's loop devices are done with.
    release_loops
    name=$(basename "$f" .fio)
    w="$scratch/$name"
    rm -rf "$w" && mkdir -p "$w"
    if [[ -n ${rl_reason[$f]+x} ]]; then
        # Refused by ringlab: what fio does with the same copy, for the record.
        fio_said="not run"
        if prepare "$f"; then
            run_fio
            if [[ $tool_rc == 0 ]]; then fio_said="fio ran it"; else fio_said="fio exit $tool_rc: $(grep -v '^$' "$w/fio.err" | head -1 | head -c 100)"; fi
            [[ $tool_rc == 0 ]] || did_io "$w/fio.json" || fio_cannot=$((fio_cannot + 1))
        else
            fio_said=$why
        fi
        printf '%-34s %s\n' "$name" "refused by ringlab: ${rl_reason[$f]:0:120} (same copy under fio: $fio_said)"
        differs "$name" "refused by ringlab: ${rl_reason[$f]} (the same copy under fio: $fio_said)"
        rm -rf "$w"
        continue
    fi
    if ! prepare "$f"; then
        printf '%-34s %s\n' "$name" "$why"
        differs "$name" "$why"
        continue
    fi
    # A run whose jobs failed (fio exits 1 with every job's report, each
    # failed one with its error) is compared by its jobs' errors.
    run_fio
    fio_rc=$tool_rc
    if [[ $fio_rc != 0 ]] && ! grep -q '"jobs"' "$w/fio.json" 2>/dev/null; then
        msg="fio failed: $(head -c 120 "$w/fio.err" | tr '\n' ' ')"
        fio_cannot=$((fio_cannot + 1))
        printf '%-34s %s%s\n' "$name" "$msg" "$notes"
        differs "$name" "$msg$notes"
        continue
    fi
    # fio's data files of job names and its logs (ringlab refuses to
    # replace a file it did not write).
    rm -f "$rd"/*.0 "$rd"/*.0.* "$rd"/*.log 2>/dev/null || true
    run_tool ringlab rl
    rl_rc=$tool_rc
    if [[ $rl_rc != 0 ]] && { [[ $rl_rc != "$fio_rc" ]] || ! grep -q '"jobs"' "$w/rl.json" 2>/dev/null; }; then
        msg="ringlab failed: $(grep -v note: "$w/rl.err" | head -c 150 | tr '\n' ' ')"
        printf '%-34s %s%s\n' "$name" "$msg" "$notes"
        differs "$name" "$msg$notes"
        continue
    fi
    if [[ $fio_rc != 0 || $rl_rc != 0 ]]; then
        # Jobs failed in both (fio exits 1 with every job's report): the
        # same errors, job by job, and then the same work as below; other
        # errors are not the same outcome.
        errs() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); print(','.join('%s=%s' % (j['jobname'], j['error']) for j in json.loads(t[t.index('{'):])['jobs']))" "$1"; }
        fio_errs=$(errs "$w/fio.json")
        rl_errs=$(errs "$w/rl.json")
        if [[ $fio_rc != "$rl_rc" || $fio_errs != "$rl_errs" ]]; then
            msg="jobs failed: fio exit $fio_rc [$fio_errs], ringlab exit $rl_rc [$rl_errs]"
            printf '%-34s %s%s\n' "$name" "$msg" "$notes"
            differs "$name" "$msg$notes"
            continue
        fi
        notes+=" [both exit $fio_rc with the same job errors: $fio_errs]"
    fi
    ran=$((ran + 1))
    read -r fi_ios fi_bytes fi_rd fi_bs fi_iops <<<"$(work "$w/fio.json")"
    read -r rl_ios rl_bytes rl_rd rl_bs rl_iops <<<"$(work "$w/rl.json")"
    # A job whose end is its speed or its criterion: the count is not its
    # work.
    timed=""
    if grep -Eq '^[[:space:]]*time_based' "$w/job.fio"; then
        timed="time based"
    elif grep -Eq '^[[:space:]]*(ss|steadystate)[[:space:]]*=' "$w/job.fio"; then
        timed="steady state"
    elif grep -Eq '^[[:space:]]*latency_target[[:space:]]*=' "$w/job.fio"; then
        timed="latency target"
    fi
    # Its mix and mean block size are then compared group by group (the
    # jobs that run together, by groupid), since over the whole file they
    # are the groups' relative speeds (steadystate.fio: a write group, then
    # a read group).
    verdict=$(compare "$timed" "$w/rl.json" "$w/fio.json")
    if [[ $verdict != same* ]]; then
        # Is fio's own work the same from run to run? Four more runs of
        # fio on the same copy; where fio's runs differ among themselves,
        # ringlab's run is judged against the range of fio's (widened by
        # the same tolerances), and the verdict says so.
        fio_runs=("$w/fio.json")
        for k in 2 3 4 5; do
            run_tool fio "fio$k"
            [[ $tool_rc == "$fio_rc" ]] && fio_runs+=("$w/fio$k.json")
        done
        verdict=$(compare "$timed" "$w/rl.json" "${fio_runs[@]}")
    fi
    if [[ $verdict == same* ]]; then
        same=$((same + 1))
    else
        differs "$name" "$verdict (fio $fi_ios I/Os, $fi_bytes B, read $fi_rd, bs $fi_bs; ringlab $rl_ios, $rl_bytes B, read $rl_rd, bs $rl_bs)$notes"
    fi
    ratio=$(python3 -c "print('%.2f' % ($rl_iops / $fi_iops) if $fi_iops > 0 else 'n/a')")
    printf '%-34s %10s %10s %12s %12s %6s %6s %8s %8s %7s %s\n' "$name" "$fi_ios" "$rl_ios" "$fi_bytes" "$rl_bytes" "$fi_rd" "$rl_rd" "$fi_bs" "$rl_bs" "$ratio" "$verdict$notes"
    rm -rf "$w"
done
echo
echo "short runs: $ran of the $eligible eligible files ran under both tools; $same did the same work (I/O count or bytes within 1%, read share within 2 points, mean block size within 2%)"
echo "eligible files (fio accepts them, ringlab has their engines): $eligible; the same work: $same of $eligible ($(python3 -c "print('%.1f' % (100 * $same / max($eligible, 1)))")%)"
runnable=$((eligible - fio_cannot))
echo "of them fio 3.33 itself runs here (its run of the same copy did I/O): $runnable; the same work: $same of $runnable ($(python3 -c "print('%.1f' % (100 * $same / max($runnable, 1)))")%)"
if ((${#not_same[@]})); then
    echo "not the same work (${#not_same[@]}):"
    for x in "${not_same[@]}"; do echo "  - $x"; done
fi
