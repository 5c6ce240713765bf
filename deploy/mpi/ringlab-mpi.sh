#!/bin/bash
# Any ringlab io/http run as N MPI ranks (Open MPI's mpirun; MPICH's and
# Intel MPI's set PMI_RANK/PMI_SIZE, which --shard auto reads too), then
# merged. ringlab makes no MPI calls: mpirun only starts the processes.
#
#   NP=4 HOSTFILE=hosts deploy/mpi/ringlab-mpi.sh http http://server:8080/ -R 40000 -d 30s
#   NP=2 deploy/mpi/ringlab-mpi.sh io /dev/nvme0n1 --rw randread --bs 4k --iodepth 32 --runtime 30s
#
# OUT must be on a file system every host sees (or copy the shard files
# back before the merge step).
set -euo pipefail

NP=${NP:-4}
RINGLAB=${RINGLAB:-ringlab}
OUT=${RINGLAB_RESULTS:-$PWD/ringlab-mpi-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/shards"
START=$(date -u -d "+${RINGLAB_START_IN:-15} seconds" +%FT%TZ)

args=(--oversubscribe -np "$NP")
[ -n "${HOSTFILE:-}" ] && args+=(--hostfile "$HOSTFILE" --map-by node)
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)

mpirun "${args[@]}" "$RINGLAB" "$@" \
    --shard auto --start-at "$START" \
    --output-format json --output "$OUT/shards/shard-{shard}.json"

"$RINGLAB" merge "$OUT/shards" -o "$OUT/merged.json"
echo "merged result: $OUT/merged.json"
