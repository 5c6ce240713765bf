//! The target: an existing file or block device, or a file ringlab creates.
//!
//! Everything that can be wrong with a target is found here, before any
//! thread starts: it does not exist, is too small, refuses O_DIRECT or the
//! block size, or is a block device whose data a write would destroy.

use crate::buffers::{BufferPool, BUFFER_ALIGN};
use crate::plan::IoPlan;
use crate::verify;
use crate::workload::Rw;
use anyhow::{Context, Result};
use ringlab_core::usage;
use ringlab_stats::units::format_bytes;
use ringlab_stats::TargetInfo;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;
const STATX_DIOALIGN: u32 = 0x2000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    File,
    Block,
}

/// A file ringlab created. Without --keep its name is unlinked right after
/// it is created and the file lives on through `fd` alone: no exit, not
/// even SIGKILL, can leave it behind. With --keep it stays.
#[derive(Debug)]
pub struct CreatedFile {
    keep: bool,
    /// Held open for the whole run; the jobs reopen the file through
    /// `/proc/self/fd/N` (see [`Target::access_path`]).
    fd: OwnedFd,
}

/// A target checked and ready for the jobs to open.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size: u64,
    /// Bytes the workload uses, a whole number of blocks.
    pub region: u64,
    pub logical_block_size: u32,
    pub fs_type: Option<String>,
    pub scheduler: Option<String>,
    created: Option<CreatedFile>,
}

impl Target {
    pub fn info(&self) -> TargetInfo {
        TargetInfo {
            path: self.path.display().to_string(),
            kind: match self.kind {
                TargetKind::File => "file",
                TargetKind::Block => "block",
            }
            .to_string(),
            size_bytes: self.size,
            region_bytes: self.region,
            created: self.created.is_some(),
            kept: self.created.as_ref().is_some_and(|c| c.keep),
            fs_type: self.fs_type.clone(),
            logical_block_size: self.logical_block_size,
            scheduler: self.scheduler.clone(),
        }
    }

    /// A path that opens the target: its own path, or for a created file
    /// whose name is already unlinked, `/proc/self/fd/N` of the descriptor
    /// ringlab holds.
    pub fn access_path(&self) -> PathBuf {
        match &self.created {
            Some(c) if !c.keep => fd_path(&c.fd),
            _ => self.path.clone(),
        }
    }

    /// Whether the target takes non-blocking I/O (see [`takes_nowait`]),
    /// asked on a descriptor opened as the jobs open it, with a read of one
    /// block into a page-aligned buffer (so that O_DIRECT takes it); `None`
    /// where that cannot be asked.
    pub fn takes_nowait(&self, plan: &IoPlan) -> Option<bool> {
        let fd = self.open(plan).ok()?;
        let block = (self.logical_block_size as usize).max(BUFFER_ALIGN);
        let mut buf = BufferPool::new(block, 1).ok()?;
        takes_nowait(fd.as_fd(), buf.slot_mut(0))
    }

    /// Opens the target for one job with the flags the plan needs.
    pub fn open(&self, plan: &IoPlan) -> Result<OwnedFd> {
        // The engines without a file of their own hold /dev/null, which
        // refuses O_DIRECT (fio ignores direct= for them).
        let direct = plan.direct && plan.rw != Rw::Nop && !plan.engine.is_diskless();
        open_target(&self.access_path(), plan.writes(), direct)
            .with_context(|| format!("cannot open {}", self.path.display()))
    }

    /// Blocks `[first, first + count)` of job `job`. With --verify and
    /// writes, jobs get disjoint slices so no job reads a block another is
    /// rewriting; otherwise every job roams the whole region, as in fio.
    pub fn job_blocks(&self, plan: &IoPlan, job: u32) -> (u64, u64) {
        if plan.offset_increment.is_some() {
            // fio's offset_increment places each job (fill_device.rs).
            let (first, _, count) =
                crate::fill_device::job_region(plan, self.size, self.region, job);
            return (first, count);
        }
        let (first, blocks) = self.shard_blocks(plan);
        // The region starts --offset bytes in (a whole number of blocks).
        let base = plan.offset / plan.bs + first;
        if plan.verify && plan.writes() && plan.numjobs > 1 {
            let per_job = blocks / plan.numjobs as u64;
            (base + job as u64 * per_job, per_job)
        } else {
            (base, blocks)
        }
    }
}

impl Target {
    /// The bytes added to every offset of job `job`: its region's start
    /// less whole blocks (fio's offset need not be a multiple of bs).
    pub fn job_shift(&self, plan: &IoPlan, job: u32) -> u64 {
        if plan.offset_increment.is_some() {
            crate::fill_device::job_region(plan, self.size, self.region, job).1
        } else {
            plan.offset % plan.bs
        }
    }

    /// The blocks of the region this shard uses, `(first, count)` from
    /// --offset: its own N-th with --shard-region split, else all of it.
    pub fn shard_blocks(&self, plan: &IoPlan) -> (u64, u64) {
        let blocks = self.region / plan.bs;
        if plan.shard_region_split {
            plan.shards.span(blocks)
        } else {
            (0, blocks)
        }
    }
}

