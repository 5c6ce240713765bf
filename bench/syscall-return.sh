#!/usr/bin/env bash
# What a function return right after a blocking system call costs here.
#
# Two threads on one CPU ping-pong a byte over two pipes, so every read
# blocks and each round trip is two context switches. The same loop runs
# twice: with the `syscall` instruction inline in the loop, and with it in
# a small function of its own (call, syscall, return: what libc's syscall(),
# read() and the io-uring crate's Submitter do). Then a non-blocking
# getppid() both ways. Prints the median of BENCH_REPEATS (5) runs each.
#
# Why ringlab cares: on this project's machine the returning variant costs
# about half a microsecond more per blocking call, which is why
# ringlab_core::uring::enter issues io_uring_enter inline (see its doc and
# docs/benchmarks.md). Numbers are measured, not asserted.
#
# Environment: BENCH_CPU (1), BENCH_REPEATS (5), CC (cc).
set -euo pipefail
cpu=${BENCH_CPU:-1}
repeats=${BENCH_REPEATS:-5}
cc=${CC:-cc}
[[ $(uname -m) == x86_64 ]] || { echo "x86-64 only (inline syscall asm)" >&2; exit 2; }
command -v "$cc" >/dev/null || { echo "needs a C compiler ($cc): apt-get install gcc" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/p.c" <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static inline long sc3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}
__attribute__((noinline)) long sc3_call(long n, long a, long b, long c) { return sc3(n, a, b, c); }
static int wrap, p1[2], p2[2];
static const long N = 300000;
static long io(long nr, int fd, char *b) { return wrap ? sc3_call(nr, fd, (long)b, 1) : sc3(nr, fd, (long)b, 1); }
static void *peer(void *a) {
    char c;
    for (long i = 0; i < N; i++) { io(SYS_read, p1[0], &c); io(SYS_write, p2[1], &c); }
    return a;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char **argv) {
    wrap = atoi(argv[2]);
    if (argv[1][0] == 'p') {
        pthread_t t; char c = 'x';
        if (pipe(p1) || pipe(p2) || pthread_create(&t, 0, peer, 0)) return 1;
        double a = now();
        for (long i = 0; i < N; i++) { io(SYS_write, p1[1], &c); io(SYS_read, p2[0], &c); }
        double b = now();
        pthread_join(t, 0);
        printf("%.0f\n", (b - a) / N);
    } else {
        double a = now();
        for (long i = 0; i < 10 * N; i++) { if (wrap) sc3_call(SYS_getppid, 0, 0, 0); else sc3(SYS_getppid, 0, 0, 0); }
        printf("%.1f\n", (now() - a) / (10 * N));
    }
    return 0;
}
C
"$cc" -O2 -o "$dir/p" "$dir/p.c" -lpthread
median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f"{statistics.median(v):g} ({min(v):g}-{max(v):g})")' "$@"; }
declare -A r
for ((i = 0; i < repeats; i++)); do
    for k in "pipe 0" "pipe 1" "getppid 0" "getppid 1"; do
        # shellcheck disable=SC2086 # two words: test, variant
        r[$k]+="$(taskset -c "$cpu" "$dir/p" $k) "
    done
done
echo "CPU $cpu, $repeats runs each, median (min-max), ns"
# shellcheck disable=SC2086
printf '%-44s %s\n' "pipe round trip, syscall inline" "$(median ${r[pipe 0]})" \
    "pipe round trip, call + syscall + return" "$(median ${r[pipe 1]})" \
    "getppid, syscall inline" "$(median ${r[getppid 0]})" \
    "getppid, call + syscall + return" "$(median ${r[getppid 1]})"
