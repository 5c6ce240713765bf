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
# there; an absolute directory= or filename= is moved there too. What a
# copy needs beyond that, said in its verdict:
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
# The mix: the read share of reads, writes and trims, and the trim share
# (0 for a job without trims).
n = max(ri + wi + ti, 1)
print(ios, rb + wb + tb, "%.4f" % (ri / n), "%.1f" % ((rb + wb + tb) / n), "%.1f" % iops, "%.4f" % (ti / n))
EOF
}

# Each group of one JSON output (its entries with the same groupid: the
# jobs that run together) as read-share/trim-share/mean-bytes-per-I/O,
# space separated ("-" for a group without I/O).
groups() {
    python3 - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
sums = {}
for j in doc["jobs"]:
    g = sums.setdefault(j["groupid"], [0, 0, 0, 0])
    for k, d in enumerate(("read", "write", "trim")):
        g[k] += j[d]["total_ios"]
    g[3] += sum(j[d]["io_bytes"] for d in ("read", "write", "trim"))
out = []
for _, (r, w, t, b) in sorted(sums.items()):
    n = r + w + t
    out.append("%.4f/%.4f/%.1f" % (r / n, t / n, b / n) if n else "-")
print(" ".join(out))
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
        errs() { python3 -c "import json,sys; t=open(sys.argv[1]).read(); print(','.join('%s=%s' % (j['jobname'], j['error']) for j in json.loads(t[t.index('{'):])['jobs']))" "$1"; }
        msg="jobs failed: fio exit $fio_rc [$(errs "$w/fio.json")], ringlab exit $rl_rc [$(errs "$w/rl.json")]"
        printf '%-34s %s%s\n' "$name" "$msg" "$notes"
        differs "$name" "$msg$notes"
        continue
    fi
    ran=$((ran + 1))
    read -r fi_ios fi_bytes fi_rd fi_bs fi_iops fi_tr <<<"$(work "$w/fio.json")"
    read -r rl_ios rl_bytes rl_rd rl_bs rl_iops rl_tr <<<"$(work "$w/rl.json")"
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
    verdict=$(python3 -c "
fi,rl=($fi_ios,$fi_bytes,$fi_rd,$fi_bs),($rl_ios,$rl_bytes,$rl_rd,$rl_bs)
timed='$timed'
def near(a,b,t): return abs(a-b) <= t*max(abs(a),abs(b),1e-9)
count = timed != '' or near(fi[0],rl[0],0.01) or near(fi[1],rl[1],0.01)
mix = abs(fi[2]-rl[2]) <= 0.02 and abs($fi_tr-$rl_tr) <= 0.02
bs = near(fi[3],rl[3],0.02)
if timed:
    fe, re = '$(groups "$w/fio.json")'.split(), '$(groups "$w/rl.json")'.split()
    pairs = [(a, b) for a, b in zip(fe, re) if a != '-' or b != '-']
    ok = len(fe) == len(re) and all('-' not in (a, b) for a, b in pairs)
    x = [(tuple(map(float, a.split('/'))), tuple(map(float, b.split('/')))) for a, b in pairs] if ok else []
    mix = ok and all(abs(a[0]-b[0]) <= 0.02 and abs(a[1]-b[1]) <= 0.02 for a, b in x)
    bs = ok and all(near(a[2], b[2], 0.02) for a, b in x)
why = ' (%s: count not compared; mix and block size per group)' % timed if timed else ''
print(('same' + why) if count and mix and bs else 'differs:' + ','.join(n for n,ok in (('count',count),('mix',mix),('bs',bs)) if not ok) + why)")
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
