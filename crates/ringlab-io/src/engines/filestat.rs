//! `filestat`: fio's filestat engine (fio 3.33 engines/fileoperations.c).
//! Each of a job's files (laid out before the run) is stat'ed when the
//! job's walk over its files first reaches it, timed: stat(2), lstat(2),
//! or realpath(3) then statx(2) with STATX_ALL (fio's stat_type). No file
//! is opened. The I/Os are counted, not done (see crate::fileops).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::fileops::{FileOp, FileService, OpTimes, StatType};
use anyhow::{anyhow, Result};
use std::ffi::CStr;

pub struct FilestatEngine {
    files: FileService,
    op: Stat,
}

struct Stat {
    how: StatType,
}

impl FileOp for Stat {
    fn what(&self) -> &'static str {
        match self.how {
            StatType::Stat => "stat",
            StatType::Lstat => "lstat",
            StatType::Statx => "statx",
        }
    }

    fn open(&mut self, _file: usize, path: &CStr) -> std::io::Result<()> {
        // SAFETY: the buffers are zeroed structs this function owns and
        // path is a NUL-terminated string; realpath's result is freed here.
        let rc = unsafe {
            match self.how {
                StatType::Stat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::stat(path.as_ptr(), &mut st)
                }
                StatType::Lstat => {
                    let mut st: libc::stat = std::mem::zeroed();
                    libc::lstat(path.as_ptr(), &mut st)
                }
                StatType::Statx => {
                    // fio: realpath, then statx(-1, abspath, 0, STATX_ALL).
                    let abs = libc::realpath(path.as_ptr(), std::ptr::null_mut());
                    if abs.is_null() {
                        -1
                    } else {
                        let mut st: libc::statx = std::mem::zeroed();
                        let rc = libc::statx(-1, abs, 0, libc::STATX_ALL, &mut st);
                        let e = std::io::Error::last_os_error();
                        libc::free(abs.cast());
                        if rc < 0 {
                            return Err(e);
                        }
                        rc
                    }
                }
            }
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl FilestatEngine {
    pub fn new(setup: &EngineSetup, job: u32, times: OpTimes) -> Result<FilestatEngine> {
        let plan = setup
            .plan
            .files
            .as_ref()
            .ok_or_else(|| anyhow!("the filestat engine runs without its files (--nrfiles)"))?;
        Ok(FilestatEngine {
            files: FileService::new(plan, job, times)?,
            op: Stat {
                how: plan.stat_type,
            },
        })
    }
}

impl Engine for FilestatEngine {
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
