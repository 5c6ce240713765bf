# Sourced by the bench scripts (after they set `repo`, the tree's root):
# the two things each of them does before measuring, written once.
#
#   bench_need CMD PKG [CMD PKG ...]
#       Installs, with apt-get (after one apt-get update), the Debian
#       package PKG of every command CMD that is not on PATH. A fresh
#       machine has none of the peers (fio, wrk, nginx, perf). Returns
#       apt-get's status; the caller decides whether a missing peer is
#       fatal. `bench_install PKG...` installs the packages given.
#
#   bench_ringlab
#       Sets `ringlab` to the binary to measure: RINGLAB_BIN when set (a
#       path, or a command on PATH), otherwise this tree's release build,
#       built now (cargo build --release -p ringlab).

bench_install() {
    (($#)) || return 0
    echo "installing $* (apt-get)" >&2
    apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

bench_need() {
    local missing=()
    while (($# >= 2)); do
        command -v "$1" >/dev/null || missing+=("$2")
        shift 2
    done
    bench_install "${missing[@]}"
}

bench_ringlab() {
    if [[ -n ${RINGLAB_BIN:-} ]]; then
        if [[ $RINGLAB_BIN == */* ]]; then
            ringlab=$(realpath "$RINGLAB_BIN")
        else
            ringlab=$(command -v "$RINGLAB_BIN") || {
                echo "RINGLAB_BIN=$RINGLAB_BIN: no such command" >&2
                exit 2
            }
        fi
        [[ -x $ringlab ]] || {
            echo "RINGLAB_BIN=$RINGLAB_BIN: not an executable file" >&2
            exit 2
        }
    else
        cargo build --release -q --manifest-path "$repo/Cargo.toml" -p ringlab
        ringlab=$repo/target/release/ringlab
    fi
}
