//! fio's fill_device and offset_increment.
//!
//! fill_device (alias fill_fs): a job writes until the file system or the
//! device is full. fio 3.33 sets the size to "unbounded" when none is
//! given, removes and re-creates a file target (a write job with
//! overwrite=0 lays nothing out), and writes from the start; the first
//! write that fails with ENOSPC or EDQUOT (or comes back short) ends the
//! job without an error (backend.c clears the error and marks the job
//! terminated: no more loops and no read-back phase). On a block device
//! the job writes the device once. Here: a file target is re-created
//! empty and its region is the file system's free space plus one block,
//! so that the write that finds no space is issued as in fio; the job
//! writes that region once and ends at the first ENOSPC.
//!
//! offset_increment: job N of a job's `numjobs` clones starts at
//! `offset + N * offset_increment` (filesetup.c get_start_offset); given in
//! percent, the increment is that share of the target and each job's
//! start is aligned up to the block size. Without size a job's region
//! runs from its start to the end of the target; with size it is size
//! bytes from its start.

use crate::plan::{Increment, IoPlan};
use anyhow::Result;
use ringlab_core::usage;
use ringlab_stats::units::format_bytes;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The byte where job `job`'s region starts: --offset plus `job` times
/// the increment (`target_size`: the target's bytes, for a percentage).
pub fn job_start(plan: &IoPlan, target_size: u64, job: u32) -> u64 {
    match plan.offset_increment {
        None => plan.offset,
        Some(Increment::Bytes(n)) => plan.offset.saturating_add(n.saturating_mul(job as u64)),
        Some(Increment::Percent(p)) => {
            let inc = (target_size as f64 * p / 100.0) as u64;
            let o = plan.offset.saturating_add(inc.saturating_mul(job as u64));
            o.div_ceil(plan.bs).saturating_mul(plan.bs)
        }
    }
}

/// The end of the last job's region: what the target must hold. Without
/// --size each job runs to the end of the target (`target_size`).
pub fn last_end(plan: &IoPlan, target_size: u64) -> u64 {
    let last = job_start(plan, target_size, plan.numjobs.saturating_sub(1));
    match plan.size {
        Some(s) => last.saturating_add(s),
        None => target_size.max(last),
    }
}

/// Job `job`'s region with offset_increment: its first block (in blocks
/// of --bs, counted from 0), the byte shift to add to each block's offset
/// (when its start is not a whole number of blocks), and its block count.
pub fn job_region(plan: &IoPlan, target_size: u64, region: u64, job: u32) -> (u64, u64, u64) {
    let start = job_start(plan, target_size, job);
    let len = match plan.size {
        Some(_) => region,
        None => target_size.saturating_sub(start),
    };
    (start / plan.bs, start % plan.bs, len / plan.bs)
}

/// The file system's free bytes where `path` lives (for root, the blocks
/// reserved for root too, which its writes may use).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    let blocks = if root { st.f_bfree } else { st.f_bavail };
    Some(blocks as u64 * st.f_frsize as u64)
}

/// fio's fill_device on a regular file (or a path that does not exist):
/// the file is removed and created empty, as fio's write job does, and
/// the region to write is --size, or the free space plus one block.
/// Returns the region's bytes. Block devices keep the usual checks.
/// `in_use` is the target's check that writing would destroy something
/// (target.rs's `file_in_use`, passed in so the two files do not import
/// each other).
pub fn prepare_file(
    plan: &IoPlan,
    path: &Path,
    in_use: fn(&Path, &std::fs::Metadata) -> Option<String>,
) -> Result<Option<u64>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => usage!("cannot inspect target {}: {e}", path.display()),
    };
    if !plan.writes() {
        usage!(
            "fill_device on a job that does not write ({}): fio lays the file out until the file system is full and then reads it; ringlab has not built that: give size=, or make the job write",
            plan.rw.name()
        );
    }
    if let Some(m) = &meta {
        if m.len() > 0 {
            let mut head = vec![0u8; 8192];
            let n = std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .unwrap_or(0);
            if let Some(what) = crate::named::not_a_target(&head[..n]) {
                usage!(
                    "{} is {what}, not a benchmark target: name a data file or a device",
                    path.display()
                );
            }
            if !plan.allow_destructive && !crate::named::is_marked(path) {
                usage!(
                    "refusing to fill {}: it is an existing file ringlab did not lay out, and fill_device removes it and writes until the file system is full. Pass --allow-destructive if that is what you want",
                    path.display()
                );
            }
            if let Some(why) = in_use(path, m) {
                usage!(
                    "refusing to fill {}: {why}; writing would destroy it",
                    path.display()
                );
            }
        }
        // fio's write job without overwrite removes the file first.
        if let Err(e) = std::fs::remove_file(path) {
            usage!("cannot remove {} to fill it: {e}", path.display());
        }
    }
    crate::named::create_marked(path)?;
    let region = match plan.size {
        Some(s) => s,
        None => {
            let Some(free) = free_bytes(path) else {
                usage!(
                    "fill_device: cannot read the free space of the file system of {} (statvfs failed): give size=",
                    path.display()
                );
            };
            // One block past the free space: the write that finds no
            // space is issued, as in fio.
            free.div_ceil(plan.bs).saturating_add(1) * plan.bs
        }
    };
    if region < plan.bs_max {
        usage!(
            "fill_device: {} to write at {}, less than one block (--bs {})",
            format_bytes(region),
            path.display(),
            format_bytes(plan.bs_max)
        );
    }
    Ok(Some(region / plan.bs * plan.bs))
}

