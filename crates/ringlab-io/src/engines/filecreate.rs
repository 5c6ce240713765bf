//! `filecreate`: fio's filecreate engine (fio 3.33 engines/fileoperations.c).
//! Each of a job's files is created when the job's walk over its files
//! first reaches it: open(2) with O_CREAT|O_RDWR, mode 0600 (no O_TRUNC,
//! so an existing file is opened as it is), timed; the descriptor is kept
//! until the file's I/Os are done, then closed. The I/Os are counted, not
//! done (see crate::fileops).

use crate::fileops::{FileOp, FilePlan};
use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};

/// fio's filecreate engine.
pub type FilecreateEngine = super::fileop::FileOpEngine<Create>;

/// The open descriptors, by file.
pub struct Create {
    fds: Vec<Option<OwnedFd>>,
}

impl FileOp for Create {
    const ENGINE: &'static str = "filecreate";

    fn for_plan(plan: &FilePlan) -> Create {
        Create {
            fds: (0..plan.nrfiles).map(|_| None).collect(),
        }
    }

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
