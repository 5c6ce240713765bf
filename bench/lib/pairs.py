"""How sure a bench script is of a ratio between two tools.

Each repeat of a bench script runs both tools seconds apart, so the ratio
of the two runs of one repeat (a pair) cancels the host's slow drift. The
scripts report the median of those pairwise ratios with a 95%
distribution-free interval for it (order statistics of the binomial: no
assumption about how the host's noise is shaped), and judge a bar met or
missed only when that whole interval is on one side of it.
"""
from math import comb
import statistics


# Issue 25's bars: ringlab as typed at least 0.98 of --no-kstat; at least
# 0.97 of t/io_uring at zram depth 1 and 32 and 1.0 with --complete-batch 8;
# `ringlab http --io uring` at least 1.33 of wrk per client CPU-second.
EVIDENCE_BAR = 0.98
PEER_BARS = {"qd1": 0.97, "qd32": 0.97, "qd8cb8": 1.0}
HTTP_BAR = 1.33


# kstat-overhead's I/O rows: the part of the title after the target, and
# t/io_uring's batching flags. A "nop-" row is the same without a device
# (ringlab --rw nop against t/io_uring -N1): what each tool's own loop costs
# per request, with no bar.
IO_ROWS = {
    "qd1": ("qd1", "-d1 -s1 -c1"),
    "qd32": ("qd32", "-d32 -s32 -c1"),
    "qd8cb8": ("qd8 --complete-batch 8", "-d8 -s8 -c8"),
}


def row_title(row):
    """The printed name of a kstat-overhead row (cN: HTTP at N connections,
    nop-ROW: ROW's batching on IORING_OP_NOP)."""
    if row.startswith("c"):
        return f"http --io uring -t1 -c{row[1:]}"
    if row.startswith("nop-"):
        return f"io_uring NOP {IO_ROWS[row[4:]][0]}"
    return f"zram randread 4k {IO_ROWS[row][0]}"


def peer_bar(row):
    """The bar against the peer of a kstat-overhead row (cN: HTTP); None
    for a diagnostic row (nop-*)."""
    if row.startswith("c"):
        return HTTP_BAR
    return PEER_BARS.get(row)


def median_ci(xs):
    """95% interval (lo, hi) for the median of the sorted list xs: the order
    statistics x(k), x(n-k+1) with P(Binomial(n, 1/2) < k) <= 2.5%. None
    below 6 values, where no such interval exists."""
    n = len(xs)
    k, below = 0, 0.0
    while k < n:
        nxt = below + comb(n, k) / 2**n
        if nxt > 0.025:
            break
        below, k = nxt, k + 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]


def describe(pairs, digits=3):
    """'median [lo-hi] (min-max)' of the pairwise ratios, '[n<6]' when too
    few for an interval; pairs need not be sorted."""
    xs = sorted(pairs)
    if not xs:
        return "no pairs"
    f = f"{{:.{digits}f}}"
    ci = median_ci(xs)
    band = f"[{f.format(ci[0])}-{f.format(ci[1])}]" if ci else "[n<6]"
    return f"{f.format(statistics.median(xs))} {band} ({f.format(xs[0])}-{f.format(xs[-1])})"


def verdict(pairs, bar):
    """Against a bar of at least `bar`: met, missed or undecided (no bar:
    a diagnostic row)."""
    if bar is None:
        return "no bar (a diagnostic row)"
    xs = sorted(pairs)
    ci = median_ci(xs) if xs else None
    if ci is None:
        return f">= {bar}: too few pairs for an interval"
    if ci[0] >= bar:
        return f">= {bar}: met"
    if ci[1] < bar:
        return f">= {bar}: missed"
    return f">= {bar}: undecided (the interval spans it)"


def spearman(xs, ys):
    """Spearman's rank correlation of two equal-length lists (ties get
    their mean rank), or None with fewer than 3 points or a constant list."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / (sxx * syy) ** 0.5


if __name__ == "__main__":
    # Self-check: the interval's order statistics for a few sizes.
    for n, want in ((5, None), (6, (1, 6)), (10, (2, 9)), (20, (6, 15))):
        got = median_ci(list(range(1, n + 1)))
        assert got == want, (n, got, want)
    print("ok")

