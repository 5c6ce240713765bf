//! `ftruncate`: fio's ftruncate engine (fio 3.33 engines/ftruncate.c).
//! Each write is one ftruncate(2) of the job's file to the write's offset,
//! synchronously: the file ends where the write would have started, so a
//! sequential job shrinks the file to 0 and grows it back one block at a
//! time. No data moves; the block size only steps the offsets. A read (or
//! a trim) is fio's EINVAL, as fio's engine answers anything but a write.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::job_error::or_errno;
use crate::workload::Dir;
use anyhow::Result;
use std::os::fd::RawFd;

pub struct FtruncateEngine {
    fd: RawFd,
}

impl FtruncateEngine {
    pub fn new(setup: &EngineSetup) -> FtruncateEngine {
        FtruncateEngine { fd: setup.fd }
    }
}

impl Engine for FtruncateEngine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        if req.dir != Dir::Write {
            // fio: `if (io_u->ddir != DDIR_WRITE) io_u->error = EINVAL`.
            return Ok(QueueStatus::Completed(-(libc::EINVAL as i64)));
        }
        // SAFETY: ftruncate takes a descriptor and a length.
        let rc = unsafe { libc::ftruncate(self.fd, req.offset as libc::off_t) };
        // fio's FIO_FAKEIO: the request counts as done in full.
        Ok(QueueStatus::Completed(or_errno(rc.into(), req.len.into())))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }
}
