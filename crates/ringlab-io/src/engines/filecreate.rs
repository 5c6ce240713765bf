//! `filecreate`: fio's filecreate engine (fio 3.33 engines/fileoperations.c).
//! Each of a job's files is created when the job's walk over its files
//! first reaches it: open(2) with O_CREAT|O_RDWR, mode 0600 (no O_TRUNC,
//! so an existing file is opened as it is), timed; the descriptor is kept
//! until the file's I/Os are done, then closed. The I/Os are counted, not
//! done (see crate::fileops).

use super::{Completion, Engine, EngineSetup, IoRequest, QueueStatus};
use crate::fileops::{FileOp, FileService, OpTimes};
use anyhow::{anyhow, Result};
use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};

pub struct FilecreateEngine {
    files: FileService,
    op: Create,
}

/// The open descriptors, by file.
struct Create {
    fds: Vec<Option<OwnedFd>>,
}

impl FileOp for Create {
    fn what(&self) -> &'static str {
        "create (open with O_CREAT)"
    }

    fn open(&mut self, file: usize, path: &CStr) -> std::io::Result<()> {
        // SAFETY: path is a NUL-terminated string; the mode is an integer.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_CREAT | libc::O_RDWR | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and is owned by nobody else.
        self.fds[file] = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(())
    }

    fn close(&mut self, file: usize) {
        self.fds[file] = None;
    }
}

impl FilecreateEngine {
    pub fn new(setup: &EngineSetup, job: u32, times: OpTimes) -> Result<FilecreateEngine> {
        let plan =
            setup.plan.files.as_ref().ok_or_else(|| {
                anyhow!("the filecreate engine runs without its files (--nrfiles)")
            })?;
        Ok(FilecreateEngine {
            files: FileService::new(plan, job, times)?,
            op: Create {
                fds: (0..plan.nrfiles).map(|_| None).collect(),
            },
        })
    }
}

impl Drop for FilecreateEngine {
    fn drop(&mut self) {
        self.files.close_all(&mut self.op);
    }
}

impl Engine for FilecreateEngine {
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
