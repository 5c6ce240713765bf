//! The counters a running job publishes (its own file, so that the
//! progress line and fio's steady-state sampler read them without
//! importing the worker).

use std::sync::atomic::AtomicU64;

/// Counters a job publishes while it runs, read by the progress line. Padded
/// to its own cache line so jobs do not share one.
#[repr(align(128))]
#[derive(Default, Debug)]
pub struct JobProgress {
    pub ops: AtomicU64,
    /// Bytes completed; published only for a sampler that asked
    /// ([`crate::regulate::Regulation::live`]: fio's steady state).
    pub bytes: AtomicU64,
}
