//! The engine of fio's file engines (filecreate, filestat, filedelete):
//! one job's walk over its files ([`FileService`]) with the operation that
//! each engine times ([`FileOp`], in filecreate.rs, filestat.rs and
//! filedelete.rs). Each request serves the walk and completes at once,
//! done in full with nothing moved (fio's FIO_FAKEIO).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::fileops::{FileOp, FileService, OpTimes};
use anyhow::{anyhow, Result};

pub struct FileOpEngine<O: FileOp> {
    files: FileService,
    op: O,
}

impl<O: FileOp> FileOpEngine<O> {
    pub fn new(setup: &EngineSetup, job: u32, times: OpTimes) -> Result<FileOpEngine<O>> {
        let plan = setup.plan.files.as_ref().ok_or_else(|| {
            anyhow!(
                "the {} engine runs without its files (--nrfiles)",
                O::ENGINE
            )
        })?;
        Ok(FileOpEngine {
            files: FileService::new(plan, job, times)?,
            op: O::for_plan(plan),
        })
    }
}

impl<O: FileOp> Drop for FileOpEngine<O> {
    fn drop(&mut self) {
        // What the operation keeps open (filecreate's descriptors).
        self.files.close_all(&mut self.op);
    }
}

impl<O: FileOp> Engine for FileOpEngine<O> {
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
