#!/usr/bin/env bash
# How far ringlab's I/O loop is from the floor of any loop on the io-uring
# crate, and where that floor stands against t/io_uring.
#
# bench/floor is a read loop with nothing in it but what t/io_uring does
# with -p0 -B0 -F0 -n1 -O1 -X0 -R1 -t0 (its ring flags, O_DIRECT|O_NOATIME,
# random 4 KiB reads, one io_uring_enter per turn that submits and waits):
# no clock read per request, no latency, no histogram, no accounting. For
# each row this script runs bench/zram-cost.sh twice, once with the floor
# in ringlab's place and once with ringlab, so each is a co-run against
# t/io_uring on one CPU (see zram-cost.sh). The floor's ratio is the best
# a Rust loop on this crate reached here; ringlab's distance below it is
# what its loop (timing, fio's accounting, checks, helper threads) costs.
# First, each row runs t/io_uring against itself (zram-cost.sh's
# BENCH_SELF): the same program on both sides, so its interval is the
# spread of the method on this machine, and the two rows after it can be
# read against that (a ratio whose interval is no wider than the self
# row's is as sure as this machine allows).
#
# The same program is the floor of an HTTP client: `floor http -cN -dSs URL`
# (bench/floor/src/http.rs) takes the command line bench/kstat-overhead.sh
# gives `ringlab http`, so BENCH_BASELINE_BIN=target/floor/release/ringlab-floor
# there co-runs it with wrk beside ringlab (`BENCH_ROWS= bash
# bench/uring-floor.sh` only builds it and prints its path).
#
# Environment: T_IO_URING (required for rows), BENCH_ROWS ("qd1 qd32 qd8cb8";
# empty: build only),
# BENCH_REPEATS (8), RINGLAB_BIN (default: this tree, built), and the rest
# of zram-cost.sh's. Needs root and cargo.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
export BENCH_REPEATS=${BENCH_REPEATS:-8}
read -r -a rows <<<"${BENCH_ROWS-qd1 qd32 qd8cb8}"
echo "building bench/floor (cargo, release)" >&2
CARGO_TARGET_DIR="$repo/target/floor" cargo build --release -q --manifest-path "$repo/bench/floor/Cargo.toml"
floor="$repo/target/floor/release/ringlab-floor"
((${#rows[@]})) || { echo "$floor"; exit 0; }
for row in "${rows[@]}"; do
    BENCH_ROWS=$row BENCH_SELF=1 bash "$repo/bench/zram-cost.sh" | sed -n '/median\|quiet/p'
    BENCH_ROWS=$row BENCH_SIDE_NAME=floor RINGLAB_BIN=$floor bash "$repo/bench/zram-cost.sh" | sed -n '/median\|quiet/p'
    BENCH_ROWS=$row bash "$repo/bench/zram-cost.sh" | sed -n '/median\|>=\|quiet/p'
done