/// The `/proc/self/fd` path of an open descriptor: opening it opens the
/// same file (with new flags, e.g. O_DIRECT) even once its name is gone.
fn fd_path(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn open_target(path: &Path, write: bool, direct: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::O_CLOEXEC;
    flags |= if write { libc::O_RDWR } else { libc::O_RDONLY };
    if direct {
        flags |= libc::O_DIRECT;
    }
    let cpath = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // O_NOATIME, as t/io_uring opens its targets: a benchmark's reads are
    // not accesses anyone wants recorded, and the atime check and update
    // (touch_atime, current_time) cost ~1% of each 4 KiB read on zram.
    // Only the owner (or CAP_FOWNER) may ask for it: EPERM retries without.
    // SAFETY: cpath is a valid NUL-terminated string.
    let mut fd = unsafe { libc::open(cpath.as_ptr(), flags | libc::O_NOATIME) };
    if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
        // SAFETY: as above.
        fd = unsafe { libc::open(cpath.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `fd` takes non-blocking I/O: the kernel's FMODE_NOWAIT, which
/// decides where io_uring does a read or write. With it, io_uring tries
/// the request inline, in the submitting thread, and hands it to an io-wq
/// worker only if it would block. Without it (a bio-based block device
/// such as zram, procfs, some file systems), io_uring hands every request
/// to io-wq, after preparing and issuing it inline only to learn that
/// (io_uring/rw.c: `!io_file_supports_nowait()` returns -EAGAIN before any
/// I/O).
///
/// No interface tells user space the flag; preadv2(2) with RWF_NOWAIT
/// does: the kernel refuses it with EOPNOTSUPP on a file without
/// FMODE_NOWAIT (`kiocb_set_rw_flags`), before any I/O. So: `Some(false)`
/// if a non-blocking read into `buf` at offset 0 was refused so,
/// `Some(true)` if it was taken (it read, or said it would block), `None`
/// on another error. The read changes nothing.
fn takes_nowait(fd: BorrowedFd, buf: &mut [u8]) -> Option<bool> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one iovec naming `buf`, writable and alive for the call.
    let r = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, 0, libc::RWF_NOWAIT) };
    if r >= 0 {
        return Some(true);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Some(true),
        Some(libc::EOPNOTSUPP) => Some(false),
        _ => None,
    }
}

/// Checks (and, without a TARGET, creates) the target of `plan`.
pub fn prepare(plan: &IoPlan, interrupted: &AtomicBool, announce: bool) -> Result<Target> {
    // Each job holds the target and a ring or AIO context; kernel evidence
    // holds a few dozen counters. Raise the descriptor limit now (or say
    // how) rather than fail in a job thread.
    ringlab_core::limits::ensure_fd_limit(128 + plan.numjobs as u64 * 4, "--numjobs")?;
    if plan.engine.is_diskless() {
        // fio's null and cpuio engines touch no file: the jobs hold /dev/null, and
        // offsets run over --size. The file engines work on files of
        // their own (laid out here for filestat and filedelete) and count
        // their I/Os over one pass of them.
        let size = match &plan.files {
            Some(files) => {
                lay_out_files(plan, files, interrupted)?;
                files.region()
            }
            None => plan.size.unwrap_or(crate::plan::DEFAULT_SIZE),
        };
        return Ok(Target {
            path: PathBuf::from("/dev/null"),
            kind: TargetKind::File,
            size,
            region: size.saturating_sub(plan.offset),
            logical_block_size: 512,
            fs_type: None,
            scheduler: None,
            created: None,
        });
    }
    if plan.rw == Rw::Nop {
        // NOPs touch no file; the jobs get /dev/null as a descriptor to
        // hold, and the result names no target.
        return Ok(Target {
            path: PathBuf::from("/dev/null"),
            kind: TargetKind::File,
            size: plan.bs,
            region: plan.bs,
            logical_block_size: 512,
            fs_type: None,
            scheduler: None,
            created: None,
        });
    }
    let target = match &plan.target {
        Some(path) => {
            // A file in use (a loop device's backing file, swap) is named
            // for what it is, before the rule for files ringlab did not lay
            // out would refuse it in more general words.
            if plan.writes() && !plan.allow_destructive {
                if let Some(meta) = fs::metadata(path).ok().filter(|m| m.is_file()) {
                    if let Some(why) = file_in_use(path, &meta) {
                        usage!(
                            "refusing to write to {}: {why}; writing would destroy it. Pass --allow-destructive if that is what you want",
                            path.display()
                        );
                    }
                }
            }
            let region = match created_on_open(plan, path)? {
                Some(r) => Some(r),
                None => plan
                    .fill_device
                    .then(|| crate::fill_device::prepare_file(plan, path, file_in_use))
                    .transpose()?
                    .flatten(),
            };
            match region {
                Some(region) => filled(plan, path, region)?,
                None => {
                    if plan.offset_increment.is_some() {
                        // fio makes the file long enough for the last job.
                        let mut last = plan.clone();
                        last.offset =
                            crate::fill_device::job_start(plan, 0, plan.numjobs.saturating_sub(1));
                        crate::named::prepare_named(&last, path, interrupted, announce, lay_out)?;
                    } else {
                        crate::named::prepare_named(plan, path, interrupted, announce, lay_out)?;
                    }
                    existing(plan, path)?
                }
            }
        }
        None => create(plan, interrupted, announce)?,
    };
    if plan.offset_increment.is_some() {
        check_increments(plan, &target)?;
    }
    if plan.rw.trims() {
        crate::trim::check(&target.access_path(), plan)
            .map_err(|e| ringlab_core::usage_error(format!("{e:#}")))?;
    }
    if plan.verify && plan.writes() && plan.numjobs > 1 && target.job_blocks(plan, 0).1 == 0 {
        usage!(
            "--verify with writes gives each of the {} jobs its own slice, but the region holds only {} blocks: use fewer jobs or a larger target",
            plan.numjobs,
            target.region / plan.bs
        );
    }
    // Start from a cold cache, as fio's invalidate=1 does; --invalidate 0
    // keeps what is cached (a page-cache-hot run).
    if !plan.invalidate {
        return Ok(target);
    }
    if let Ok(f) = File::open(target.access_path()) {
        // SAFETY: a valid fd; fadvise only drops clean cached pages.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
    Ok(target)
}

/// The files of fio's filestat and filedelete, laid out before the run as
/// fio lays them out (filesetup.c, extend_file): a missing or too short
/// file is (re)made at its size, with real data for a job that reads and
/// allocated (--fallocate) for one that only writes; a file at least that
/// long is used as it is. filecreate lays out nothing (its run creates
/// them), but each job holds its open files.
fn lay_out_files(
    plan: &IoPlan,
    files: &crate::fileops::FilePlan,
    interrupted: &AtomicBool,
) -> Result<()> {
    use crate::engine_kind::EngineKind;
    if plan.engine == EngineKind::Filecreate {
        return ringlab_core::limits::ensure_fd_limit(
            128 + plan.numjobs as u64 * (files.openfiles + 4),
            "--openfiles (fio's openfiles)",
        );
    }
    let deletes = plan.engine == EngineKind::Filedelete;
    let jobs = files.file_jobs(plan.numjobs);
    let mut todo = Vec::new();
    for job in 0..jobs {
        for f in 0..files.nrfiles {
            let path = files.path(job, f);
            let meta = match fs::symlink_metadata(&path) {
                Ok(m) => Some(m),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => usage!("cannot inspect {}: {e}", path.display()),
            };
            let Some(m) = meta else {
                todo.push(path);
                continue;
            };
            if !m.is_file() {
                usage!(
                    "{} is not a regular file: fio's {} works on files; remove it or name other files",
                    path.display(),
                    plan.engine.name()
                );
            }
            let marked = crate::named::is_marked(&path);
            if m.len() >= files.file_size {
                if deletes && !marked && !plan.allow_destructive {
                    usage!(
                        "refusing to unlink {}: it is an existing file ringlab did not lay out (it has no {} attribute), and the filedelete engine deletes it. Pass --allow-destructive if that is what you want, or name new files",
                        path.display(),
                        crate::named::LAYOUT_XATTR
                    );
                }
                continue;
            }
            if m.len() > 0 && !marked && !plan.allow_destructive {
                usage!(
                    "refusing to lay out {} again: it is an existing file ringlab did not lay out, shorter than --size ({}), and fio removes and re-creates such a file. Pass --allow-destructive if that is what you want, or name new files",
                    path.display(),
                    format_bytes(files.file_size)
                );
            }
            todo.push(path);
        }
    }
    if todo.is_empty() {
        return Ok(());
    }
    let bytes = files.file_size * todo.len() as u64;
    if plan.reads() || plan.fallocate.is_none() {
        ringlab_core::files::check_free_space(&todo[0], bytes, "laying out")?;
    }
    eprintln!(
        "ringlab: laying out {} file{} of {} ({}) for --engine {} (kept)",
        todo.len(),
        if todo.len() == 1 { "" } else { "s" },
        format_bytes(files.file_size),
        files.describe(),
        plan.engine.name()
    );
    for path in &todo {
        // A shorter file is made again, as fio unlinks and re-creates it.
        let _ = fs::remove_file(path);
        let mut file = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(path)
        {
            Ok(f) => f,
            Err(e) => usage!(
                "cannot create {}: {e}{}",
                path.display(),
                if e.kind() == io::ErrorKind::NotFound {
                    " (its directory does not exist: create it first)"
                } else {
                    ""
                }
            ),
        };
        // Marked first: a run killed meanwhile leaves a marked file that
        // the next run lays out again.
        crate::named::mark(&file);
        lay_out(&mut file, files.file_size, plan, interrupted)
            .with_context(|| format!("laying out {}", path.display()))?;
    }
    Ok(())
}

/// fio's create_on_open=1 for a job that reads (`plan.create_on_open`, set
/// by ringlab fio): the file is opened as it is, created empty when
/// missing, with --size as its region, so a read past its end gets no byte
/// (which fails the job, as fio's "full resid"). Returns the region.
fn created_on_open(plan: &IoPlan, path: &Path) -> Result<Option<u64>> {
    if !plan.create_on_open {
        return Ok(None);
    }
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => return Ok(None),
        Ok(_) => {
            if plan.writes() && !plan.allow_destructive && !crate::named::is_marked(path) {
                usage!(
                    "refusing to write to {}: it is an existing file ringlab did not lay out, so the workload would overwrite its data. Pass --allow-destructive if that is what you want, or name a new file",
                    path.display()
                );
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => crate::named::create_marked(path)?,
        Err(e) => usage!("cannot inspect target {}: {e}", path.display()),
    }
    let Some(size) = plan.size else {
        usage!(
            "create_on_open=1 on {}: give size= (the region the job reads and writes)",
            path.display()
        );
    };
    Ok(Some(size))
}

/// Every job's region (fio's offset_increment) lies in the target.
fn check_increments(plan: &IoPlan, target: &Target) -> Result<()> {
    let end = crate::fill_device::last_end(plan, target.size);
    let last = plan.numjobs.saturating_sub(1);
    let start = crate::fill_device::job_start(plan, target.size, last);
    if end > target.size || target.job_blocks(plan, last).1 == 0 {
        usage!(
            "offset_increment: job {last} starts at {} and its region ends at {}, past the end of target {} ({}): use a smaller offset_increment, fewer jobs or a larger target",
            format_bytes(start),
            format_bytes(end),
            target.path.display(),
            format_bytes(target.size)
        );
    }
    Ok(())
}

/// The target of fio's fill_device on a file: created empty, `region`
/// bytes to write from --offset (fill_device.rs).
fn filled(plan: &IoPlan, path: &Path, region: u64) -> Result<Target> {
    let probe = match open_target(path, true, false) {
        Ok(fd) => fd,
        Err(e) => usage!("cannot open target {} for writing: {e}", path.display()),
    };
    let fs_type = fs_type_of(&probe);
    let lbs = file_dio_align(path).unwrap_or(512);
    let dev = fs::metadata(path).map(|m| m.dev()).unwrap_or(0);
    drop(probe);
    check_direct(plan, path, path, lbs, fs_type.as_deref())?;
    Ok(Target {
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size: plan.offset.saturating_add(region),
        region,
        logical_block_size: lbs,
        fs_type,
        scheduler: scheduler_of(dev, TargetKind::File),
        created: None,
    })
}

fn existing(plan: &IoPlan, path: &Path) -> Result<Target> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => usage!(
            "target {} does not exist: name an existing file or block device, or omit TARGET and ringlab creates a file (--size, --directory)",
            path.display()
        ),
        Err(e) => usage!("cannot inspect target {}: {e}", path.display()),
    };
    let ft = meta.file_type();
    // The kernel's memory devices (major 1: /dev/null, /dev/zero), which
    // fio's example job files name: a file with no size of its own.
    let mem_dev = ft.is_char_device() && (meta.rdev() >> 8) & 0xfff == 1;
    if mem_dev && plan.size.is_none() {
        usage!(
            "target {} is a character device, which has no size: give --size (fio's size=)",
            path.display()
        );
    }
    let kind = if ft.is_file() || mem_dev {
        TargetKind::File
    } else if ft.is_block_device() {
        TargetKind::Block
    } else if ft.is_dir() {
        usage!(
            "target {} is a directory: name a file or block device, or use --directory {} to create a file there",
            path.display(),
            path.display()
        )
    } else {
        usage!(
            "target {} is neither a regular file nor a block device",
            path.display()
        )
    };
    // Open as the jobs will (read-write for writes), so a permission or
    // read-only problem shows here, not in a job thread.
    let probe = match open_target(path, plan.writes(), false) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::EROFS) => usage!(
            "target {} is on a read-only file system: use a read workload (--rw read or randread)",
            path.display()
        ),
        Err(e) => usage!(
            "cannot open target {} for {}: {e}",
            path.display(),
            if plan.writes() { "writing" } else { "reading" }
        ),
    };
    let (size, lbs, fs_type, dev) = match kind {
        TargetKind::File => (
            if mem_dev {
                plan.size.unwrap_or_default().saturating_add(plan.offset)
            } else {
                meta.len()
            },
            file_dio_align(path).unwrap_or(512),
            fs_type_of(&probe),
            meta.dev(),
        ),
        TargetKind::Block => (
            blkdev_size(&probe).with_context(|| format!("BLKGETSIZE64 on {}", path.display()))?,
            blkdev_logical_block_size(&probe).unwrap_or(512),
            None,
            meta.rdev(),
        ),
    };
    drop(probe);
    if plan.offset >= size {
        usage!(
            "--offset {} is at or past the end of target {} ({})",
            format_bytes(plan.offset),
            path.display(),
            format_bytes(size)
        );
    }
    let after_offset = size - plan.offset;
    let region_wanted = match plan.size {
        Some(s) if s > after_offset => usage!(
            "--size {}{} is larger than target {} ({})",
            format_bytes(s),
            if plan.offset > 0 {
                format!(" from --offset {}", format_bytes(plan.offset))
            } else {
                String::new()
            },
            path.display(),
            format_bytes(size)
        ),
        Some(s) => s,
        None => after_offset,
    };
    if region_wanted < plan.bs_max {
        usage!(
            "target {} is {}, smaller than one block (--bs {}): use a smaller --bs or a larger target",
            path.display(),
            format_bytes(region_wanted),
            format_bytes(plan.bs_max)
        );
    }
    check_direct(plan, path, path, lbs, fs_type.as_deref())?;
    if plan.writes() && !plan.allow_destructive {
        let why = match kind {
            TargetKind::Block => block_device_in_use(path, dev),
            TargetKind::File => file_in_use(path, &meta),
        };
        if let Some(why) = why {
            usage!(
                "refusing to write to {}: {why}; writing would destroy it. Pass --allow-destructive if that is what you want",
                path.display()
            );
        }
    }
    Ok(Target {
        path: path.to_path_buf(),
        kind,
        size,
        region: region_wanted / plan.bs * plan.bs,
        logical_block_size: lbs,
        fs_type,
        scheduler: scheduler_of(dev, kind),
        created: None,
    })
}

