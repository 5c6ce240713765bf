//! Named targets that are files, as fio treats them, safely: a file that
//! does not exist (or is empty) is laid out at --size with real data and
//! kept; an existing file is read freely; a write workload on an existing
//! non-empty file ringlab did not lay out itself is refused unless
//! --allow-destructive. ringlab marks the files it lays out with the
//! extended attribute [`LAYOUT_XATTR`]. A job file, an executable or a file
//! that reads as text someone wrote is never a target.

use crate::plan::IoPlan;
use anyhow::{Context, Result};
use ringlab_core::usage;
use ringlab_stats::units::format_bytes;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The extended attribute on every file ringlab lays out.
pub const LAYOUT_XATTR: &str = "user.ringlab.layout";

/// Marks a file ringlab laid out; `false` where the file system keeps no
/// user attributes.
pub fn mark(file: &File) -> bool {
    ringlab_core::files::set_xattr_flag(file, LAYOUT_XATTR)
}

/// Creates `path`, which must not exist, empty and marked as ringlab's
/// (fill_device's file, create_on_open's): a usage error naming it if it
/// cannot be made.
pub fn create_marked(path: &Path) -> Result<()> {
    let file = match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => f,
        Err(e) => usage!("cannot create {}: {e}", path.display()),
    };
    mark(&file);
    Ok(())
}

/// Whether ringlab laid out this file (it carries [`LAYOUT_XATTR`]).
pub fn is_marked(path: &Path) -> bool {
    ringlab_core::files::has_xattr(path, LAYOUT_XATTR) == Some(true)
}

/// What the first bytes of a file say it is, when that makes it no target.
pub fn not_a_target(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x7fELF") {
        return Some("an ELF executable");
    }
    if head.starts_with(b"#!") {
        return Some("a script");
    }
    if crate::fio::jobfile::looks_like_job_file(head) {
        return Some("a fio job file (run it with: ringlab io --fio FILE)");
    }
    if looks_like_text(head) {
        return Some("text someone wrote");
    }
    None
}

/// Text: valid UTF-8 (a character cut by the end of the sample allowed), no
/// NUL, and almost only printable characters and line breaks. Laid-out
/// data (pseudo-random bytes, verify headers) never passes.
fn looks_like_text(head: &[u8]) -> bool {
    if head.is_empty() || head.contains(&0) {
        return false;
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => match std::str::from_utf8(&head[..e.valid_up_to()]) {
            Ok(t) => t,
            Err(_) => return false,
        },
        Err(_) => return false,
    };
    let total = text.chars().count().max(1);
    let printable = text
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .count();
    printable * 100 >= total * 95
}

fn head_of(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 8192];
    let mut n = 0;
    while n < buf.len() {
        let r = f.read(&mut buf[n..])?;
        if r == 0 {
            break;
        }
        n += r;
    }
    buf.truncate(n);
    Ok(buf)
}

/// Writes `size` bytes of real data into a file (the target module's
/// layout, passed in so that this module does not import it back).
pub type LayOut = fn(&mut File, u64, &IoPlan, &AtomicBool) -> Result<()>;

