#!/usr/bin/env bash
# fio's own example job files (Debian's fio-examples package) checked by
# `ringlab io --fio FILE --parse-only` and by `fio --parse-only FILE`: which
# ringlab runs unchanged, and for the others the first reason it gives.
# Nothing is run and no file is written (both tools only parse).
#
# Environment:
#   FIO_EXAMPLES  directory of *.fio files (default: the package's)
#   RINGLAB_BIN   a ringlab binary instead of building this tree's
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

ok=0 refused=0 fio_ok=0 both=0
printf '%-36s %-8s %-8s %s\n' example fio ringlab "ringlab's reason"
for f in "$dir"/*.fio; do
    name=$(basename "$f")
    if fio --parse-only "$f" >/dev/null 2>&1; then fio_says=ok; fio_ok=$((fio_ok + 1)); else fio_says=refused; fi
    if out=$("$ringlab" io --fio "$f" --parse-only 2>&1 >/dev/null); then
        printf '%-36s %-8s %-8s\n' "$name" "$fio_says" ok
        ok=$((ok + 1))
        [[ $fio_says == ok ]] && both=$((both + 1))
    else
        reason=$(head -1 <<<"$out" | sed "s|$dir/||; s|^ringlab: ||; s| (see 'ringlab io --help')||")
        printf '%-36s %-8s %-8s %s\n' "$name" "$fio_says" refused "${reason:0:150}"
        refused=$((refused + 1))
    fi
done
echo
echo "$((ok + refused)) example job files: ringlab accepts $ok ($both of them fio accepts too), refuses $refused; fio $(fio --version) accepts $fio_ok here"
