//! Latency recording: an HDR histogram for percentiles plus exact moments.
//!
//! Each worker thread owns its recorders (no sharing, no atomics on the hot
//! path); they are merged once, after the run.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram resolves: one hour. Larger values are
/// clamped into the top bucket for percentiles; min, max and mean stay exact.
pub const LATENCY_NS_MAX_TRACKED: u64 = 3_600_000_000_000;
/// Significant decimal digits of the histogram (0.1% relative error).
const SIGFIGS: u8 = 3;

#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, LATENCY_NS_MAX_TRACKED, SIGFIGS)
            .expect("static histogram bounds are valid");
        LatencyRecorder {
            hist,
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
        }
    }

    /// Records one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        self.count += 1;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128;
        self.sum_sq_ns += (ns as u128) * (ns as u128);
    }

    /// Records the same latency `n` times: the same histogram, count and
    /// sums as `n` calls of [`LatencyRecorder::record`], at the cost of one.
    #[inline]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.hist.saturating_record_n(ns.max(1), n);
        self.count += n;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns as u128 * n as u128;
        self.sum_sq_ns += (ns as u128) * (ns as u128) * n as u128;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// [`crate::FlatLatency::drain_into`]: `n` values of the bucket whose
    /// lowest value is `v`, into the histogram only; the moments come
    /// apart ([`LatencyRecorder::add_moments`]).
    pub(crate) fn record_bucket(&mut self, v: u64, n: u64) {
        self.hist.saturating_record_n(v, n);
    }

    /// [`crate::FlatLatency::drain_into`]: the exact moments of values
    /// whose buckets were added with [`LatencyRecorder::record_bucket`].
    pub(crate) fn add_moments(&mut self, n: u64, min: u64, max: u64, sum: u128, sum_sq: u128) {
        self.count += n;
        self.min_ns = self.min_ns.min(min);
        self.max_ns = self.max_ns.max(max);
        self.sum_ns += sum;
        self.sum_sq_ns += sum_sq;
    }

    /// Adds another recorder's samples to this one.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        self.hist
            .add(&other.hist)
            .expect("histograms with identical bounds always merge");
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
    }

    /// Percentage of samples within `[lo, hi]` nanoseconds (wrk's
    /// "+/- Stdev" column), to the histogram's precision; `None` if empty.
    pub fn pct_between(&self, lo: f64, hi: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let within: u64 = self
            .hist
            .iter_recorded()
            .filter(|v| {
                let x = v.value_iterated_to() as f64;
                x >= lo && x <= hi
            })
            .map(|v| v.count_at_value())
            .sum();
        Some(within as f64 * 100.0 / self.count as f64)
    }

    /// The value at quantile `q` (0..=1), clamped to the exact min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        Some(
            self.hist
                .value_at_quantile(q)
                .min(self.max_ns)
                .max(self.min_ns),
        )
    }

    /// Every distinct recorded value (to the histogram's precision) with
    /// its count, lowest first.
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        self.hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect()
    }

    /// HdrHistogram's percentile spectrum (its `percentiles_print`, as wrk2
    /// prints it): `(value, quantile, count up to it)` with
    /// `ticks_per_half_distance` steps per halving of the distance to 100%,
    /// ending at the maximum.
    pub fn spectrum(&self, ticks_per_half_distance: u32) -> Vec<(u64, f64, u64)> {
        if self.count == 0 {
            return Vec::new();
        }
        self.hist
            .iter_quantiles(ticks_per_half_distance)
            .map(|v| {
                (
                    self.hist.highest_equivalent(v.value_iterated_to()),
                    v.quantile_iterated_to(),
                    v.count_since_last_iteration(),
                )
            })
            .scan(0u64, |total, (v, q, n)| {
                *total += n;
                Some((v, q, *total))
            })
            .collect()
    }

    /// The histogram's bucket and sub-bucket counts (the spectrum's footer).
    pub fn buckets(&self) -> (u32, u32) {
        (
            u32::from(self.hist.buckets()),
            2 * self.hist.distinct_values() as u32 / (u32::from(self.hist.buckets()) + 1),
        )
    }

    /// The summary, or `None` when nothing was recorded (a figure that was
    /// not measured is absent, never zero).
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.count == 0 {
            return None;
        }
        let n = self.count as f64;
        let mean = self.sum_ns as f64 / n;
        // Population variance from exact sums; clamp rounding noise below 0.
        let variance = (self.sum_sq_ns as f64 / n - mean * mean).max(0.0);
        let pct = |q: f64| {
            self.hist
                .value_at_quantile(q)
                .min(self.max_ns)
                .max(self.min_ns)
        };
        Some(LatencySummary {
            min: self.min_ns,
            mean,
            stdev: variance.sqrt(),
            p50: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
            p99_9: pct(0.999),
            p99_99: pct(0.9999),
            max: self.max_ns,
        })
    }
}

