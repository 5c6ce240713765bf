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
//! arm in `run_job` of the runner (`run.rs`), which sets the engine up on
//! the job thread.
//!
//! The file engines (filecreate, filestat, filedelete) share their walk
//! over a job's files, crate::fileops: each engine file holds only its
//! operation on a file.

mod cpuio;
mod falloc;
mod filecreate;
mod filedelete;
mod fileop;
mod filestat;
mod ftruncate;
mod libaio;
mod null;
mod posixaio;
mod sync;
mod uring;

pub use crate::engine_kind::EngineKind;
pub use cpuio::CpuioEngine;
pub use falloc::FallocEngine;
pub use filecreate::FilecreateEngine;
pub use filedelete::FiledeleteEngine;
pub use filestat::FilestatEngine;
pub use ftruncate::FtruncateEngine;
pub use libaio::LibaioEngine;
pub use null::NullEngine;
pub use posixaio::PosixAioEngine;
pub use sync::SyncEngine;
pub use uring::{probe_io_uring, UringEngine, UringShared};

use crate::buffers::BufferPool;
use crate::plan::IoPlan;
use crate::workload::Dir;
use anyhow::Result;
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
    /// The request's I/O priority (class << 13 | level; 0: the thread's),
    /// fio's prioclass/prio/cmdprio_*: io_uring and libaio carry it.
    pub ioprio: u16,
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
    /// When another thread (`--completion-thread`) saw the completion
    /// (CLOCK_MONOTONIC nanoseconds, [`ringlab_core::clock::mono_ns`]);
    /// `None`: when the job thread reaps it.
    pub seen: Option<u64>,
}

impl Completion {
    pub fn new(slot: u32, result: i64) -> Completion {
        Completion {
            slot,
            result,
            seen: None,
        }
    }
}

/// State an engine shares between the jobs of one run (set up before the
/// job threads, dropped after them).
#[derive(Default)]
pub struct RunShared {
    pub uring: Option<UringShared>,
}

/// What an engine needs to set itself up, on the job's own thread.
pub struct EngineSetup<'a> {
    pub fd: RawFd,
    pub plan: &'a IoPlan,
    pub buffers: &'a BufferPool,
    pub shared: &'a RunShared,
}

pub trait Engine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus>;
    fn commit(&mut self) -> Result<()>;
    fn reap(&mut self, min: u32, out: &mut Vec<Completion>) -> Result<()>;
    /// fio's submit counts of the submissions (system calls, or hand-overs
    /// to an SQPOLL poller) this engine made since the last call, by
    /// [`ringlab_stats::IoDepths::batch`]; reset by the call. `None`: the
    /// engine keeps none, each loop turn's batch is one submission (or each
    /// request one where it is submitted on its own) and the worker counts.
    fn take_submit_counts(&mut self) -> Option<[u64; 7]> {
        None
    }
    /// The think time owed after the last request, when the engine sets it
    /// (fio's cpuio in qsort mode: from the time its burn took); `None`:
    /// --thinktime's. Asked only when a think time is due.
    fn think_ns(&mut self) -> Option<u64> {
        None
    }
}

impl EngineKind {
    /// Checks, before any file is laid out, that the interface is usable.
    pub fn probe(self, plan: &IoPlan) -> Result<()> {
        match self {
            EngineKind::Sync
            | EngineKind::Posixaio
            | EngineKind::Null
            | EngineKind::Falloc
            | EngineKind::Cpuio
            | EngineKind::Filecreate
            | EngineKind::Filestat
            | EngineKind::Filedelete
            | EngineKind::Ftruncate => Ok(()),
            EngineKind::Uring => probe_io_uring(plan),
            EngineKind::Libaio => libaio::probe(plan),
        }
    }

    /// Sets up what the jobs of a run share (the SQPOLL thread of
    /// --attach-wq), after the probe and before the job threads.
    pub fn prepare(self, plan: &IoPlan) -> Result<RunShared> {
        Ok(RunShared {
            uring: match self {
                EngineKind::Uring => uring::prepare_shared(plan)?,
                _ => None,
            },
        })
    }
}

/// What to add to a failed request's error message, for the errors whose
/// usual cause is a knob or the device.
pub fn errno_hint(plan: &IoPlan, errno: i32) -> String {
    match errno {
        libc::EOPNOTSUPP if plan.uring.iopoll => {
            " (IOPOLL: the device has no poll queues, or the file system cannot poll; \
             drop --iopoll or use a device with poll queues, e.g. nvme.poll_queues=N)"
                .to_string()
        }
        libc::EINVAL if plan.direct => " (O_DIRECT: --bs and the buffers must be aligned to \
             the logical block size of the device, and the file system must support O_DIRECT)"
            .to_string(),
        libc::EINVAL if plan.engine == EngineKind::Ftruncate => {
            " (fio's ftruncate engine truncates on writes only and answers a read or a trim with EINVAL, as fio's does: use --rw write or randwrite)"
                .to_string()
        }
        libc::EAGAIN if plan.engine == EngineKind::Libaio => {
            " (Linux AIO: the system-wide limit fs.aio-max-nr is used up; raise it or lower --iodepth)"
                .to_string()
        }
        // io_uring cancels a request when it cannot start the io-wq worker
        // thread that would run it (a pids cgroup limit, RLIMIT_NPROC).
        libc::ECANCELED if plan.engine == EngineKind::Uring => format!(
            " (io_uring could not start a worker thread for this request: {}; raise the limit, or lower --numjobs and --iodepth, or use --engine sync)",
            ringlab_core::limits::thread_limits()
        ),
        libc::EAGAIN => format!(
            " (no new thread or process may start: {}; raise the limit or lower --numjobs and --iodepth)",
            ringlab_core::limits::thread_limits()
        ),
        _ => String::new(),
    }
}