/// The write that found the file system or device full, under
/// fill_device: it ends the job, which is not a failure.
#[derive(Debug)]
pub struct FilledUp(pub String);

impl std::fmt::Display for FilledUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FilledUp {}

/// Whether a failed or short write ends a fill_device job: ENOSPC and
/// EDQUOT (fio's two), or a write the file system cut short.
pub fn ends_fill(plan: &IoPlan, write: bool, result: i64, len: u64) -> bool {
    plan.fill_device
        && write
        && (result == -(libc::ENOSPC as i64)
            || result == -(libc::EDQUOT as i64)
            || (result >= 0 && (result as u64) < len))
}

/// The line that says how a fill_device job ended (fio prints "io_u error
/// on file F: No space left on device: write offset=O, buflen=B").
pub fn filled_message(job: u32, path: &Path, result: i64, offset: u64, len: u64) -> String {
    let why = if result < 0 {
        std::io::Error::from_raw_os_error((-result) as i32).to_string()
    } else if result as u64 >= len {
        "a short write, whose rest was written when issued again".to_string()
    } else {
        format!("short write of {result} bytes")
    };
    format!(
        "job {job}: fill_device: the file system or device is full: {why} on file {}: write offset={offset}, buflen={len}; the job ended there without an error, as fio's",
        path.display()
    )
}

const UNFINISHED: &str = " (fio counts them issued: total_ios +";

/// What a fill_device job's end adds to fio's counts, appended to its
/// [`filled_message`]: fio 3.33 counts every write it issued in
/// `total_ios` (ioengines.c td_io_queue), the one that found no space and
/// a short write's re-issued rest included, and each short write in
/// `short_ios` (io_u.c); their bytes are not in `io_bytes`, since the
/// write ended in an error. `issued`: those writes, `short`: the short
/// ones among them.
pub fn unfinished_note(issued: u32, short: u32) -> String {
    format!("; {issued} write(s) did not complete in full{UNFINISHED}{issued}, short_ios +{short})")
}

/// (job, issued, short) of a warning made of [`filled_message`] and
/// [`unfinished_note`], if it is one.
pub fn unfinished(w: &str) -> Option<(u32, u64, u64)> {
    let job = w.strip_prefix("job ")?.split_once(": fill_device: ")?.0;
    let (_, rest) = w.rsplit_once(UNFINISHED)?;
    let (issued, rest) = rest.split_once(", short_ios +")?;
    let short = rest.strip_suffix(')')?;
    Some((job.parse().ok()?, issued.parse().ok()?, short.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::IoArgs;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        io: IoArgs,
    }

    fn plan_of(line: &str) -> IoPlan {
        use clap::Parser;
        let argv = std::iter::once("io").chain(line.split_whitespace());
        IoPlan::from_args(&Cmd::try_parse_from(argv).unwrap().io).unwrap()
    }

    #[test]
    fn the_end_of_a_fill_is_read_back_with_its_counts() {
        let w = filled_message(3, Path::new("/tmp/f"), -28, 4096, 65536) + &unfinished_note(2, 1);
        assert_eq!(unfinished(&w), Some((3, 2, 1)));
        assert_eq!(unfinished("job 3: something else"), None);
    }

    #[test]
    fn job_starts_step_by_the_increment() {
        let plan = plan_of("--offset 120k --bs 16k --numjobs 4 --offset-increment 1m --runtime 1");
        assert_eq!(job_start(&plan, 1 << 30, 0), 120 << 10);
        assert_eq!(job_start(&plan, 1 << 30, 3), (120 << 10) + (3 << 20));
        let (first, shift, count) = job_region(&plan, 8 << 20, 8 << 20, 1);
        assert_eq!(first * (16 << 10) + shift, (120 << 10) + (1 << 20));
        assert_eq!(count, ((8 << 20) - (120 << 10) - (1 << 20)) / (16 << 10));
        let plan = plan_of("--offset 120k --bs 16k --numjobs 4 --offset-increment 25% --runtime 1");
        // 25% of 10,000,000 is 2,500,000; 120k + that, aligned up to 16k.
        assert_eq!(job_start(&plan, 10_000_000, 1), 2_637_824);
    }
}