/// How [`EncodedLatency::hdr`] is encoded, as results name it.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// A whole latency recorder in a result, so that results can be merged
/// with exact counts and percentiles recomputed to the histogram's
/// precision: HdrHistogram's standard V2 encoding with DEFLATE, in base64
/// (what HdrHistogram's Java, C and Go libraries read), plus the exact
/// moments the histogram only approximates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncodedLatency {
    /// Values recorded (equal to the histogram's total count).
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Exact sum and sum of squares of the values, in decimal: they outgrow
    /// 64 bits (and JSON numbers) in long runs.
    pub sum_ns: String,
    pub sum_sq_ns: String,
    /// The histogram: HdrHistogram V2 + DEFLATE, base64 (standard alphabet).
    pub hdr: String,
}

/// An encoded histogram that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    #[error("histogram is not valid base64: {0}")]
    Base64(String),
    #[error("histogram is not HdrHistogram V2 (+DEFLATE): {0}")]
    Hdr(String),
    #[error("histogram does not fit ringlab's range (1 ns to 1 h, 3 digits): {0}")]
    Range(String),
    #[error("histogram holds {hist} values but its count says {count}: the file was altered")]
    Count { hist: u64, count: u64 },
    #[error("{field} {value:?} is not a decimal number")]
    Sum { field: &'static str, value: String },
}

impl LatencyRecorder {
    /// The recorder as it goes into a result ([`EncodedLatency`]).
    pub fn encode(&self) -> EncodedLatency {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hist, &mut bytes)
            // Into a Vec it fails only for a histogram larger than the
            // format's 32-bit length, which our fixed bounds cannot make.
            .expect("a histogram of ringlab's bounds always serialises");
        EncodedLatency {
            count: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
            sum_ns: self.sum_ns.to_string(),
            sum_sq_ns: self.sum_sq_ns.to_string(),
            hdr: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// A recorder read back from a result; checked against its count.
    pub fn decode(e: &EncodedLatency) -> Result<LatencyRecorder, HistogramError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(e.hdr.trim())
            .map_err(|x| HistogramError::Base64(x.to_string()))?;
        let read: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|x| HistogramError::Hdr(format!("{x:?}")))?;
        let mut r = LatencyRecorder::new();
        r.hist
            .add(&read)
            .map_err(|x| HistogramError::Range(format!("{x:?}")))?;
        if r.hist.len() != e.count {
            return Err(HistogramError::Count {
                hist: r.hist.len(),
                count: e.count,
            });
        }
        let sum = |field: &'static str, v: &str| {
            v.parse::<u128>().map_err(|_| HistogramError::Sum {
                field,
                value: v.to_string(),
            })
        };
        r.count = e.count;
        if e.count > 0 {
            r.min_ns = e.min_ns;
            r.max_ns = e.max_ns;
        }
        r.sum_ns = sum("sum_ns", &e.sum_ns)?;
        r.sum_sq_ns = sum("sum_sq_ns", &e.sum_sq_ns)?;
        Ok(r)
    }
}

