//! `filestat`: fio's filestat engine (fio 3.33 engines/fileoperations.c).
//! Each of a job's files (laid out before the run) is stat'ed when the
//! job's walk over its files first reaches it, timed: stat(2), lstat(2),
//! or realpath(3) then statx(2) with STATX_ALL (fio's stat_type). No file
//! is opened. The I/Os are counted, not done (see crate::fileops).

use crate::fileops::{FileOp, FilePlan, StatType};
use std::ffi::CStr;

/// fio's filestat engine.
pub type FilestatEngine = super::fileop::FileOpEngine<Stat>;

pub struct Stat {
    how: StatType,
}

impl FileOp for Stat {
    const ENGINE: &'static str = "filestat";

    fn for_plan(plan: &FilePlan) -> Stat {
        Stat {
            how: plan.stat_type,
        }
    }

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
