//! ringlab's lab: sweep plans ([`plan`]), the results store ([`store`]),
//! running a sweep ([`sweep`]), reports ([`report`]) and comparisons
//! ([`compare`]).

pub mod plan;

pub use plan::{load_plan, parse_plan, Plan, PlannedRun, Scalar};
