//! Trims: how one is issued, and whether a target can take them.
//!
//! fio 3.33 trims with the BLKDISCARD ioctl on every engine (psync, libaio,
//! io_uring, posixaio: `do_io_u_trim`, synchronously, on the job's thread),
//! which only a block device takes: on a regular file its trim fails with
//! ENOTTY and the job ends with error 25. fio 3.38's io_uring engine
//! submits trims as `IORING_OP_URING_CMD` (`BLOCK_URING_CMD_DISCARD`),
//! still block devices only. `ringlab fio` does what fio 3.33 does.
//!
//! `ringlab io --rw trim` on a regular file punches a hole instead
//! (`fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`, what fio's
//! `falloc` engine does for a trim), the file-system counterpart of a
//! discard. Every engine issues trims the same way, synchronously, as fio.

use crate::plan::IoPlan;
use anyhow::{bail, Result};
use std::os::fd::RawFd;
use std::path::Path;

/// How a job trims its target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimHow {
    /// ioctl(BLKDISCARD): a block device (fio's only way).
    #[default]
    Discard,
    /// fallocate(PUNCH_HOLE | KEEP_SIZE): a regular file.
    PunchHole,
}

/// BLKDISCARD: _IO(0x12, 119).
const BLKDISCARD: libc::c_ulong = 0x1277;

/// How the job with `fd` trims: BLKDISCARD on a block device or where
/// fio's meaning is asked for (`--trim-blkdiscard`), a punched hole on a
/// regular file.
pub fn how(plan: &IoPlan, fd: RawFd) -> TrimHow {
    if plan.trim_blkdiscard {
        return TrimHow::Discard;
    }
    // SAFETY: fstat writes into the zeroed struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is the job's open target; st is valid for writing.
    let rc = unsafe { libc::fstat(fd, &mut st) };
    if rc == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFBLK {
        TrimHow::Discard
    } else {
        TrimHow::PunchHole
    }
}

/// Trims `len` bytes at `offset`: `len` when done, else the negative
/// errno (as a completion carries it).
#[inline]
pub fn trim(fd: RawFd, how: TrimHow, offset: u64, len: u32) -> i64 {
    let rc = match how {
        TrimHow::Discard => {
            let range: [u64; 2] = [offset, len as u64];
            // SAFETY: BLKDISCARD reads two u64 from the pointer, which
            // points at `range` for the duration of the call.
            unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) }
        }
        // SAFETY: fallocate takes plain integers.
        TrimHow::PunchHole => unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        },
    };
    crate::job_error::or_errno(rc.into(), len as i64)
}

/// Whether the target at `path` (a block device's name or a file) can be
/// trimmed, checked before any I/O: a device without discard
/// (`/sys/block/X/queue/discard_max_bytes` = 0) is refused with the
/// reason; a regular file is probed with a hole punched past its end (no
/// data changes), which a file system without punch hole refuses.
pub fn check(path: &Path, plan: &IoPlan) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        // A file still to be laid out: probed once it exists.
        Err(_) => return Ok(()),
    };
    use std::os::unix::fs::FileTypeExt;
    if meta.file_type().is_block_device() {
        use std::os::unix::fs::MetadataExt;
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        let queue = Path::new("/sys/dev/block")
            .join(format!("{major}:{minor}"))
            .join("queue/discard_max_bytes");
        // A partition has no queue of its own: its disk's is one up.
        let queue = if queue.exists() {
            queue
        } else {
            Path::new("/sys/dev/block")
                .join(format!("{major}:{minor}"))
                .join("../queue/discard_max_bytes")
        };
        match std::fs::read_to_string(&queue) {
            Ok(v) if v.trim() == "0" => bail!(
                "{}: the device cannot discard ({} is 0), so --rw {} has nothing to do: use a device that supports discard (an SSD, zram, a loop device over a file)",
                path.display(),
                queue.display(),
                plan.rw.name()
            ),
            _ => return Ok(()),
        }
    }
    if plan.trim_blkdiscard {
        // fio's way on a file: BLKDISCARD fails with ENOTTY at the first
        // trim, and the job ends with error 25, as in fio 3.33.
        return Ok(());
    }
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    use std::os::fd::AsRawFd;
    let end = meta.len().next_multiple_of(1 << 20) + (1 << 20);
    match trim(f.as_raw_fd(), TrimHow::PunchHole, end, 4096) {
        r if r >= 0 => Ok(()),
        r => bail!(
            "{}: its file system cannot punch holes ({}), so --rw {} cannot trim it: use a file on ext4, xfs, btrfs or tmpfs, or a block device that supports discard",
            path.display(),
            std::io::Error::from_raw_os_error((-r) as i32),
            plan.rw.name()
        ),
    }
}

/// What fio's trim (BLKDISCARD) answers on `path` when the answer is
/// known before any I/O: the errno of a target that is not a block device
/// (a regular file, or a new one, probed through its directory), which no
/// trim there can escape; `None` for a block device (its trims may work)
/// or a path that cannot be looked at. The probe discards nothing: a range
/// of zero bytes, on a file that takes no discard.
pub fn discard_refused(path: &Path) -> Option<i32> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    let probe = match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => return None,
        Ok(m) if m.is_file() => path.to_path_buf(),
        Ok(_) => return None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(dir) => dir.to_path_buf(),
                None => std::path::PathBuf::from("."),
            }
        }
        Err(_) => return None,
    };
    let f = std::fs::File::open(&probe).ok()?;
    let range: [u64; 2] = [0, 0];
    // SAFETY: BLKDISCARD reads two u64 from the pointer, which points at
    // `range` for the duration of the call; the fd is open.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKDISCARD as _, range.as_ptr()) };
    if rc < 0 {
        std::io::Error::last_os_error().raw_os_error()
    } else {
        None
    }
}
