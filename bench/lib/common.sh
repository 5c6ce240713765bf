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
#
#   bench_cpu_groups NAME
#       Makes two CPU cgroups of equal weight, NAME-a and NAME-b, in the
#       array `groups` (cgroup v1's cpu controller or v2's; root), for two
#       commands that share a CPU at once. The caller removes them
#       (rmdir "${groups[@]}") when done. Without a CPU controller it says
#       why on stderr and returns 1.
#
#   bench_quiet
#       Prints one line on how quiet the machine is before the script
#       measures: every other process (kernel threads too) that used 2% of
#       a CPU or more over one second, and any profiler or tracer running
#       (perf record/top/trace/stat, bpftrace). It measures nothing itself
#       and stops nothing: the line goes into the record. A co-run's two
#       sides meet the same host, but a third process does not weigh on
#       both alike (docs/benchmarks.md, 2026-11-28: a `perf record -C 1`
#       left running moved zram qd1 from 0.974 to 0.970).
#
#   bench_target NAME MIB
#       Sets `target` to the file to read: RINGLAB_BENCH_TARGET when set;
#       otherwise NAME under the repo's target/, laid out now with MIB MiB
#       from /dev/urandom and added to the caller's `cleanup` array (which
#       the caller's EXIT trap removes).
#
#   bench_row_flags ROW
#       Prints a zram row's flags, "ringlab flags|t/io_uring flags" (qd1,
#       qd32, qd8cb8: the rows of issue 25's bars); an unknown row is
#       refused with exit 2. bench/floor takes ringlab's half.
#
#   bench_zram
#       Makes /dev/zram0 ready to read (root): loads the module, gives it
#       1 GiB when it has no size, and fills it from /dev/urandom, so every
#       page is stored (and read) whole. Refuses a zram0 in use as swap or
#       mounted (exit 2).

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

bench_target() {
    if [[ -n "${RINGLAB_BENCH_TARGET:-}" ]]; then
        target=$RINGLAB_BENCH_TARGET
        return
    fi
    mkdir -p "$repo/target"
    target="$repo/target/$1"
    cleanup+=("$target")
    dd if=/dev/urandom of="$target" bs=1M count="$2" status=none
    sync
}

bench_row_flags() {
    case $1 in
        qd1) echo "--iodepth 1|-d1 -s1 -c1" ;;
        qd32) echo "--iodepth 32|-d32 -s32 -c1" ;;
        qd8cb8) echo "--iodepth 8 --complete-batch 8|-d8 -s8 -c8" ;;
        *) echo "unknown row '$1' (BENCH_ROWS: qd1 qd32 qd8cb8)" >&2; exit 2 ;;
    esac
}

bench_zram() {
    local z=/dev/zram0
    [[ -e $z ]] || modprobe zram
    if grep -q "^$z " /proc/swaps /proc/mounts 2>/dev/null; then
        echo "$z is in use (swap or mounted); free it first" >&2
        exit 2
    fi
    if [[ $(cat /sys/block/zram0/disksize) == 0 ]]; then
        echo 1G >/sys/block/zram0/disksize
    fi
    local mib=$(($(cat /sys/block/zram0/disksize) >> 20))
    echo "filling $z ($mib MiB) from /dev/urandom" >&2
    dd if=/dev/urandom of=$z bs=1M count="$mib" oflag=direct status=none
}

bench_cpu_groups() {
    local base
    if [[ -f /sys/fs/cgroup/cpu/cgroup.procs ]]; then
        base=/sys/fs/cgroup/cpu # cgroup v1: cpu.shares 1024 each
    elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        base=/sys/fs/cgroup # cgroup v2: cpu.weight 100 each
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
            echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    else
        echo "no CPU cgroup controller (neither /sys/fs/cgroup/cpu nor cgroup v2's cpu): run as root on a machine with one" >&2
        return 1
    fi
    groups=("$base/$1-a" "$base/$1-b")
    mkdir -p "${groups[@]}"
}

bench_quiet() {
    python3 - "$$" <<'PY'
import os
import sys
import time

skip = {int(sys.argv[1]), os.getpid(), os.getppid()}


def sample():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(pid)] = (comm, int(fields[11]) + int(fields[12]))
    return out


def tools():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in skip:
            continue
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        name = os.path.basename(argv[0].decode(errors="replace"))
        sub = argv[1].decode(errors="replace") if len(argv) > 1 else ""
        if name == "perf" and sub in ("record", "top", "trace", "stat"):
            found.append(f"perf {sub} (pid {pid})")
        elif name in ("bpftrace", "trace-cmd"):
            found.append(f"{name} (pid {pid})")
    return found


before = sample()
time.sleep(1)
after = sample()
hz = os.sysconf("SC_CLK_TCK")
busy = sorted(
    ((ticks - before[pid][1]) / hz, comm, pid)
    for pid, (comm, ticks) in after.items()
    if pid in before and pid not in skip
)
busy = [f"{comm} (pid {pid}) {share:.0%}" for share, comm, pid in reversed(busy) if share >= 0.02]
load = open("/proc/loadavg").read().split()[:3]
running = tools()
if busy or running:
    print(
        "machine not quiet: "
        + "; ".join(
            ([f"running: {', '.join(running)}"] if running else [])
            + ([f"over 2% of a CPU in the last second: {', '.join(busy)}"] if busy else [])
        )
        + f" (load average {' '.join(load)})"
    )
else:
    print(f"machine quiet: no other process over 2% of a CPU in the last second, no profiler running (load average {' '.join(load)})")
PY
}