/// Refuses a block size O_DIRECT cannot use, and a file system that refuses
/// O_DIRECT, with the fix for each.
fn check_direct(
    plan: &IoPlan,
    path: &Path,
    access: &Path,
    lbs: u32,
    fs_type: Option<&str>,
) -> Result<()> {
    if !plan.direct {
        return Ok(());
    }
    if !plan.offset.is_multiple_of(lbs as u64) {
        usage!(
            "--offset {} is not a multiple of the logical block size ({lbs} bytes) of {}, which O_DIRECT requires: use a multiple of {lbs} or drop --direct",
            plan.offset,
            path.display()
        );
    }
    if !plan.bs.is_multiple_of(lbs as u64) {
        usage!(
            "--bs {} is not a multiple of the logical block size ({lbs} bytes) of {}, which O_DIRECT requires: use a multiple of {lbs} or drop --direct",
            plan.bs,
            path.display()
        );
    }
    if let Err(e) = open_target(access, false, true) {
        if e.raw_os_error() == Some(libc::EINVAL) {
            usage!(
                "{} refuses O_DIRECT (its file system, {}, does not support it): drop --direct, or put the target on a file system that supports it",
                path.display(),
                fs_type.unwrap_or("unknown")
            );
        }
        usage!("cannot open {} with O_DIRECT: {e}", path.display());
    }
    Ok(())
}

