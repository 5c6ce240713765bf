//! ringlab's lab: sweep plans ([`plan`]), the results store ([`store`]),
//! running a sweep ([`sweep`]), reports ([`report`], plots in [`plot`]) and
//! comparisons ([`compare`]).

pub mod compare;
pub mod plan;
pub mod plot;
pub mod report;
pub mod reproduce;
pub mod store;
pub mod sweep;

pub use plan::{load_plan, parse_plan, Plan, PlannedRun, Scalar};
pub use sweep::{dry_run, run_sweep, Interrupted, SweepOptions, SweepSummary};
