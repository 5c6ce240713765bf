//! Statistics, units and the one result schema shared by every ringlab command.
//!
//! - [`units`]: parsing sizes and durations the way fio users write them, and
//!   formatting numbers for people.
//! - [`latency`]: the per-thread latency recorder (HDR histogram plus exact
//!   moments) and its summary.
//! - [`spread`]: min, median and max over repeats.
//! - [`effect`]: two sets of repeats compared: a ratio with its bootstrap
//!   interval, a Mann-Whitney p-value, outliers, runs too small to count.
//! - [`result`]: `RunResult`, serialised as JSON following
//!   `schema/result.schema.json`.

pub mod effect;
pub mod flat;
pub mod latency;
pub mod result;
pub mod spread;
pub mod units;

pub use flat::{FlatDirection, FlatLatency};
pub use latency::{
    EncodedLatency, HistogramError, LatencyRecorder, LatencySummary, HISTOGRAM_ENCODING,
};
pub use result::*;