/// A layout at least this large is announced on stderr before it starts.
const LARGE_LAYOUT: u64 = 1 << 30;

fn create(plan: &IoPlan, interrupted: &AtomicBool, announce: bool) -> Result<Target> {
    let region = plan.size.unwrap_or(crate::plan::DEFAULT_SIZE);
    // With --offset the file holds the offset and the region after it.
    let size = region.saturating_add(plan.offset);
    if region < plan.bs_max {
        usage!(
            "--size {} is smaller than one block (--bs {})",
            format_bytes(region),
            format_bytes(plan.bs_max)
        );
    }
    let dir = &plan.directory;
    if let Some(free) = free_space(dir) {
        if free < size {
            usage!(
                "{} has {} free, not enough for a {} file: lower --size or pick another --directory",
                dir.display(),
                format_bytes(free),
                format_bytes(size)
            );
        }
    }
    let path = dir.join(format!("ringlab-io-{}.dat", std::process::id()));
    let mut file = match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => usage!("cannot create {}: {e}", path.display()),
    };
    // Canonical while the name still exists (the result names it).
    let shown = path.canonicalize().unwrap_or_else(|_| path.clone());
    if !plan.keep {
        // From here on the file exists only through our descriptors: it
        // goes away with the process, however the process ends.
        if let Err(e) = fs::remove_file(&path) {
            usage!(
                "cannot unlink {} after creating it: {e}; pass --keep to keep it instead",
                path.display()
            );
        }
    }
    let guard = CreatedFile {
        keep: plan.keep,
        fd: OwnedFd::from(
            file.try_clone()
                .with_context(|| format!("duplicating the descriptor of {}", path.display()))?,
        ),
    };
    let access = if plan.keep {
        path.clone()
    } else {
        fd_path(&guard.fd)
    };
    let fs_type = fs_type_of(&file);
    let lbs = file_dio_align(&access).unwrap_or(512);
    check_direct(plan, &path, &access, lbs, fs_type.as_deref())?;
    // A large layout is said before it starts, even without --progress.
    if announce || size >= LARGE_LAYOUT {
        eprintln!(
            "ringlab: laying out {} at {}",
            format_bytes(size),
            path.display()
        );
    }
    lay_out(&mut file, size, plan, interrupted)
        .with_context(|| format!("laying out {}", path.display()))?;
    // Marked, so that a kept file can be written again without
    // --allow-destructive.
    crate::named::mark(&file);
    let dev = file.metadata().map(|m| m.dev()).unwrap_or(0);
    Ok(Target {
        path: shown,
        kind: TargetKind::File,
        size,
        region: region / plan.bs * plan.bs,
        logical_block_size: lbs,
        fs_type,
        scheduler: scheduler_of(dev, TargetKind::File),
        created: Some(guard),
    })
}

