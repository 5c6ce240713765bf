//! ringlab's storage benchmark.
//!
//! Data flows one way: [`IoArgs`] (flags) → [`IoPlan`] (validated) →
//! [`run::run_io`] (target, threads, pinning, runtime) → [`worker`] (the one
//! loop that owns offsets, timestamps, verification and think time) →
//! [`engines`] (the mechanics of one interface each) → `RunResult`.

pub mod blkid;
pub mod buffers;
pub mod config;
pub mod continue_on_error;
pub mod cpuio;
pub mod engine_kind;
pub mod engines;
pub mod features;
pub mod fileops;
pub mod fill_device;
pub mod fio;
pub mod fio_buffers;
pub mod fio_prio;
pub mod fio_verify;
pub mod job_error;
pub mod knobs;
pub mod lat_target;
pub mod layout;
pub mod named;
pub mod plan;
pub mod progress;
pub mod regulate;
pub mod run;
pub mod steady;
pub mod target;
pub mod text;
pub mod trim;
pub mod verify;
pub mod worker;
pub mod workload;
pub mod zones;

pub use plan::{IoArgs, IoPlan};
pub use ringlab_core::UsageError;
