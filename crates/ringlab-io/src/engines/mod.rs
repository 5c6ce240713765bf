//! Engines: the mechanics of one kernel interface each.
//!
//! The contract follows fio's `ioengine_ops`. The worker loop owns the
//! workload (offsets, directions, timestamps, verification, think time); an
//! engine only moves requests:
//!
//! - [`Engine::queue`] takes one request and answers [`QueueStatus::Completed`]
//!   (done already: a blocking engine), [`QueueStatus::Queued`] (accepted,
//!   completes later) or [`QueueStatus::Busy`] (no room: reap first).
//! - [`Engine::commit`] says the batch is complete: everything queued must
//!   reach the kernel no later than the next [`Engine::reap`] (an engine may
//!   fold the submission into the same system call that waits, as
//!   `io_uring_enter(to_submit, min_complete)` does).
//! - [`Engine::reap`] waits until at least `min` completions are available
//!   and appends every available one to `out`.
//!
//! Adding an engine: one file here, one variant in [`EngineKind`] and its
//! arm in [`EngineKind::run_job`].

mod sync;
mod uring;

pub use sync::SyncEngine;
pub use uring::{probe_io_uring, UringEngine};

use crate::buffers::BufferPool;
use crate::plan::IoPlan;
use crate::worker::{self, JobContext, JobOutcome};
use crate::workload::Dir;
use anyhow::Result;
use clap::ValueEnum;
use std::os::fd::RawFd;

/// One I/O handed to an engine.
#[derive(Clone, Copy, Debug)]
pub struct IoRequest {
    /// Slot of the request: its buffer, and the tag its completion carries.
    pub slot: u32,
    pub dir: Dir,
    pub offset: u64,
    pub len: u32,
    /// Start of the slot's buffer (`len` bytes, page aligned), owned by the
    /// worker and valid until the request completes.
    pub buf: *mut u8,
}

/// The answer of [`Engine::queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueStatus {
    /// Done: bytes transferred, or a negative errno.
    Completed(i64),
    Queued,
    Busy,
}

/// A finished request: its slot and its result (bytes, or a negative errno).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// What an engine needs to set itself up, on the job's own thread.
pub struct EngineSetup<'a> {
    pub fd: RawFd,
    pub plan: &'a IoPlan,
    pub buffers: &'a BufferPool,
}

pub trait Engine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus>;
    fn commit(&mut self) -> Result<()>;
    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()>;
}

/// The engines `--engine` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineKind {
    /// pread/pwrite, one I/O at a time per job.
    Sync,
    /// io_uring, batched submit and reap.
    #[value(alias = "io_uring")]
    Uring,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::Uring => "uring",
        }
    }

    /// Whether the engine keeps more than one I/O in flight.
    pub fn is_async(self) -> bool {
        !matches!(self, EngineKind::Sync)
    }

    /// Checks, before any file is laid out, that the interface is usable.
    pub fn probe(self, plan: &IoPlan) -> Result<()> {
        match self {
            EngineKind::Sync => Ok(()),
            EngineKind::Uring => probe_io_uring(plan.ring),
        }
    }

    /// Sets up the engine on the calling (job) thread, reports setup through
    /// `ready`, and runs the job's worker loop with it.
    pub fn run_job(self, ctx: JobContext, ready: impl FnOnce(bool) -> bool) -> Result<JobOutcome> {
        match self {
            EngineKind::Sync => worker::run_job(ctx, ready, |s| Ok(SyncEngine::new(s))),
            EngineKind::Uring => worker::run_job(ctx, ready, UringEngine::new),
        }
    }
}
