//! ringlab's lab: sweep plans (`plan`), the results store (`store`),
//! running a sweep (`sweep`), reports ([`report`]: figures in `metric`,
//! plots in `plot`) and comparisons ([`compare`]).
//!
//! Files depend one way: `metric` <- `plot` <- `report`; `plan` <- `store`
//! <- `sweep`; every input file is read through `input`. Public: what the
//! binary uses, and the results store (`store`), which other producers of
//! results (rocksdb, reproduce) write.
#![warn(unreachable_pub)]

pub mod advise;
pub mod compare;
mod input;
pub mod merge;
mod metric;
mod plan;
mod plot;
pub mod report;
pub mod reproduce;
pub mod store;
mod sweep;

pub use plan::{load_plan, Plan};
pub use sweep::{dry_run, run_sweep, Interrupted, SweepOptions, SweepSummary};
