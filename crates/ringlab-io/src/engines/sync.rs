//! `sync`: pread/pwrite, one I/O at a time (fio's psync).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::job_error::or_errno;
use crate::workload::Dir;
use anyhow::Result;
use std::os::fd::RawFd;

pub struct SyncEngine {
    fd: RawFd,
    trim: crate::trim::TrimHow,
}

impl SyncEngine {
    pub fn new(setup: &EngineSetup) -> SyncEngine {
        SyncEngine {
            fd: setup.fd,
            trim: crate::trim::how(setup.plan, setup.fd),
        }
    }
}

impl Engine for SyncEngine {
    #[inline]
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        let off = req.offset as libc::off_t;
        // SAFETY: req.buf points at req.len bytes owned by the worker for the
        // duration of this call.
        let n = unsafe {
            match req.dir {
                Dir::Read => libc::pread(self.fd, req.buf.cast(), req.len as usize, off),
                Dir::Write => libc::pwrite(self.fd, req.buf.cast(), req.len as usize, off),
                Dir::Nop => anyhow::bail!("the sync engine has no no-op request"),
                Dir::Trim => {
                    return Ok(QueueStatus::Completed(crate::trim::trim(
                        self.fd, self.trim, req.offset, req.len,
                    )))
                }
            }
        };
        Ok(QueueStatus::Completed(or_errno(n as i64, n as i64)))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }
}
