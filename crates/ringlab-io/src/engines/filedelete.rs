//! `filedelete`: fio's filedelete engine (fio 3.33
//! engines/fileoperations.c). Each of a job's files (laid out before the
//! run) is unlinked when the job's walk over its files first reaches it,
//! timed. No file is opened. The I/Os are counted, not done (see
//! crate::fileops); a second pass over the files would unlink them again,
//! which fails as fio's does (ENOENT), so ringlab refuses one.

use crate::fileops::{FileOp, FilePlan};
use std::ffi::CStr;

/// fio's filedelete engine.
pub type FiledeleteEngine = super::fileop::FileOpEngine<Unlink>;

pub struct Unlink;

impl FileOp for Unlink {
    const ENGINE: &'static str = "filedelete";

    fn for_plan(_plan: &FilePlan) -> Unlink {
        Unlink
    }

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
