"""Runs two commands at once on one CPU, each in a cgroup of its own with
equal CPU weight, and prints each one's figure: the co-run of
bench/kstat-overhead.sh (part 4).

Two runs made one after the other on a shared host differ by up to 30%;
two runs made at the same moment on the same CPU meet the same host, and
with equal weights each gets half of the CPU, so the ratio of their
figures is the ratio of their costs per operation. Two identical ringlab
runs measured this way came out at 1.000 (0.999-1.000).

usage: corun.py CGROUP_A CGROUP_B CPU KIND_A KIND_B -- CMD_A... -- CMD_B...
KIND: rl-io (IOPS from ringlab's JSON), tiou (t/io_uring's per-second
IOPS lines, the first and last dropped: with N s, seconds 1 to N-2, which
the caller makes ringlab's measured seconds too, --ramp-time 1s --runtime
N-3 s, so both figures cover the same time; each starts its clock at
its own start, so the two windows are offset by the difference of their
start-up times, which is harmless only because each window lies inside
the other's whole run: t/io_uring runs two seconds past its window and past
ringlab's. A peer whose window could end after ringlab has left would
have the CPU or device to itself for the rest of it: bench/libaio-corun.sh
counts at the block layer over one window for that reason),
rl-http and wrk (responses per CPU-second of the whole process, from
wait4's rusage). Prints "A B" (the two figures) or "NA reason".

With CORUN_DETAIL set to a file, it also appends one JSON line to it: for
each side, its kind, CPU seconds, voluntary and involuntary context
switches (rusage) and operations (responses, requests or I/Os; null for
t/io_uring, which prints rates only). A client's voluntary switches per
response are the times it found nothing to do and slept: what the HTTP
rows' ratio moves with (bench/kstat-overhead.sh prints the correlation).
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def operations(kind, out):
    """The operations a side's output counts (responses, requests or I/Os),
    or None where it prints none (t/io_uring) or wrk's line is missing."""
    if kind == "rl-io":
        return json.loads(out)["total"]["ops"]
    if kind == "rl-http":
        return json.loads(out)["http"]["responses"]
    if kind == "wrk":
        m = re.search(r"(\d+) requests in", out)
        return int(m.group(1)) if m else None
    return None


def figure(kind, out, cpu, code):
    if code != 0:
        return None, f"exit {code}"
    if kind == "rl-io":
        return json.loads(out)["total"]["iops"], None
    if kind == "rl-http":
        n = operations(kind, out)
        return (n / cpu, None) if cpu > 0 else (None, "no CPU time")
    if kind == "wrk":
        n = operations(kind, out)
        if n is None or cpu <= 0:
            return None, "no request count"
        return n / cpu, None
    if kind == "tiou":
        unit = {"K": 1e3, "M": 1e6, "": 1}
        v = [float(x) * unit[k] for x, k in re.findall(r"IOPS=([0-9.]+)([KM]?),", out)]
        v = v[1:-1] if len(v) > 2 else []
        return (sum(v) / len(v), None) if v else (None, "t/io_uring printed under 3 IOPS lines")
    raise SystemExit(f"unknown kind {kind}")


def counted(kind, out, code):
    """operations() for the CORUN_DETAIL line: None for a failed side or
    an output it cannot read, instead of an error."""
    if code != 0:
        return None
    try:
        return operations(kind, out)
    except (ValueError, KeyError, TypeError):
        return None


def main():
    a_cg, b_cg, cpu, kind_a, kind_b = sys.argv[1:6]
    rest = sys.argv[6:]
    assert rest[0] == "--"
    cut = rest.index("--", 1)
    cmds = [rest[1:cut], rest[cut + 1:]]
    procs = []
    for cg, cmd in zip((a_cg, b_cg), cmds):
        out = tempfile.TemporaryFile()
        p = subprocess.Popen(
            ["taskset", "-c", cpu] + cmd,
            stdout=out,
            stderr=subprocess.DEVNULL,
            # The child joins its cgroup before taskset execs the command,
            # so every thread it makes (io-wq workers too) is counted there.
            preexec_fn=lambda cg=cg: open(os.path.join(cg, "cgroup.procs"), "w").write(str(os.getpid())),
        )
        procs.append((p, out))
    got = []
    detail = {}
    for (p, out), kind, side in zip(procs, (kind_a, kind_b), "ab"):
        _, status, ru = os.wait4(p.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        got.append(figure(kind, text, ru.ru_utime + ru.ru_stime, code))
        detail[side] = {
            "kind": kind,
            "cpu_s": ru.ru_utime + ru.ru_stime,
            "nvcsw": ru.ru_nvcsw,
            "nivcsw": ru.ru_nivcsw,
            "ops": counted(kind, text, code),
        }
    if os.environ.get("CORUN_DETAIL"):
        with open(os.environ["CORUN_DETAIL"], "a") as f:
            f.write(json.dumps(detail) + "\n")
    if any(v is None for v, _ in got):
        print("NA", next(why for v, why in got if v is None))
    else:
        print(got[0][0], got[1][0])


if __name__ == "__main__":
    main()
