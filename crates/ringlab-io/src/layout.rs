//! fio's fallocate=: how a new file is laid out for a job that reads
//! nothing (a write or trim job).
//!
//! fio writes a new file with data before a job that reads it, whatever
//! fallocate= says (filesetup.c: `extend_file`, `new_layout` for reads);
//! ringlab does too. For a job that only writes or trims, fio creates the
//! file and allocates it by fallocate= (none, posix, keep, native,
//! truncate) without writing a byte, and the job's writes fill it. With
//! fallocate= given, ringlab does the same, then makes the file `size`
//! bytes long where the mode left it shorter (none, keep: a sparse length,
//! so that the job's region exists; fio's writes past the end extend it).

use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;

/// fio's fallocate= modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallocate {
    /// No allocation: the writes allocate (fio's none, 0).
    None,
    /// posix_fallocate (fio's posix, 1).
    Posix,
    /// fallocate(FALLOC_FL_KEEP_SIZE): blocks allocated, length 0.
    Keep,
    /// fallocate(0): blocks allocated and the length set.
    Native,
    /// ftruncate to the size: a sparse file.
    Truncate,
}

impl Fallocate {
    pub fn parse(text: &str) -> Result<Fallocate, String> {
        Ok(match text.trim() {
            "none" | "0" => Fallocate::None,
            "posix" | "1" => Fallocate::Posix,
            "keep" => Fallocate::Keep,
            "native" => Fallocate::Native,
            "truncate" => Fallocate::Truncate,
            v => {
                return Err(format!(
                    "fallocate={v}: fio's modes are none, posix, keep, native, truncate (and 0, 1)"
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Fallocate::None => "none",
            Fallocate::Posix => "posix",
            Fallocate::Keep => "keep",
            Fallocate::Native => "native",
            Fallocate::Truncate => "truncate",
        }
    }
}

/// Allocates a new, empty `file` of `size` bytes as fio's fallocate=
/// `mode` does, without writing data.
pub fn allocate(file: &File, size: u64, mode: Fallocate) -> Result<()> {
    let fd = file.as_raw_fd();
    let len = size as libc::off_t;
    let rc = match mode {
        Fallocate::None | Fallocate::Truncate => 0,
        // SAFETY: plain integers; posix_fallocate returns the error.
        Fallocate::Posix => match unsafe { libc::posix_fallocate(fd, 0, len) } {
            0 => 0,
            e => return Err(std::io::Error::from_raw_os_error(e)).context("posix_fallocate"),
        },
        // SAFETY: plain integers.
        Fallocate::Keep => unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, len) },
        // SAFETY: plain integers.
        Fallocate::Native => unsafe { libc::fallocate(fd, 0, 0, len) },
    };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        // fio: a file system without fallocate falls back to none.
        if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
            return Err(e).with_context(|| format!("fallocate ({})", mode.name()));
        }
    }
    if file.metadata()?.len() < size {
        file.set_len(size).context("ftruncate")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn modes_allocate_as_fio() {
        let dir = tempfile::tempdir().unwrap();
        for (mode, allocated) in [
            (Fallocate::None, false),
            (Fallocate::Truncate, false),
            (Fallocate::Native, true),
            (Fallocate::Keep, true),
            (Fallocate::Posix, true),
        ] {
            let p = dir.path().join(mode.name());
            let f = File::create(&p).unwrap();
            allocate(&f, 1 << 20, mode).unwrap();
            let m = std::fs::metadata(&p).unwrap();
            assert_eq!(m.len(), 1 << 20, "{mode:?}");
            assert_eq!(m.blocks() * 512 >= 1 << 20, allocated, "{mode:?}");
        }
        assert_eq!(Fallocate::parse("0"), Ok(Fallocate::None));
        assert_eq!(Fallocate::parse("1"), Ok(Fallocate::Posix));
        assert!(Fallocate::parse("x").unwrap_err().contains("none, posix"));
    }
}