/// Fills a new file with real data (never sparse): the verify pattern in
/// blocks of --bs when --verify is on, pseudo-random bytes otherwise.
pub(crate) fn lay_out(
    file: &mut File,
    size: u64,
    plan: &IoPlan,
    interrupted: &AtomicBool,
) -> Result<()> {
    // fio's fallocate=: a job that reads nothing gets no data written.
    if let (Some(mode), false) = (plan.fallocate, plan.reads()) {
        return crate::layout::allocate(file, size, mode);
    }
    let chunk_len = ((1u64 << 20).max(plan.bs) / plan.bs * plan.bs) as usize;
    let mut chunk = vec![0u8; chunk_len];
    let mut written = 0u64;
    while written < size {
        if interrupted.load(Ordering::Relaxed) {
            return Err(ringlab_core::error::Interrupted(
                "interrupted before the run: nothing was measured".to_string(),
            )
            .into());
        }
        let n = chunk_len.min((size - written) as usize);
        let buf = &mut chunk[..n];
        if plan.verify {
            let mut blocks = buf.chunks_exact_mut(plan.bs as usize);
            let mut off = written;
            for b in &mut blocks {
                verify::stamp(b, off, 0);
                off += plan.bs;
            }
            verify::fill_payload(blocks.into_remainder(), off);
        } else {
            verify::fill_payload(buf, written ^ plan.seed);
        }
        file.write_all(buf)?;
        written += n as u64;
    }
    file.sync_data()?;
    Ok(())
}

