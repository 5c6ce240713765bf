//! The statistics objects `done(summary, latency, requests)` receives:
//! `min`, `max`, `mean`, `stdev`, `:percentile(p)`, `(i)` and `#`, in
//! wrk's units (latency in microseconds, rate in requests per second).

use mlua::{MetaMethod, UserData, UserDataFields, UserDataMethods};
use ringlab_stats::LatencyRecorder;

/// A recorder as `done()` sees it; values are divided by `scale`.
pub struct StatsUd {
    rec: LatencyRecorder,
    scale: f64,
    recorded: Vec<(u64, u64)>,
}

impl StatsUd {
    /// Latency recorded in nanoseconds, shown in microseconds (wrk).
    pub fn latency(rec: &LatencyRecorder) -> StatsUd {
        StatsUd {
            recorded: rec.recorded(),
            rec: rec.clone(),
            scale: 1000.0,
        }
    }

    /// wrk's per-thread request rate samples (requests per second).
    pub fn rates(samples: &[f64]) -> StatsUd {
        let mut rec = LatencyRecorder::new();
        for &s in samples {
            rec.record(s.round().max(0.0) as u64);
        }
        StatsUd {
            recorded: rec.recorded(),
            rec,
            scale: 1.0,
        }
    }

    fn field(&self, f: impl Fn(&ringlab_stats::LatencySummary) -> f64) -> f64 {
        self.rec.summary().map_or(0.0, |s| f(&s) / self.scale)
    }

    /// `percentile(p)`: the value at `p` percent, an integer as in wrk.
    pub fn percentile(&self, p: f64) -> u64 {
        self.rec
            .quantile((p / 100.0).clamp(0.0, 1.0))
            .map_or(0, |v| (v as f64 / self.scale) as u64)
    }
}

impl UserData for StatsUd {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("min", |_, s| Ok(s.field(|l| l.min as f64)));
        f.add_field_method_get("max", |_, s| Ok(s.field(|l| l.max as f64)));
        f.add_field_method_get("mean", |_, s| Ok(s.field(|l| l.mean)));
        f.add_field_method_get("stdev", |_, s| Ok(s.field(|l| l.stdev)));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("percentile", |_, s, p: f64| Ok(s.percentile(p)));
        // latency(i): the i-th distinct value (1-based) and its count.
        m.add_meta_method(MetaMethod::Call, |_, s, i: usize| {
            Ok(match i.checked_sub(1).and_then(|i| s.recorded.get(i)) {
                Some(&(v, n)) => ((v as f64 / s.scale) as u64, n),
                None => (0, 0),
            })
        });
        m.add_meta_method(MetaMethod::Len, |_, s, ()| Ok(s.recorded.len()));
    }
}
