//! `filedelete`: fio's filedelete engine (fio 3.33
//! engines/fileoperations.c). Each of a job's files (laid out before the
//! run) is unlinked when the job's walk over its files first reaches it,
//! timed. No file is opened. The I/Os are counted, not done (see
//! crate::fileops); a second pass over the files would unlink them again,
//! which fails as fio's does (ENOENT), so ringlab refuses one.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::fileops::{FileOp, FileService, OpTimes};
use anyhow::{anyhow, Result};
use std::ffi::CStr;

pub struct FiledeleteEngine {
    files: FileService,
    op: Unlink,
}

struct Unlink;

impl FileOp for Unlink {
    fn what(&self) -> &'static str {
        "unlink"
    }

    fn open(&mut self, _file: usize, path: &CStr) -> std::io::Result<()> {
        // SAFETY: path is a NUL-terminated string.
        if unsafe { libc::unlink(path.as_ptr()) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl FiledeleteEngine {
    pub fn new(setup: &EngineSetup, job: u32, times: OpTimes) -> Result<FiledeleteEngine> {
        let plan =
            setup.plan.files.as_ref().ok_or_else(|| {
                anyhow!("the filedelete engine runs without its files (--nrfiles)")
            })?;
        Ok(FiledeleteEngine {
            files: FileService::new(plan, job, times)?,
            op: Unlink,
        })
    }
}

impl Engine for FiledeleteEngine {
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        self.files.serve(&mut self.op)?;
        // fio's FIO_FAKEIO: done in full, nothing moved.
        Ok(QueueStatus::Completed(req.len as i64))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }
}
