//! The engines `--engine` names, at the bottom of the crate so that plans,
//! knobs and engines can all name one without importing each other.

use clap::ValueEnum;

/// The engines `--engine` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// pread/pwrite, one I/O at a time per job.
    Sync,
    /// io_uring, batched submit and reap, every knob of the kernel.
    #[value(alias = "io_uring")]
    Uring,
    /// Linux AIO (io_submit/io_getevents); O_DIRECT only.
    Libaio,
    /// glibc POSIX AIO (aio_read/aio_write/aio_suspend), a thread pool in
    /// user space.
    Posixaio,
    /// No I/O at all: every request completes at once, no system call, no
    /// file (fio's null engine: the cost of the loop itself).
    Null,
    /// fio's falloc: each request is one fallocate(2) (a write allocates,
    /// a read allocates keeping the length, a trim punches a hole).
    Falloc,
    /// fio's cpuio: no I/O, each request burns the CPU (--cpuload,
    /// --cpumode, --cpuchunks).
    Cpuio,
}

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::Uring => "uring",
            EngineKind::Libaio => "libaio",
            EngineKind::Posixaio => "posixaio",
            EngineKind::Null => "null",
            EngineKind::Falloc => "falloc",
            EngineKind::Cpuio => "cpuio",
        }
    }

    /// Whether the engine keeps more than one I/O in flight.
    pub fn is_async(self) -> bool {
        !matches!(
            self,
            EngineKind::Sync | EngineKind::Null | EngineKind::Falloc | EngineKind::Cpuio
        )
    }
}