/// Applies the file rules to a named TARGET before it is inspected: lays
/// out a missing, empty or too short ringlab file, and refuses what must
/// not be a target or must not be written.
pub fn prepare_named(
    plan: &IoPlan,
    path: &Path,
    interrupted: &AtomicBool,
    announce: bool,
    lay_out: LayOut,
) -> Result<()> {
    let meta = match fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        // The target checks that follow name this error.
        Err(_) => return Ok(()),
    };
    let len = match &meta {
        Some(m) if !m.is_file() => return Ok(()),
        Some(m) => m.len(),
        None => 0,
    };
    if len > 0 {
        let head = head_of(path).with_context(|| format!("reading {}", path.display()))?;
        if let Some(what) = not_a_target(&head) {
            usage!(
                "{} is {what}, not a benchmark target: name a data file or a device, or a new file that ringlab lays out",
                path.display()
            );
        }
        let marked = is_marked(path);
        if plan.writes() && !plan.allow_destructive && !marked {
            usage!(
                "refusing to write to {}: it is an existing file ringlab did not lay out (it has no {LAYOUT_XATTR} attribute), so the workload would overwrite its data. Pass --allow-destructive if that is what you want, or name a new file and ringlab lays it out",
                path.display()
            );
        }
        // ringlab fio, told to write as fio does (--allow-destructive):
        // a file shorter than its job's size is laid out again, as fio's
        // extend_file does, whoever made it (ftruncate.fio leaves its file
        // shorter, and fio's next run lays it out anew).
        let as_fio = plan.fio_job_errors && plan.allow_destructive;
        match plan.size {
            Some(size) if (marked || as_fio) && size.saturating_add(plan.offset) > len => {}
            _ => return Ok(()),
        }
    }
    let Some(size) = plan.size else {
        usage!(
            "target {} does not exist{}: give --size and ringlab lays it out there with real data and keeps it (as fio does), or omit TARGET and ringlab creates a temporary file (--size, --directory)",
            path.display(),
            if meta.is_some() { " or is empty" } else { "" }
        );
    };
    if size < plan.bs_max {
        usage!(
            "--size {} is smaller than one block (--bs {})",
            format_bytes(size),
            format_bytes(plan.bs_max)
        );
    }
    // With --offset the file holds the offset and --size after it, as fio
    // lays it out.
    let size = size.saturating_add(plan.offset);
    let new = meta.is_none() || len == 0;
    // fio's failed job: a layout that takes no space (fallocate none,
    // truncate, keep, for a job that reads nothing) is not checked, as
    // fio checks nothing; a write that finds no room is the job's error.
    let takes_no_space = plan.fio_job_errors
        && !plan.reads()
        && matches!(
            plan.fallocate,
            Some(
                crate::layout::Fallocate::None
                    | crate::layout::Fallocate::Truncate
                    | crate::layout::Fallocate::Keep
            )
        );
    if !takes_no_space {
        ringlab_core::files::check_free_space(path, size.saturating_sub(len), "laying out")?;
    }
    if !new {
        // A file ringlab laid out, shorter than --offset plus --size: it
        // grows in place (a run killed meanwhile leaves it marked and
        // shorter, and the next run grows it again).
        eprintln!(
            "ringlab: growing {} from {} to {} (--offset {} plus --size {}; kept)",
            path.display(),
            format_bytes(len),
            format_bytes(size),
            format_bytes(plan.offset),
            format_bytes(size - plan.offset)
        );
        let mut file = match OpenOptions::new().write(true).open(path) {
            Ok(f) => f,
            Err(e) => usage!("cannot open {} to grow it: {e}", path.display()),
        };
        return lay_out(&mut file, size, plan, interrupted)
            .with_context(|| format!("growing {}", path.display()));
    }
    // A new file is laid out under a temporary name beside it and renamed
    // when complete: a run killed meanwhile (even by SIGKILL) leaves no
    // partial file under the name, which later runs would refuse.
    ringlab_core::files::remove_stale_temps(path);
    let temp = ringlab_core::files::TempName::new(ringlab_core::files::temp_path(path));
    let mut file = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&temp.path)
    {
        Ok(f) => f,
        Err(e) => usage!("cannot create {}: {e}", path.display()),
    };
    if announce || new {
        eprintln!(
            "ringlab: laying out {} at {} (kept)",
            format_bytes(size),
            path.display()
        );
    }
    lay_out(&mut file, size, plan, interrupted)
        .with_context(|| format!("laying out {}", path.display()))?;
    if !mark(&file) {
        eprintln!(
            "ringlab: note: {} keeps no extended attributes, so it cannot be marked as laid out by ringlab: later write runs on it need --allow-destructive",
            path.display()
        );
    }
    fs::rename(&temp.path, path)
        .with_context(|| format!("renaming the laid-out {} into place", path.display()))?;
    temp.forget();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_never_a_target() {
        assert_eq!(
            not_a_target(b"\x7fELF\x02\x01\x01"),
            Some("an ELF executable")
        );
        assert!(not_a_target(b"[job]\nrw=write\nbs=4k\n")
            .unwrap()
            .contains("job file"));
        assert_eq!(
            not_a_target("notes: café\n".as_bytes()),
            Some("text someone wrote")
        );
        assert_eq!(not_a_target(&[0u8; 4096]), None);
        let mut noise = vec![0u8; 4096];
        crate::verify::fill_payload(&mut noise, 7);
        assert_eq!(not_a_target(&noise), None);
        // A multi-byte character cut by the end of the sample is still text.
        let mut cut = "é".repeat(100).into_bytes();
        cut.pop();
        assert_eq!(not_a_target(&cut), Some("text someone wrote"));
    }

    #[test]
    fn marks_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = File::create(&p).unwrap();
        assert!(!is_marked(&p));
        if mark(&f) {
            assert!(is_marked(&p));
        } else {
            eprintln!("skipped marks_read_back: no user xattrs on this file system");
        }
    }
}
