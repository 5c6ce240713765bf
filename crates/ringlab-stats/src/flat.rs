//! The hot-path form of a [`LatencyRecorder`]: the same buckets, counted
//! in a flat array by a few inlined instructions, moved into the HDR
//! histogram once, when the run is over.
//!
//! Why by hand: `hdrhistogram`'s `record` is an out-of-line call that
//! reads the histogram's layout from its fields, bounds-checks, saturates
//! and updates min, max and the total on every value. A benchmark worker
//! at depth 1 records three latencies per request (lat, slat, clat), and
//! there that came to about 50 ns of a 4-6 us request on zram
//! (`perf record -e cpu-clock`, 2026-11-28): a percent of IOPS spent on
//! the instrument. Here the layout is constant (the recorder's one
//! configuration: 1 ns to [`LATENCY_NS_MAX_TRACKED`], 3 significant
//! figures), so the bucket of a value is a `lzcnt` and two shifts.
//!
//! [`FlatLatency::drain_into`] records every bucket's count at a value of
//! that bucket, so the HDR histogram ends up exactly as if each value had
//! been recorded into it (tested below), and adds the exact moments.

use crate::latency::{LatencyRecorder, LATENCY_NS_MAX_TRACKED};
use crate::result::DirectionRecorder;

/// HdrHistogram's layout for lowest value 1 and 3 significant figures:
/// sub-buckets of 2^11 (the first power of two at or above 2 * 10^3),
/// half of them per bucket after the first, unit 1 ns.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_HALF: u64 = 1 << SUB_BUCKET_HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_MAGNITUDE + 1)) - 1;
/// 64 - unit magnitude (0) - sub-bucket count magnitude (11).
const LEADING_ZERO_BASE: u32 = 64 - (SUB_BUCKET_HALF_MAGNITUDE + 1);

/// HdrHistogram's buckets double: its counts cover every value below the
/// first power of two above [`LATENCY_NS_MAX_TRACKED`], and it clamps
/// only the values past that (to [`LATENCY_NS_MAX_TRACKED`]).
const TRACKED_BITS: u32 = 64 - LATENCY_NS_MAX_TRACKED.leading_zeros();

