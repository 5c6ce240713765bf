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
    /// fio's filecreate: each of a job's files is created (open with
    /// O_CREAT) when the job first reaches it; the I/Os are not done
    /// (--nrfiles, --openfiles; see fileops.rs).
    Filecreate,
    /// fio's filestat: each of a job's files (laid out before the run) is
    /// stat(2)ed when the job first reaches it; the I/Os are not done
    /// (--stat-type).
    Filestat,
    /// fio's filedelete: each of a job's files (laid out before the run)
    /// is unlinked when the job first reaches it; the I/Os are not done.
    Filedelete,
    /// fio's ftruncate: each write is one ftruncate(2) of the job's file to
    /// the write's offset; no data moves.
    Ftruncate,
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
            EngineKind::Filecreate => "filecreate",
            EngineKind::Filestat => "filestat",
            EngineKind::Filedelete => "filedelete",
            EngineKind::Ftruncate => "ftruncate",
        }
    }

    /// Whether the engine keeps more than one I/O in flight.
    pub fn is_async(self) -> bool {
        !matches!(
            self,
            EngineKind::Sync
                | EngineKind::Null
                | EngineKind::Falloc
                | EngineKind::Cpuio
                | EngineKind::Filecreate
                | EngineKind::Filestat
                | EngineKind::Filedelete
                | EngineKind::Ftruncate
        )
    }

    /// fio's file operation engines (fio's engines/fileoperations.c): each
    /// of a job's --nrfiles files is created, stat'ed or unlinked, timed,
    /// and the I/Os on it are counted but not done (fio's FIO_FAKEIO and
    /// FIO_NOSTATS: the operations' times are the only latencies).
    pub fn is_file_op(self) -> bool {
        matches!(
            self,
            EngineKind::Filecreate | EngineKind::Filestat | EngineKind::Filedelete
        )
    }

    /// The engines that touch no target file of the job's own (fio's
    /// FIO_DISKLESSIO, and the file operation engines, which work on their
    /// own files): the jobs hold /dev/null instead.
    pub fn is_diskless(self) -> bool {
        matches!(self, EngineKind::Null | EngineKind::Cpuio) || self.is_file_op()
    }
}
