//! db_bench's output: the benchmark line and the latency histogram.

/// What db_bench printed for one benchmark.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BenchLine {
    pub name: String,
    pub micros_per_op: f64,
    pub ops_per_s: f64,
    pub seconds: f64,
    pub operations: u64,
    /// db_bench's MB/s (2^20 bytes of keys and values found per second);
    /// `None` where it prints none.
    pub mb_per_s: Option<f64>,
    /// `(found of asked found)`.
    pub found: Option<(u64, u64)>,
}

/// db_bench's `--histogram` of one benchmark, in microseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// What one sample is (`multiread`: one MultiGet batch; `read`).
    pub per: String,
    pub count: u64,
    pub average_us: f64,
    pub stdev_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// `(lower, upper, count)`: samples in `(lower, upper]`.
    pub buckets: Vec<(f64, f64, u64)>,
}

impl Histogram {
    /// The `p`th percentile in microseconds, interpolated inside its bucket
    /// and clamped to min and max, as RocksDB's HistogramStat computes the
    /// ones it prints (P50, P99); `None` for an empty histogram.
    pub fn percentile_us(&self, p: f64) -> Option<f64> {
        let total: u64 = self.buckets.iter().map(|b| b.2).sum();
        if total == 0 {
            return None;
        }
        let threshold = total as f64 * p / 100.0;
        let mut cumulative = 0u64;
        for &(lo, hi, n) in &self.buckets {
            let left = cumulative;
            cumulative += n;
            if cumulative as f64 >= threshold && n > 0 {
                let pos = (threshold - left as f64) / n as f64;
                let v = lo + (hi - lo) * pos;
                return Some(v.clamp(self.min_us, self.max_us));
            }
        }
        Some(self.max_us)
    }
}

/// The result line of benchmark `name` and the histogram printed after it.
pub fn parse(stdout: &str, name: &str) -> Option<(BenchLine, Option<Histogram>)> {
    let mut lines = stdout.lines();
    let bench = loop {
        let l = lines.next()?;
        if let Some(b) = parse_bench_line(l, name) {
            break b;
        }
    };
    let mut hist: Option<Histogram> = None;
    for l in lines {
        let t = l.trim();
        if let Some(per) = t
            .strip_prefix("Microseconds per ")
            .and_then(|r| r.strip_suffix(':'))
        {
            if hist.is_some() {
                break;
            }
            hist = Some(Histogram {
                per: per.to_string(),
                ..Default::default()
            });
            continue;
        }
        let Some(h) = hist.as_mut() else { continue };
        if t.starts_with("Count:") {
            h.count = field(t, "Count:").unwrap_or(0.0) as u64;
            h.average_us = field(t, "Average:").unwrap_or(0.0);
            h.stdev_us = field(t, "StdDev:").unwrap_or(0.0);
        } else if t.starts_with("Min:") {
            h.min_us = field(t, "Min:").unwrap_or(0.0);
            h.max_us = field(t, "Max:").unwrap_or(0.0);
        } else if let Some(b) = parse_bucket(t) {
            h.buckets.push(b);
        } else if t.contains(" : ") && t.contains("micros/op") {
            break; // the next benchmark
        }
    }
    Some((bench, hist))
}

/// The number after `key` in `text`.
fn field(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// `multireadrandom :       3.216 micros/op 310952 ops/sec 1.003 seconds
/// 311996 operations;   38.2 MB/s (201082 of 311996 found)`.
fn parse_bench_line(line: &str, name: &str) -> Option<BenchLine> {
    let (head, rest) = line.split_once(':')?;
    if head.trim() != name || !rest.contains("micros/op") {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let before = |unit: &str| -> Option<f64> {
        let i = words.iter().position(|w| w.trim_end_matches(';') == unit)?;
        words.get(i.checked_sub(1)?)?.parse().ok()
    };
    let found = rest.split_once('(').and_then(|(_, f)| {
        let mut it = f.split_whitespace();
        let a = it.next()?.parse().ok()?;
        (it.next()? == "of").then_some(())?;
        let b = it.next()?.parse().ok()?;
        Some((a, b))
    });
    Some(BenchLine {
        name: name.to_string(),
        micros_per_op: before("micros/op")?,
        ops_per_s: before("ops/sec")?,
        seconds: before("seconds")?,
        operations: before("operations")? as u64,
        mb_per_s: before("MB/s"),
        found,
    })
}

/// `(       2,       3 ]    19604  25.134%  25.134% #####`.
fn parse_bucket(t: &str) -> Option<(f64, f64, u64)> {
    let inner = t.strip_prefix('(')?;
    let (range, rest) = inner.split_once(']')?;
    let (lo, hi) = range.split_once(',')?;
    let n = rest.split_whitespace().next()?.parse().ok()?;
    Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "DB path: [/tmp/rdb]
multireadrandom :       3.216 micros/op 310952 ops/sec 1.003 seconds 311996 operations;   38.2 MB/s (201082 of 311996 found)
Microseconds per multiread:
Count: 77999 Average: 12.8636  StdDev: 299.50
Min: 3  Median: 3.3750  Max: 20118
Percentiles: P50: 3.38 P75: 3.75 P99: 7.44 P99.9: 2960.06 P99.99: 14200.10
------------------------------------------------------
(       2,       3 ]    19604  25.134%  25.134% #####
(       3,       4 ]    51720  66.309%  91.442% #############
(       4,       6 ]     5667   7.265%  98.708% #
(       6,      10 ]      635   0.814%  99.522%
(      10,      15 ]      373   0.478% 100.000%
";

    #[test]
    fn the_benchmark_line_and_histogram_are_read() {
        let (b, h) = parse(OUT, "multireadrandom").unwrap();
        assert_eq!(b.operations, 311_996);
        assert_eq!(b.ops_per_s, 310_952.0);
        assert_eq!(b.seconds, 1.003);
        assert_eq!(b.mb_per_s, Some(38.2));
        assert_eq!(b.found, Some((201_082, 311_996)));
        let h = h.unwrap();
        assert_eq!(h.per, "multiread");
        assert_eq!(h.count, 77_999);
        assert_eq!(h.min_us, 3.0);
        assert_eq!(h.max_us, 20_118.0);
        assert_eq!(h.buckets.len(), 5);
        assert_eq!(h.buckets[1], (3.0, 4.0, 51_720));
    }

    #[test]
    fn percentiles_interpolate_like_rocksdb() {
        let (_, h) = parse(OUT, "multireadrandom").unwrap();
        let h = h.unwrap();
        // RocksDB printed P50: 3.38 and P99: 7.44 for these buckets.
        assert!((h.percentile_us(50.0).unwrap() - 3.38).abs() < 0.01);
        assert!((h.percentile_us(99.0).unwrap() - 7.44).abs() < 0.02);
        let p95 = h.percentile_us(95.0).unwrap();
        assert!(p95 > 4.0 && p95 < 6.0, "{p95}");
    }

    #[test]
    fn another_benchmark_or_no_line_is_none() {
        assert!(parse(OUT, "readrandom").is_none());
        assert!(parse("", "multireadrandom").is_none());
    }
}