fn free_space(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we own.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // ramfs and some others report no size at all: nothing to check.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 || st.f_blocks == 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

fn blkdev_size(fd: &OwnedFd) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64.
    if unsafe { libc::ioctl(fd.as_raw_fd(), BLKGETSIZE64 as _, &mut size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

fn blkdev_logical_block_size(fd: &OwnedFd) -> Option<u32> {
    let mut lbs: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int.
    if unsafe { libc::ioctl(fd.as_raw_fd(), BLKSSZGET as _, &mut lbs) } != 0 || lbs <= 0 {
        return None;
    }
    Some(lbs as u32)
}

/// O_DIRECT offset alignment of a file (statx STATX_DIOALIGN, Linux 6.1+).
fn file_dio_align(path: &Path) -> Option<u32> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statx fills the zeroed struct we own.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statx(libc::AT_FDCWD, c.as_ptr(), 0, STATX_DIOALIGN, &mut stx) };
    if rc != 0 || stx.stx_mask & STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return None;
    }
    Some(stx.stx_dio_offset_align)
}

/// The file system type of an open file, by its statfs magic.
fn fs_type_of(f: &impl AsRawFd) -> Option<String> {
    // SAFETY: fstatfs fills the zeroed struct we own.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(f.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    let magic = st.f_type as u64 & 0xffff_ffff;
    let name = match magic {
        0xef53 => "ext4",
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58f6 => "ramfs",
        0x794c_7630 => "overlayfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        0x2fc1_2fc1 => "zfs",
        0xf2f5_2010 => "f2fs",
        0x4d44 => "vfat",
        0x5346_544e => "ntfs",
        0x6462_6720 => "debugfs",
        0x6265_6572 => "sysfs",
        0x9fa0 => "proc",
        0x0102_1997 => "9p",
        0xca45_1a4e => "bcachefs",
        _ => return Some(format!("{magic:#x}")),
    };
    Some(name.to_string())
}

fn sysfs_dev_dir(dev: u64) -> PathBuf {
    PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
}

/// The I/O scheduler of the device holding the target (its whole disk for
/// a partition).
fn scheduler_of(dev: u64, _kind: TargetKind) -> Option<String> {
    let dir = sysfs_dev_dir(dev);
    let text = fs::read_to_string(dir.join("queue/scheduler"))
        .or_else(|_| fs::read_to_string(dir.join("../queue/scheduler")))
        .ok()?;
    let active = text
        .split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string());
    active.or_else(|| Some(text.trim().to_string()))
}

/// The device behind `path` (a block device, or the one holding a file or
/// directory) and whether it has poll queues (`queue/io_poll`); `None`
/// where sysfs does not say.
pub fn poll_queues(path: &Path) -> Option<(String, bool)> {
    let meta = fs::metadata(path).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let dir = sysfs_dev_dir(dev);
    let queue = if dir.join("partition").exists() {
        dir.join("../queue")
    } else {
        dir.join("queue")
    };
    let poll = fs::read_to_string(queue.join("io_poll")).ok()?;
    let name = fs::canonicalize(queue.join(".."))
        .ok()?
        .file_name()?
        .to_string_lossy()
        .into_owned();
    Some((name, poll.trim() == "1"))
}

/// The mount points of device `devno` ("MAJ:MIN") in this mount namespace.
fn mount_point_of(devno: &str) -> Option<String> {
    let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        let f: Vec<&str> = line.split(' ').collect();
        (f.len() >= 5 && f[2] == devno).then(|| f[4].to_string())
    })
}

/// Whether `path` (by inode) is an active swap area in /proc/swaps.
fn is_swap(meta: &fs::Metadata) -> bool {
    let Ok(swaps) = fs::read_to_string("/proc/swaps") else {
        return false;
    };
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        // /proc/swaps escapes spaces in names as \040.
        .map(|p| p.replace("\\040", " "))
        .filter_map(|p| fs::metadata(p).ok())
        .any(|m| {
            if meta.file_type().is_block_device() {
                m.file_type().is_block_device() && m.rdev() == meta.rdev()
            } else {
                m.dev() == meta.dev() && m.ino() == meta.ino()
            }
        })
}