/// HdrHistogram's index of `v` (its `index_for`) in this layout.
#[inline(always)]
fn index_of(v: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    let sub = v >> bucket;
    (((bucket as u64 + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF) as usize
}

/// The lowest value of the bucket at `index` (HdrHistogram's
/// `value_for`).
fn value_of(index: usize) -> u64 {
    let mut bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let mut sub = (index as u64 & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF;
    if bucket < 0 {
        sub -= SUB_BUCKET_HALF;
        bucket = 0;
    }
    sub << bucket
}

/// Latencies counted per HDR bucket, with exact moments; see the module
/// documentation.
#[derive(Clone, Debug)]
pub struct FlatLatency {
    /// One count per HDR bucket, as many as HdrHistogram has (about 34k;
    /// zeroed pages that are never touched cost no memory).
    counts: Vec<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
}

impl Default for FlatLatency {
    fn default() -> Self {
        Self::new()
    }
}

impl FlatLatency {
    pub fn new() -> FlatLatency {
        FlatLatency {
            counts: vec![0; index_of((1 << TRACKED_BITS) - 1) + 1],
            ..FlatLatency::empty_moments()
        }
    }

    /// Records the latency `ns` `n` times, as [`LatencyRecorder::record_n`]
    /// would: in the bucket HdrHistogram's saturating record puts it in
    /// (0 counts as 1 ns, a value past the counts as
    /// [`LATENCY_NS_MAX_TRACKED`]), with the moments of `ns` itself.
    #[inline(always)]
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let v = if ns >> TRACKED_BITS != 0 {
            LATENCY_NS_MAX_TRACKED
        } else {
            ns.max(1)
        };
        let i = index_of(v);
        // The index is below the length by construction (`v`'s bounds).
        if let Some(c) = self.counts.get_mut(i) {
            *c += n;
        }
        self.count += n;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        let wide = ns as u128 * n as u128;
        self.sum_ns += wide;
        self.sum_sq_ns += wide * ns as u128;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds everything recorded to `r` and starts empty again.
    pub fn drain_into(&mut self, r: &mut LatencyRecorder) {
        if self.count == 0 {
            return;
        }
        // Every bucket is looked at (about 34k, once a run): keeping the
        // lowest and highest bucket counted instead cost two compares and
        // stores on every value recorded.
        for (i, c) in self.counts.iter_mut().enumerate() {
            if *c > 0 {
                r.record_bucket(value_of(i), std::mem::take(c));
            }
        }
        r.add_moments(
            self.count,
            self.min_ns,
            self.max_ns,
            self.sum_ns,
            self.sum_sq_ns,
        );
        let counts = std::mem::take(&mut self.counts);
        *self = FlatLatency {
            counts,
            ..FlatLatency::empty_moments()
        };
    }

    /// Nothing recorded, and no counts array (the caller gives one).
    fn empty_moments() -> FlatLatency {
        FlatLatency {
            counts: Vec::new(),
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
        }
    }
}

/// The hot-path form of a [`DirectionRecorder`] fed by
/// [`DirectionRecorder::record_split`]'s arguments: lat, slat and clat as
/// [`FlatLatency`]s (slat and clat allocated when first recorded, as
/// there).
#[derive(Clone, Debug, Default)]
pub struct FlatDirection {
    ops: u64,
    bytes: u64,
    lat: Option<FlatLatency>,
    slat: Option<FlatLatency>,
    clat: Option<FlatLatency>,
}

impl FlatDirection {
    /// [`DirectionRecorder::record_split`].
    #[inline]
    pub fn record_split(&mut self, bytes: u64, slat_ns: Option<u64>, clat_ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.ops += n;
        self.bytes += bytes;
        self.lat
            .get_or_insert_with(FlatLatency::new)
            .record_n(slat_ns.unwrap_or(0) + clat_ns, n);
        if let Some(s) = slat_ns {
            self.slat
                .get_or_insert_with(FlatLatency::new)
                .record_n(s, n);
        }
        self.clat
            .get_or_insert_with(FlatLatency::new)
            .record_n(clat_ns, n);
    }

    /// Adds everything recorded to `d` and starts empty again (the
    /// allocations stay).
    pub fn drain_into(&mut self, d: &mut DirectionRecorder) {
        d.ops += std::mem::take(&mut self.ops);
        d.bytes += std::mem::take(&mut self.bytes);
        if let Some(f) = &mut self.lat {
            f.drain_into(&mut d.lat);
        }
        for (f, r) in [(&mut self.slat, &mut d.slat), (&mut self.clat, &mut d.clat)] {
            if let Some(f) = f.as_mut().filter(|f| f.count() > 0) {
                f.drain_into(r.get_or_insert_with(LatencyRecorder::new));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values across the whole range: every value up to 5000 (the first
    /// buckets, unit resolution), powers of two and their neighbours
    /// (bucket edges), a spread of others, and values past the top (up to
    /// 2^50 ns, 13 days: the sums of squares of 2^64 overflow, in
    /// `LatencyRecorder` as here).
    fn values() -> Vec<u64> {
        let mut v: Vec<u64> = (0..=5000).collect();
        for p in 0..=50 {
            let x = 1u64 << p;
            v.extend([x - 1, x, x.saturating_add(1)]);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push((x >> 14) >> (x % 50));
        }
        v.extend([LATENCY_NS_MAX_TRACKED, LATENCY_NS_MAX_TRACKED + 1, 1 << 50]);
        v
    }

    #[test]
    fn drained_equals_recorded_directly() {
        let (mut flat, mut direct) = (FlatLatency::new(), LatencyRecorder::new());
        for (k, v) in values().into_iter().enumerate() {
            // Some values 0 times: they move nothing, not even min or max.
            let n = (k % 4) as u64;
            flat.record_n(v, n);
            direct.record_n(v, n);
        }
        // Above every value, 0 times: the max stays.
        flat.record_n(1 << 51, 0);
        direct.record_n(1 << 51, 0);
        let mut drained = LatencyRecorder::new();
        flat.drain_into(&mut drained);
        assert_eq!(drained.count(), direct.count());
        assert_eq!(drained.summary(), direct.summary());
        assert_eq!(drained.recorded(), direct.recorded());
        assert_eq!(drained.spectrum(5), direct.spectrum(5));
        assert_eq!(drained.encode(), direct.encode());
    }

    #[test]
    fn bucket_index_is_hdrhistograms() {
        // Each value's bucket holds exactly the values HdrHistogram counts
        // as equivalent to it.
        let h =
            hdrhistogram::Histogram::<u64>::new_with_bounds(1, LATENCY_NS_MAX_TRACKED, 3).unwrap();
        assert_eq!(FlatLatency::new().counts.len(), h.distinct_values());
        for v in values()
            .into_iter()
            .filter(|&v| (1..=LATENCY_NS_MAX_TRACKED).contains(&v))
        {
            let i = index_of(v);
            assert_eq!(value_of(i), h.lowest_equivalent(v), "value {v}");
            assert_eq!(index_of(h.lowest_equivalent(v)), i, "value {v}");
            assert_eq!(index_of(h.highest_equivalent(v)), i, "value {v}");
        }
    }

    #[test]
    fn drains_add_up_and_start_empty() {
        let (mut flat, mut direct, mut drained) = (
            FlatLatency::new(),
            LatencyRecorder::new(),
            LatencyRecorder::new(),
        );
        for round in 0..3u64 {
            for v in [700, 5_000 + round, 90_000, 12_345_678] {
                flat.record_n(v, round + 1);
                direct.record_n(v, round + 1);
            }
            flat.drain_into(&mut drained);
            assert_eq!(flat.count(), 0);
            assert_eq!(drained.summary(), direct.summary());
            assert_eq!(drained.recorded(), direct.recorded());
        }
        // Nothing recorded: nothing added (no summary appears from zeros).
        let mut d = DirectionRecorder::default();
        FlatDirection::default().drain_into(&mut d);
        assert!(d.slat.is_none() && d.clat.is_none() && d.lat.summary().is_none());
        let mut empty = LatencyRecorder::new();
        FlatLatency::new().drain_into(&mut empty);
        assert!(empty.summary().is_none());
    }

    #[test]
    fn direction_drains_as_record_split() {
        let (mut flat, mut direct, mut drained) = (
            FlatDirection::default(),
            DirectionRecorder::default(),
            DirectionRecorder::default(),
        );
        for (k, (slat, clat)) in [(Some(300), 4_000), (None, 9_000), (Some(0), 1)]
            .into_iter()
            .cycle()
            .take(30)
            .enumerate()
        {
            let n = k as u64 % 4;
            flat.record_split(4096 * n, slat, clat, n);
            direct.record_split(4096 * n, slat, clat, n);
        }
        flat.drain_into(&mut drained);
        assert_eq!((drained.ops, drained.bytes), (direct.ops, direct.bytes));
        assert_eq!(drained.lat.recorded(), direct.lat.recorded());
        assert_eq!(drained.lat.summary(), direct.lat.summary());
        for (a, b) in [(&drained.slat, &direct.slat), (&drained.clat, &direct.clat)] {
            let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
            assert_eq!(a.summary(), b.summary());
            assert_eq!(a.recorded(), b.recorded());
        }
        // Without a submission stamp: no slat at all, as record_split.
        let (mut flat, mut d) = (FlatDirection::default(), DirectionRecorder::default());
        flat.record_split(4096, None, 5_000, 1);
        flat.drain_into(&mut d);
        assert!(d.slat.is_none());
        assert_eq!(d.clat.as_ref().map(LatencyRecorder::count), Some(1));
    }
}
