//! `null`: every request completes at once, without a system call or a
//! file (fio's null engine): what is left is the cost of the loop.

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use anyhow::Result;

pub struct NullEngine;

impl NullEngine {
    pub fn new(_setup: &EngineSetup) -> NullEngine {
        NullEngine
    }
}

impl Engine for NullEngine {
    #[inline]
    fn queue(&mut self, req: &IoRequest) -> Result<QueueStatus> {
        Ok(QueueStatus::Completed(req.len as i64))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    fn reap(&mut self, _min: u32, _out: &mut Vec<Completion>) -> Result<()> {
        Ok(())
    }
}