/// Opens a block device for writing with O_EXCL, as mount and mkfs do: the
/// kernel answers EBUSY when the device is mounted in any mount namespace,
/// held by device mapper or RAID, in use as swap, or opened exclusively by
/// another program.
fn claimed_by_someone(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; the descriptor is closed at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_EXCL | libc::O_CLOEXEC) };
    if fd >= 0 {
        // SAFETY: fd was just opened by us.
        unsafe { libc::close(fd) };
        return false;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EBUSY)
}

/// Why writing to this block device would destroy something, if it would.
pub fn block_device_in_use(path: &Path, dev: u64) -> Option<String> {
    let dir = sysfs_dev_dir(dev);
    let partitions: Vec<(String, String)> = fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("partition").exists())
        .filter_map(|e| {
            let devno = fs::read_to_string(e.path().join("dev")).ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                devno.trim().to_string(),
            ))
        })
        .collect();
    let own = format!("{}:{}", libc::major(dev), libc::minor(dev));
    if let Some(at) = mount_point_of(&own) {
        return Some(format!("it is mounted at {at}"));
    }
    for (name, devno) in &partitions {
        if let Some(at) = mount_point_of(devno) {
            return Some(format!("its partition {name} is mounted at {at}"));
        }
    }
    if fs::metadata(path).is_ok_and(|m| is_swap(&m)) {
        return Some("it is in use as swap".to_string());
    }
    let holders: Vec<String> = fs::read_dir(dir.join("holders"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !holders.is_empty() {
        return Some(format!(
            "it is held by {} (device mapper, LVM or RAID)",
            holders.join(", ")
        ));
    }
    for (name, _) in &partitions {
        let held = fs::read_dir(dir.join(name).join("holders"))
            .into_iter()
            .flatten()
            .count();
        if held > 0 {
            return Some(format!(
                "its partition {name} is held by device mapper, LVM or RAID"
            ));
        }
    }
    if claimed_by_someone(path) {
        return Some(
            "it is in use (the kernel refuses an exclusive open: mounted in another mount namespace, \
             held by device mapper or RAID, swap, or opened exclusively by another program)"
                .to_string(),
        );
    }
    if !partitions.is_empty() {
        let names: Vec<&str> = partitions.iter().map(|(n, _)| n.as_str()).collect();
        return Some(format!("it has a partition table ({})", names.join(", ")));
    }
    match crate::blkid::probe(path) {
        Some(crate::blkid::Found::Signature(t)) => {
            return Some(format!("it holds {} (libblkid)", describe_blkid(&t)))
        }
        Some(crate::blkid::Found::Ambivalent) => {
            return Some(
                "it holds several contradictory signatures (libblkid; see `wipefs`)".to_string(),
            )
        }
        // libblkid is strict (an MBR needs valid entries); the built-in
        // table still has its say.
        Some(crate::blkid::Found::Nothing) | None => {}
    }
    // The built-in table of the common signatures (all there is where
    // libblkid is missing).
    let mut head = vec![0u8; 128 << 10];
    let n = File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(0))?;
            let mut total = 0;
            while total < head.len() {
                let r = f.read(&mut head[total..])?;
                if r == 0 {
                    break;
                }
                total += r;
            }
            Ok(total)
        })
        .unwrap_or(0);
    signature(&head[..n]).map(|s| format!("it holds {s}"))
}

/// blkid's TYPE or PTTYPE in words.
fn describe_blkid(t: &str) -> String {
    match t {
        "swap" => "a swap signature".to_string(),
        "crypto_LUKS" => "a LUKS volume".to_string(),
        "LVM2_member" => "an LVM physical volume".to_string(),
        "linux_raid_member" => "a Linux RAID member".to_string(),
        "ext2" | "ext3" | "ext4" => format!("an {t} file system (ext2/3/4)"),
        "dos partition table" => "an MBR (dos) partition table".to_string(),
        "gpt partition table" => "a GPT partition table".to_string(),
        t if t.ends_with("partition table") => format!("a {t}"),
        t => format!("a {t} signature"),
    }
}

/// Why writing to this regular file would destroy something, if it would:
/// it backs a loop device (whose file system may be mounted), or it is an
/// active swap file.
pub fn file_in_use(path: &Path, meta: &fs::Metadata) -> Option<String> {
    if is_swap(meta) {
        return Some("it is an active swap file".to_string());
    }
    if let Some((loop_dev, devno)) = loop_devices_backed_by(path, meta).into_iter().next() {
        let state = if let Some(at) = mount_point_of(&devno) {
            format!("mounted at {at}")
        } else if fs::metadata(&loop_dev).is_ok_and(|m| is_swap(&m)) {
            "in use as swap".to_string()
        } else if claimed_by_someone(&loop_dev) {
            "in use: mounted in another mount namespace, or held".to_string()
        } else {
            "attached, its data in use through it".to_string()
        };
        return Some(format!(
            "it backs loop device {}, {state}",
            loop_dev.display()
        ));
    }
    None
}