/// Latency figures in nanoseconds (the unit is in the enclosing field name,
/// `lat_ns`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySummary {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub p99_99: u64,
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_recorder_has_no_summary() {
        assert!(LatencyRecorder::new().summary().is_none());
    }

    #[test]
    fn exact_moments_and_percentiles() {
        let mut r = LatencyRecorder::new();
        for v in 1..=1000u64 {
            r.record(v * 1000); // 1us .. 1ms
        }
        let s = r.summary().unwrap();
        assert_eq!(s.min, 1000);
        assert_eq!(s.max, 1_000_000);
        assert!((s.mean - 500_500.0).abs() < 1e-6);
        // stdev of 1..=1000 (population) is 288.67..., times 1000.
        assert!((s.stdev - 288_674.990).abs() < 1.0, "{}", s.stdev);
        // HDR with 3 significant figures: within 0.1%.
        let close = |got: u64, want: f64| ((got as f64 - want) / want).abs() < 0.002;
        assert!(close(s.p50, 500_000.0), "{}", s.p50);
        assert!(close(s.p90, 900_000.0), "{}", s.p90);
        assert!(close(s.p99, 990_000.0), "{}", s.p99);
        assert!(close(s.p99_9, 999_000.0), "{}", s.p99_9);
        assert_eq!(s.p99_99, 1_000_000);
    }

    #[test]
    fn record_n_is_n_records() {
        let (mut one, mut many) = (LatencyRecorder::new(), LatencyRecorder::new());
        for (v, n) in [(700u64, 3u64), (5_000, 1), (700, 0), (90_000, 32)] {
            for _ in 0..n {
                one.record(v);
            }
            many.record_n(v, n);
        }
        assert_eq!(one.count(), 36);
        assert_eq!(many.count(), 36);
        assert_eq!(one.summary(), many.summary());
        assert_eq!(one.recorded(), many.recorded());
    }

    #[test]
    fn constant_samples_have_zero_stdev() {
        let mut r = LatencyRecorder::new();
        for _ in 0..100 {
            r.record(12_345);
        }
        let s = r.summary().unwrap();
        assert_eq!(s.stdev, 0.0);
        assert_eq!(s.p50, 12_345);
        assert_eq!(s.min, 12_345);
        assert_eq!(s.max, 12_345);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        let mut all = LatencyRecorder::new();
        for v in 0..500u64 {
            let x = 100 + v * 37 % 9000;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a.summary(), all.summary());
        assert_eq!(a.count(), 500);
    }

    #[test]
    fn encoded_recorder_reads_back_the_same() {
        let mut r = LatencyRecorder::new();
        for v in 0..10_000u64 {
            r.record(500 + v * v % 7_000_000);
        }
        r.record(LATENCY_NS_MAX_TRACKED * 2);
        let e = r.encode();
        let back = LatencyRecorder::decode(&e).unwrap();
        assert_eq!(back.summary(), r.summary());
        assert_eq!(back.recorded(), r.recorded());
        // An empty recorder too.
        let empty = LatencyRecorder::decode(&LatencyRecorder::new().encode()).unwrap();
        assert!(empty.summary().is_none());
        // Altered counts and garbage are refused.
        let mut bad = e.clone();
        bad.count += 1;
        assert!(matches!(
            LatencyRecorder::decode(&bad),
            Err(HistogramError::Count { .. })
        ));
        bad = e.clone();
        bad.hdr = "bm90IGEgaGlzdG9ncmFt".into();
        assert!(LatencyRecorder::decode(&bad).is_err());
        bad = e;
        bad.hdr.truncate(bad.hdr.len() / 2);
        assert!(LatencyRecorder::decode(&bad).is_err());
    }

    #[test]
    fn huge_values_clamp_percentiles_but_keep_max() {
        let mut r = LatencyRecorder::new();
        r.record(LATENCY_NS_MAX_TRACKED * 10);
        let s = r.summary().unwrap();
        assert_eq!(s.max, LATENCY_NS_MAX_TRACKED * 10);
        assert!(s.p50 <= s.max);
    }
}
