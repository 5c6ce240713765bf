//! `falloc`: fio's falloc engine. Each request is one fallocate(2) on the
//! job's file, synchronously: a write allocates its range (mode 0, which
//! extends the file), a read allocates it without changing the length
//! (FALLOC_FL_KEEP_SIZE), a trim punches it out (PUNCH_HOLE | KEEP_SIZE).
//! No data moves; the block size is the range.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::job_error::or_errno;
use crate::workload::Dir;
use anyhow::Result;
use std::os::fd::RawFd;

pub struct FallocEngine {
    fd: RawFd,
}

impl FallocEngine {
    pub fn new(setup: &EngineSetup) -> FallocEngine {
        FallocEngine { fd: setup.fd }
    }
}

impl Engine for FallocEngine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        let mode = match req.dir {
            Dir::Read => libc::FALLOC_FL_KEEP_SIZE,
            Dir::Write => 0,
            Dir::Trim => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            Dir::Nop => anyhow::bail!("the falloc engine has no no-op request"),
        };
        // SAFETY: fallocate takes plain integers.
        let rc = unsafe {
            libc::fallocate(
                self.fd,
                mode,
                req.offset as libc::off_t,
                req.len as libc::off_t,
            )
        };
        Ok(QueueStatus::Completed(or_errno(rc.into(), req.len.into())))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }
}