/// The loop devices (`/dev/loopN`, "MAJ:MIN") whose backing file is `path`,
/// found by inode through sysfs.
fn loop_devices_backed_by(path: &Path, meta: &fs::Metadata) -> Vec<(PathBuf, String)> {
    let canon = path.canonicalize().ok();
    fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop"))
        .filter_map(|e| {
            let backing = fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            let backing = backing.trim_end_matches('\n');
            let backing = backing.strip_suffix(" (deleted)").unwrap_or(backing);
            let same = fs::metadata(backing)
                .map(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
                .unwrap_or(false)
                || canon.as_deref() == Some(Path::new(backing));
            if !same {
                return None;
            }
            let devno = fs::read_to_string(e.path().join("dev")).ok()?;
            Some((
                Path::new("/dev").join(e.file_name()),
                devno.trim().to_string(),
            ))
        })
        .collect()
}

/// Names the file system, volume or partition-table signature in the first
/// bytes of a device, if any (the built-in table, used where libblkid is
/// missing).
pub fn signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    let checks: [(usize, &[u8], &'static str); 23] = [
        (1080, &[0x53, 0xef], "an ext2/3/4 file system"),
        (0, b"XFSB", "an XFS file system"),
        (0x10040, b"_BHRfS_M", "a btrfs file system"),
        (4086, b"SWAPSPACE2", "a swap signature"),
        (4086, b"SWAP-SPACE", "a swap signature"),
        (0, b"LUKS\xba\xbe", "a LUKS volume"),
        (512, b"LABELONE", "an LVM physical volume"),
        (512, b"EFI PART", "a GPT partition table"),
        (32769, b"CD001", "an ISO 9660 file system"),
        (0, b"hsqs", "a squashfs file system"),
        (1024, &[0x10, 0x20, 0xf5, 0xf2], "an F2FS file system"),
        (3, b"NTFS    ", "an NTFS file system"),
        (82, b"FAT32", "a FAT file system"),
        (54, b"FAT1", "a FAT file system"),
        (0, &[0x45, 0x3d, 0xcd, 0x28], "a cramfs file system"),
        (512, &[0x45, 0x3d, 0xcd, 0x28], "a cramfs file system"),
        (1024, &[0xe2, 0xe1, 0xf5, 0xe0], "an EROFS file system"),
        (
            0x1000,
            &[0xfc, 0x4e, 0x2b, 0xa9],
            "a Linux RAID member (md 1.2)",
        ),
        (0x1018, b"ReIsEr", "a ReiserFS file system"),
        (0x8000, b"JFS1", "a JFS file system"),
        (0, b"BCH ", "a bcachefs file system"),
        (1024 + 24, &[0x5a, 0x4d], "a minix v3 file system"),
        (3, b"EXFAT   ", "an exFAT file system"),
    ];
    for (off, magic, what) in checks {
        if at(off, magic) {
            return Some(what);
        }
    }
    // minix v1/v2: s_magic (little endian) at 1024 + 16.
    if let Some(m) = head.get(1040..1042) {
        if matches!(
            u16::from_le_bytes([m[0], m[1]]),
            0x137f | 0x138f | 0x2468 | 0x2478
        ) {
            return Some("a minix file system");
        }
    }
    if at(510, &[0x55, 0xaa]) {
        return Some("an MBR partition table or boot sector");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procfs_takes_no_nonblocking_io_and_a_regular_file_does() {
        let mut buf = vec![0u8; 4096];
        // procfs files have no FMODE_NOWAIT.
        let proc = File::open("/proc/self/stat").unwrap();
        assert_eq!(takes_nowait(proc.as_fd(), &mut buf), Some(false));
        // ext4, xfs, btrfs and tmpfs set FMODE_NOWAIT on regular files.
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7u8; 8192]).unwrap();
        assert_eq!(takes_nowait(file.as_fd(), &mut buf), Some(true));
        // A descriptor not open for reading: not asked.
        let wronly = OpenOptions::new().write(true).open("/dev/null").unwrap();
        assert_eq!(takes_nowait(wronly.as_fd(), &mut buf), None);
    }

    #[test]
    fn signatures() {
        let mut ext4 = vec![0u8; 4096];
        ext4[1080] = 0x53;
        ext4[1081] = 0xef;
        assert_eq!(signature(&ext4), Some("an ext2/3/4 file system"));
        let mut mbr = vec![0u8; 4096];
        mbr[510] = 0x55;
        mbr[511] = 0xaa;
        assert_eq!(
            signature(&mbr),
            Some("an MBR partition table or boot sector")
        );
        let mut gpt = mbr.clone();
        gpt[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(signature(&gpt), Some("a GPT partition table"));
        let mut minix = vec![0u8; 4096];
        minix[1040..1042].copy_from_slice(&0x138fu16.to_le_bytes());
        assert_eq!(signature(&minix), Some("a minix file system"));
        let mut minix3 = vec![0u8; 4096];
        minix3[1048..1050].copy_from_slice(&0x4d5au16.to_le_bytes());
        assert_eq!(signature(&minix3), Some("a minix v3 file system"));
        let mut cramfs = vec![0u8; 4096];
        cramfs[0..4].copy_from_slice(&0x28cd3d45u32.to_le_bytes());
        assert_eq!(signature(&cramfs), Some("a cramfs file system"));
        assert_eq!(signature(&vec![0u8; 70_000]), None);
        assert_eq!(signature(&[]), None);
    }
}
