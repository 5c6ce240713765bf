//! The `config` of a `ringlab io` result, typed: written from the plan,
//! read back by the text report. The keys are the long flag names, as
//! `sweep`, `report` and `compare` expect; sizes in bytes, durations in
//! seconds.

use crate::engine_kind::EngineKind;
use crate::workload::Rw;
use ringlab_core::uring::UringOptions;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct IoConfig {
    pub target: Option<String>,
    pub engine: EngineKind,
    pub rw: Rw,
    pub rwmixread: u32,
    /// The smallest block size (the only one without --bsrange/--bssplit).
    pub bs: u64,
    /// --bsrange as used, in fio's syntax (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bsrange: Option<String>,
    /// --bssplit as used, in fio's syntax (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<String>,
    /// --end-fsync (absent: not given).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end_fsync: bool,
    pub iodepth: u32,
    pub numjobs: u32,
    /// Seconds; `None` with only --io-size.
    pub runtime: Option<f64>,
    /// Bytes per job.
    pub io_size: Option<u64>,
    pub size: Option<u64>,
    /// --ramp-time in seconds (absent or null: none).
    #[serde(default)]
    pub ramp_time: Option<f64>,
    /// The pace of each job, [reads, writes] per second, from --rate-iops
    /// or --rate (null: unpaced).
    #[serde(default)]
    pub rate_iops: [Option<f64>; 2],
    #[serde(default)]
    pub fsync: u64,
    #[serde(default)]
    pub fdatasync: u64,
    /// I/Os per job, times --loops (as --io-size is).
    #[serde(default)]
    pub number_ios: Option<u64>,
    /// --offset in bytes.
    #[serde(default)]
    pub offset: u64,
    /// --status-interval in seconds (null: none).
    #[serde(default)]
    pub status_interval: Option<f64>,
    pub direct: bool,
    /// --invalidate: cached pages dropped before the run (absent in
    /// results made before it existed: they always dropped them).
    #[serde(default = "yes")]
    pub invalidate: bool,
    pub cpus: Vec<u32>,
    pub thinkcycles: u64,
    /// --gtod-reduce: no I/O was timed, so the result has no latency
    /// (absent: every I/O was timed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gtod_reduce: bool,
    /// The clock that timed each I/O: `tsc` (the CPU's time stamp counter)
    /// or `clock_gettime` (absent in results made before it was chosen:
    /// clock_gettime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
    /// --thinktime, its spun part and --thinktime-blocks (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime_spin_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinktime_blocks: Option<u64>,
    pub seed: u64,
    pub verify: bool,
    pub keep: bool,
    pub directory: String,
    pub allow_destructive: bool,
    pub no_kstat: bool,
    /// --evidence; `default` in results made before it existed.
    #[serde(default)]
    pub evidence: ringlab_kstat::Level,
    /// The io_uring knobs, one key per flag (see the knob table).
    #[serde(flatten)]
    pub uring: UringOptions,
    /// Which of those knobs ringlab chose by default (the default ring),
    /// rather than the command line; empty in results made before.
    #[serde(default)]
    pub default_knobs: Vec<String>,
}

fn yes() -> bool {
    true
}

impl IoConfig {
    /// As the `config` object of a result.
    pub fn to_map(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(m)) => m,
            // A struct of plain fields always serializes to an object.
            _ => Map::new(),
        }
    }

    /// Reads a result's `config` back; fails with the key that does not fit.
    pub fn from_map(c: &Map<String, Value>) -> serde_json::Result<IoConfig> {
        serde_json::from_value(Value::Object(c.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringlab_stats::RunResult;

    /// A result written by ringlab before the config was typed (and
    /// before --submit-all, --no-sqarray and --hybrid-iopoll existed).
    const V1: &str = include_str!("../../ringlab/tests/fixtures/result-v1.json");

    #[test]
    fn a_result_from_before_the_typed_config_reads_and_renders() {
        let r: RunResult = serde_json::from_str(V1).unwrap();
        let c = IoConfig::from_map(&r.config).unwrap();
        assert_eq!(c.engine, EngineKind::Uring);
        assert!(c.uring.coop_taskrun && !c.uring.no_sqarray && !c.uring.hybrid_iopoll);
        let text = crate::text::render(&r);
        assert!(text.contains("io_uring: --coop-taskrun"), "{text}");
        assert!(!text.contains('?'), "{text}");
        // Written back, it has every key it had, and the new knobs.
        let back = c.to_map();
        for (k, v) in &r.config {
            assert_eq!(back.get(k), Some(v), "{k}");
        }
        assert_eq!(back["submit-all"], false);
        assert!(c.default_knobs.is_empty());
    }

    #[test]
    fn a_config_that_does_not_fit_is_reported_not_guessed() {
        let mut r: RunResult = serde_json::from_str(V1).unwrap();
        r.config.insert("iodepth".into(), "deep".into());
        let err = IoConfig::from_map(&r.config).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
        assert!(crate::text::render(&r).contains("config unreadable"));
    }
}
