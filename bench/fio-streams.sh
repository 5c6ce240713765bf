#!/usr/bin/env bash
# fio 3.33 and `ringlab fio` on the same job, each with a per-I/O latency
# log carrying offsets (--write_lat_log=X --log_offset=1); the (direction,
# length, offset) sequences are compared I/O by I/O per job: the identical
# prefix, whether the two runs issued the same set of I/Os (a depth above 1
# logs in completion order), and the totals side by side.
#
# Usage: bench/fio-streams.sh [CASE...]   (default: every case below)
# Environment: RINGLAB_BIN (default: this tree's release build, built),
# SCRATCH (default: a new directory under /tmp; removed at the end).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/lib/common.sh"
bench_need fio fio
[[ -d /usr/share/doc/fio/examples ]] || bench_install fio-examples
bench_ringlab
rl=$ringlab
scratch=${SCRATCH:-$(mktemp -d /tmp/fio-streams.XXXXXX)}
ex=/usr/share/doc/fio/examples
F=$scratch/f16
declare -A cases=(
  [randread]="--name=x --filename=$F --size=16m --rw=randread --bs=4k"
  [bsrange]="--name=x --filename=$F --size=16m --rw=randread --bsrange=4k-64k"
  [bsrange-4k-10k]="--name=x --filename=$F --size=16m --rw=randread --bsrange=4k-10k"
  [bssplit]="--name=x --filename=$F --size=16m --rw=randread --bssplit=4k/50:8k/30:64k/20"
  [randrw]="--name=x --filename=$F --size=16m --rw=randrw --rwmixread=70 --bs=4k"
  [randrw-bssplit]="--name=x --filename=$F --size=16m --rw=randrw --rwmixread=80 --bssplit=512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10"
  [numjobs2]="--name=x --filename=$F --size=16m --rw=randrw --bs=4k --numjobs=2"
  [two-jobs]="$scratch/two.fio"
  [norandommap]="--name=x --filename=$F --size=16m --rw=randrw --norandommap --bsrange=4k-64k"
  [randseed]="--name=x --filename=$F --size=16m --rw=randrw --randseed=1234 --bssplit=4k/40:64k/60,64k/100 --numjobs=2"
  [taus64]="--name=x --filename=$F --size=16m --rw=randrw --random_generator=tausworthe64 --bsrange=4k-16k"
  [lfsr]="--name=x --filename=$F --size=10m --rw=randrw --random_generator=lfsr --bsrange=4k-16k"
  [loops3]="--name=x --filename=$F --size=4m --rw=randrw --bsrange=4k-64k --loops=3"
  [loops-norandommap]="--name=x --filename=$F --size=4m --rw=randread --bs=4k --norandommap --loops=2"
  [loops-norandommap-libaio]="--name=x --filename=$F --size=4m --rw=randread --bs=4k --norandommap --loops=2 --ioengine=libaio"
  [loops-rw-libaio]="--name=x --filename=$F --size=4m --rw=rw --bsrange=4k-16k --loops=2 --ioengine=libaio"
  [io_size]="--name=x --filename=$F --size=4m --io_size=20m --rw=randrw --bssplit=4k/40:64k/60,64k"
  [randread:8]="--name=x --filename=$F --size=16m --rw=randread:8 --bs=4k"
  [zoned]="--name=x --filename=$F --size=16m --rw=randrw --bs=4k --random_distribution=zoned:50/10:50/90 --number_ios=3000"
  [blockalign]="--name=x --filename=$F --size=16m --rw=randread --bssplit=512/10:4k/60:8k/30 --blockalign=4k --number_ios=3000"
  [zipf]="--name=x --filename=$F --size=16m --rw=randread --bs=4k --random_distribution=zipf:1.2 --number_ios=3000"
  [pareto]="--name=x --filename=$F --size=16m --rw=randread --bs=4k --random_distribution=pareto:0.9 --number_ios=3000"
  [normal]="--name=x --filename=$F --size=16m --rw=randrw --bs=4k --random_distribution=normal:10 --number_ios=3000"
  [zipf-example]="$ex/zipf.fio"
  [rand-zones-example]="$scratch/rz.fio"
  [seq-bsrange]="--name=x --filename=$F --size=16m --rw=read --bsrange=4k-64k"
  [seq-rw-bssplit]="--name=x --filename=$F --size=16m --rw=rw --rwmixread=70 --bssplit=4k/50:64k/50"
  [iometer]="$scratch/iometer.fio"
  [iometer-256m]="$scratch/iometer-256m.fio"
  [cmdprio-bssplit]="$scratch/cmdprio.fio"
  [cmdprio-bssplit-depth1]="$scratch/cmdprio-d1.fio"
)
order=(randread bsrange bsrange-4k-10k bssplit randrw randrw-bssplit numjobs2 two-jobs norandommap randseed taus64 lfsr loops3 loops-norandommap loops-norandommap-libaio loops-rw-libaio io_size randread:8 zoned blockalign zipf pareto normal zipf-example rand-zones-example seq-bsrange seq-rw-bssplit iometer iometer-256m cmdprio-bssplit cmdprio-bssplit-depth1)
[[ $# -gt 0 ]] && order=("$@")
cat >"$scratch/two.fio" <<JOB
[global]
filename=$F
size=16m
[a]
rw=randread
bsrange=4k-32k
[b]
rw=randwrite
bs=8k
numjobs=2
[c]
rw=randrw
rwmixread=30
bssplit=4k/40:16k/60,64k
JOB
# The examples as they are, sizes cut: iometer's 4g to 16m and 256m (file
# in the scratch directory), cmdprio-bssplit's /dev/sda to a 128 MiB file
# (its lat log option dropped: the comparison writes its own).
{ printf '[global]\nruntime=3\n'; sed 's/^size=4g/size=16m/' $ex/iometer-file-access-server.fio; } >"$scratch/iometer.fio"
{ printf '[global]\nruntime=3\nfilename=%s/io256\n' "$scratch"; sed 's/^size=4g/size=256m/' $ex/iometer-file-access-server.fio; } >"$scratch/iometer-256m.fio"
sed -e "s|^filename=/dev/sda|filename=$scratch/cmd.dat\nsize=128m|" -e '/^write_lat_log/d' $ex/cmdprio-bssplit.fio >"$scratch/cmdprio.fio"
sed 's/^iodepth=16/iodepth=1/' "$scratch/cmdprio.fio" >"$scratch/cmdprio-d1.fio"
{ printf '[global]\nruntime=3\n'; sed 's/^size=2g/size=64m/' $ex/rand-zones.fio; } >"$scratch/rz.fio"
for c in "${order[@]}"; do
  d=$scratch/run-${c//:/_}
  rm -rf "$d" && mkdir -p "$d"
  # shellcheck disable=SC2086
  (cd "$d" && fio --output=fio.out ${cases[$c]} --write_lat_log=f --log_offset=1 >/dev/null 2>fio.err) || { echo "$c: fio failed: $(head -c 200 "$d/fio.err")"; continue; }
  # shellcheck disable=SC2086
  (cd "$d" && "$rl" fio --output=rl.out ${cases[$c]} --write_lat_log=r --log_offset=1 >/dev/null 2>rl.err) || { echo "$c: ringlab failed: $(grep -v note: "$d/rl.err" | head -c 200)"; continue; }
  (cd "$d" && python3 - "$c" <<'PY'
import glob, sys
from collections import Counter
def load(pfx):
    out = {}
    for f in sorted(glob.glob(pfx + "_lat.*.log"), key=lambda p: int(p.split("_lat.")[1].split(".")[0])):
        job = int(f.split("_lat.")[1].split(".")[0])
        out[job] = [tuple(int(x) for x in l.split(",")[2:5]) for l in open(f)]
    return out
a, b = load("f"), load("r")
def tot(r):
    n = len(r); by = sum(i[1] for i in r); rd = sum(1 for i in r if i[0] == 0)
    return f"{n} {by} {100.0 * rd / max(n, 1):.2f}% {by / max(n, 1):.1f}"
for job in sorted(set(a) | set(b)):
    x, y = a.get(job, []), b.get(job, [])
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    print(f"| {sys.argv[1]} | {job} | {n} | {Counter(x) == Counter(y)} | {tot(x)} | {tot(y)} |")
PY
  )
  rm -rf "$d"
done
rm -rf "$scratch"
