//! Every file ringlab writes goes through here: results (`--output`), fio's
//! logs, report pages and plots, recipe data, laid-out targets.
//!
//! - [`check_dest`] refuses, before anything runs, a destination whose
//!   replacement could destroy data: a directory, a device, a FIFO or
//!   socket, the command's own target, or an existing file ringlab did not
//!   write (it carries no [`WRITTEN_XATTR`]) unless `--overwrite-files`.
//! - [`NewFile`] is written beside the destination (an unnamed `O_TMPFILE`,
//!   or where the file system has none a `.NAME.ringlab-PID.tmp` name) and
//!   renamed over it by [`NewFile::commit`]; dropped uncommitted, it leaves
//!   nothing.
//! - Named temporary files are tracked in a table the signal handler reads
//!   ([`unlink_temps`], async-signal-safe): the first signals end the run,
//!   which drops them; the third, which ends the process at once, unlinks
//!   them first. If the process is killed (SIGKILL), the cleaner process
//!   ([`crate::cleaner`]) removes them as soon as it is gone; a later run
//!   removes any a cleaner could not (none ran) before it opens its own
//!   ([`remove_stale_temps`]).
//! - [`check_free_space`] refuses a layout or growth the file system cannot
//!   hold.

use crate::error::usage_error;
use anyhow::{Context, Result};
use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;
use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The extended attribute on every file ringlab wrote through [`NewFile`]:
/// such a file may be replaced by a later run without asking.
pub const WRITTEN_XATTR: &str = "user.ringlab.written";

/// `--overwrite-files`: existing files ringlab did not write may be
/// replaced.
static OVERWRITE: AtomicBool = AtomicBool::new(false);

/// Sets `--overwrite-files` for the process.
pub fn allow_overwrite(on: bool) {
    OVERWRITE.store(on, Ordering::SeqCst);
}

/// Whether ringlab wrote `path` (it carries [`WRITTEN_XATTR`]); `None`
/// where the file system keeps no user attributes.
pub fn written_by_ringlab(path: &Path) -> Option<bool> {
    has_xattr(path, WRITTEN_XATTR)
}

/// Marks an open file as written by ringlab; `false` where the file system
/// keeps no user attributes.
pub fn mark_written(file: &File) -> bool {
    set_xattr_flag(file, WRITTEN_XATTR)
}

/// Whether `path` carries the user attribute `name`; `None` where the file
/// system keeps no user attributes.
pub fn has_xattr(path: &Path, name: &str) -> Option<bool> {
    let (Ok(p), Ok(name)) = (
        CString::new(path.as_os_str().as_bytes()),
        CString::new(name),
    ) else {
        return Some(false);
    };
    let mut buf = [0u8; 8];
    // SAFETY: NUL-terminated path and name; the buffer is ours, of the
    // length given.
    let n = unsafe {
        libc::getxattr(
            p.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n >= 0 {
        return Some(true);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOTSUP) => None,
        _ => Some(false),
    }
}

/// Sets the user attribute `name` (value "1") on an open file; `false`
/// where the file system keeps no user attributes.
pub fn set_xattr_flag(file: &File, name: &str) -> bool {
    let Ok(name) = CString::new(name) else {
        return false;
    };
    let value = b"1";
    // SAFETY: a valid fd, a NUL-terminated name, and a value buffer of the
    // length given.
    let rc = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    rc == 0
}

/// Refuses a destination whose overwriting could destroy data; returns the
/// file to replace (a symlink's target, so the link stays). `opt` names the
/// option in messages (`--output`, `--write-bw-log`); `avoid` lists the
/// files the command works on.
pub fn check_dest(named: &Path, opt: &str, avoid: &[&Path]) -> Result<PathBuf> {
    let meta = match fs::metadata(named) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(named).is_ok() {
                return Err(usage_error(format!(
                    "{opt} {}: a symbolic link to a file that does not exist: name the file itself",
                    named.display()
                )));
            }
            return Ok(named.to_path_buf());
        }
        Err(e) => {
            return Err(usage_error(format!(
                "{opt} {}: cannot inspect it: {e}",
                named.display()
            )))
        }
    };
    let ft = meta.file_type();
    let refuse = |what: &str| {
        Err(usage_error(format!(
            "{opt} {}: refusing to write {} over {what}: name a regular file{}",
            named.display(),
            if opt.starts_with("--write-") {
                "the log"
            } else {
                "the result"
            },
            if opt == "--output" {
                " (or - for standard output)"
            } else {
                ""
            }
        )))
    };
    if ft.is_dir() {
        return refuse("a directory");
    }
    if ft.is_block_device() {
        return refuse("a block device");
    }
    if ft.is_char_device() {
        return refuse("a character device");
    }
    if ft.is_fifo() {
        return refuse("a FIFO");
    }
    if ft.is_socket() {
        return refuse("a socket");
    }
    if !ft.is_file() {
        return refuse("something that is not a regular file");
    }
    for a in avoid {
        if let Ok(m) = fs::metadata(a) {
            if m.dev() == meta.dev() && m.ino() == meta.ino() {
                return Err(usage_error(format!(
                    "{opt} {} is the target {} itself: writing it would destroy the target; name another file",
                    named.display(),
                    a.display()
                )));
            }
        }
    }
    if !OVERWRITE.load(Ordering::SeqCst) && meta.len() > 0 {
        match written_by_ringlab(named) {
            Some(true) => {}
            Some(false) => {
                return Err(usage_error(format!(
                    "{opt} {}: refusing to replace an existing file ringlab did not write (it has no {WRITTEN_XATTR} attribute); name a new file, remove it, or pass --overwrite-files",
                    named.display()
                )))
            }
            None => {
                return Err(usage_error(format!(
                    "{opt} {}: refusing to replace an existing file: its file system keeps no extended attributes, so ringlab cannot tell whether it wrote it; name a new file, remove it, or pass --overwrite-files",
                    named.display()
                )))
            }
        }
    }
    // Replace the file a symlink points at, not the link.
    Ok(fs::canonicalize(named).unwrap_or_else(|_| named.to_path_buf()))
}

/// A file being written: nothing is visible under its name until
/// [`NewFile::commit`]; dropped before, it leaves nothing behind.
#[derive(Debug)]
pub struct NewFile {
    /// The file the result replaces or creates (a symlink resolved).
    dest: PathBuf,
    /// What the user named, and the option, for messages.
    named: PathBuf,
    opt: String,
    file: File,
    /// A named temporary file (only where O_TMPFILE is not supported),
    /// removed unless renamed.
    temp: Option<TempName>,
}

impl NewFile {
    /// Checks `named` ([`check_dest`]) and opens its temporary file in the
    /// destination's directory, so that a bad directory fails at once.
    pub fn create(named: &Path, opt: &str, avoid: &[&Path]) -> Result<NewFile> {
        let dest = check_dest(named, opt, avoid)?;
        Self::open_beside(dest, named, opt)
    }

    /// For the files of a directory ringlab owns (a sweep's index, its
    /// results): replaces what is there without asking whether ringlab
    /// wrote it, but never a directory, device, FIFO or socket.
    pub fn create_own(path: &Path) -> Result<NewFile> {
        if let Ok(m) = fs::metadata(path) {
            if !m.is_file() {
                return Err(usage_error(format!(
                    "{}: refusing to write over something that is not a regular file; remove it",
                    path.display()
                )));
            }
        }
        Self::open_beside(path.to_path_buf(), path, "writing")
    }

    fn open_beside(dest: PathBuf, named: &Path, opt: &str) -> Result<NewFile> {
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let cannot = |e: io::Error| {
            usage_error(format!(
                "{opt} {}: cannot create a file in {}: {e}",
                named.display(),
                dir.display()
            ))
        };
        // Named temporaries of killed runs that no cleaner removed.
        remove_stale_temps(&dest);
        let (file, temp) = match open_unnamed(&dir) {
            Ok(f) => (f, None),
            Err(e)
                if [Errno::OPNOTSUPP, Errno::ISDIR, Errno::INVAL]
                    .iter()
                    .any(|n| e.raw_os_error() == Some(n.raw_os_error())) =>
            {
                let (f, t) = create_temp(&dest).map_err(cannot)?;
                (f, Some(t))
            }
            Err(e) => return Err(cannot(e)),
        };
        Ok(NewFile {
            dest,
            named: named.to_path_buf(),
            opt: opt.to_string(),
            file,
            temp,
        })
    }

    /// The open file, for writers that need it (set_len, sync).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The destination's name as the user gave it.
    pub fn named(&self) -> &Path {
        &self.named
    }

    /// Syncs the file, marks it as ringlab's, and renames it over the
    /// destination. A replaced file's permissions are kept.
    pub fn commit(mut self) -> Result<()> {
        let what = format!("writing {} {}", self.opt, self.named.display());
        self.file.flush().with_context(|| what.clone())?;
        if let Ok(old) = fs::metadata(&self.dest) {
            self.file
                .set_permissions(old.permissions())
                .with_context(|| what.clone())?;
        }
        mark_written(&self.file);
        self.file.sync_all().with_context(|| what.clone())?;
        let temp = match self.temp.take() {
            Some(t) => t,
            None => {
                // Give the unnamed file a name beside the destination, then
                // rename it over the destination.
                // Named for the moment between link and rename only: not
                // worth starting the cleaner for (a SIGKILL right there
                // leaves it to the next run's remove_stale_temps).
                let t = TempName::brief(temp_path(&self.dest));
                link_fd(&self.file, &t.path).with_context(|| what.clone())?;
                t
            }
        };
        fs::rename(&temp.path, &self.dest).with_context(|| what.clone())?;
        temp.forget();
        Ok(())
    }
}

impl Write for NewFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A temporary file's name, unlinked on drop, by the signal handler and,
/// if ringlab is killed, by the cleaner process ([`crate::cleaner`]), until
/// [`TempName::forget`].
#[derive(Debug)]
pub struct TempName {
    pub path: PathBuf,
    slot: Option<usize>,
    watch: Option<u64>,
}

impl TempName {
    /// Tracks `path` (which the caller creates after this).
    pub fn new(path: PathBuf) -> TempName {
        let watch = crate::cleaner::watch(&path, crate::cleaner::Kind::File);
        let slot = register(&path);
        TempName { path, slot, watch }
    }

    /// Tracks `path` for the signal handler only, not the cleaner: for a
    /// name that lives for a moment (linked, then renamed at once).
    pub fn brief(path: PathBuf) -> TempName {
        let slot = register(&path);
        TempName {
            path,
            slot,
            watch: None,
        }
    }

    /// The file was renamed into place: stop tracking it.
    pub fn forget(mut self) {
        if let Some(s) = self.slot.take() {
            unregister(s);
        }
        if let Some(w) = self.watch.take() {
            crate::cleaner::release(w);
        }
        self.path = PathBuf::new();
    }
}

impl Drop for TempName {
    fn drop(&mut self) {
        if let Some(s) = self.slot.take() {
            unregister(s);
        }
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.path);
        }
        if let Some(w) = self.watch.take() {
            crate::cleaner::release(w);
        }
    }
}

/// A temporary directory's name (a database being filled), removed with
/// its contents on drop and, if ringlab is killed, by the cleaner process,
/// until [`TempDirName::forget`].
#[derive(Debug)]
pub struct TempDirName {
    pub path: PathBuf,
    watch: Option<u64>,
}

impl TempDirName {
    /// Tracks `path` (which the caller creates after this).
    pub fn new(path: PathBuf) -> TempDirName {
        let watch = crate::cleaner::watch(&path, crate::cleaner::Kind::Dir);
        TempDirName { path, watch }
    }

    /// The directory was renamed into place: stop tracking it.
    pub fn forget(mut self) {
        if let Some(w) = self.watch.take() {
            crate::cleaner::release(w);
        }
        self.path = PathBuf::new();
    }
}

impl Drop for TempDirName {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = fs::remove_dir_all(&self.path);
        }
        if let Some(w) = self.watch.take() {
            crate::cleaner::release(w);
        }
    }
}

/// A file or directory ringlab made for the length of a command (a
/// recipe's data file, advise's calibration file and results): the caller
/// removes it when done; if ringlab is killed first, the cleaner process
/// ([`crate::cleaner`]) does. Dropping this only stops the watch.
#[derive(Debug)]
pub struct Watched(Option<u64>);

impl Watched {
    /// Watches `path`: a file, or with `dir` a directory and its contents.
    pub fn new(path: &Path, dir: bool) -> Watched {
        let kind = if dir {
            crate::cleaner::Kind::Dir
        } else {
            crate::cleaner::Kind::File
        };
        Watched(crate::cleaner::watch(path, kind))
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(w) = self.0.take() {
            crate::cleaner::release(w);
        }
    }
}

/// A temporary name beside `dest`: `.NAME.ringlab-PID.tmp`.
pub fn temp_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_string());
    dest.with_file_name(format!(".{name}.ringlab-{}.tmp", std::process::id()))
}

/// Creates and tracks a named temporary file beside `dest`.
fn create_temp(dest: &Path) -> io::Result<(File, TempName)> {
    let path = temp_path(dest);
    let t = TempName::new(path);
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(&t.path)?;
    Ok((f, t))
}

/// Removes `.NAME.ringlab-PID.tmp` files beside `dest` whose process is
/// gone (a run killed with SIGKILL could not remove them).
pub fn remove_stale_temps(dest: &Path) {
    let Some(name) = dest.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let prefix = format!(".{name}.ringlab-");
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = f
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid > 0 && !process_alive(pid) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Whether a process `pid` exists (kill with signal 0).
pub fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks the pid.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// An unnamed regular file in `dir` (O_TMPFILE): it vanishes with the
/// process unless [`link_fd`] names it.
fn open_unnamed(dir: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        dir,
        OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )?;
    Ok(File::from(fd))
}

/// Gives the unnamed file `file` the name `to`: linkat follows the /proc
/// magic link to the open file (AT_SYMLINK_FOLLOW).
fn link_fd(file: &File, to: &Path) -> io::Result<()> {
    let from = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, from.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW)?;
    Ok(())
}

/// The table of named temporary files the signal path unlinks: one
/// C string per slot, owned by whoever swaps it out.
const SLOTS: usize = 256;
static TEMPS: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

fn register(path: &Path) -> Option<usize> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let raw = c.into_raw();
    for (i, slot) in TEMPS.iter().enumerate() {
        if slot
            .compare_exchange(
                std::ptr::null_mut(),
                raw,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return Some(i);
        }
    }
    // SAFETY: `raw` came from into_raw above and was stored nowhere.
    drop(unsafe { CString::from_raw(raw) });
    None
}

fn unregister(slot: usize) {
    let p = TEMPS[slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !p.is_null() {
        // SAFETY: the pointer came from CString::into_raw in register, and
        // the swap made this the only owner (the signal path swaps too).
        drop(unsafe { CString::from_raw(p) });
    }
}

/// Unlinks every tracked temporary file. Async-signal-safe: atomics and
/// unlink(2) only (the strings are leaked, the process is ending).
pub fn unlink_temps() {
    for slot in &TEMPS {
        let p = slot.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a NUL-terminated string from CString::into_raw.
            unsafe { libc::unlink(p) };
        }
    }
}

/// Free bytes for an unprivileged writer on the file system holding
/// `path` (or its nearest existing parent).
pub fn free_bytes(path: &Path) -> Option<u64> {
    let mut p = path;
    loop {
        if p.as_os_str().is_empty() {
            p = Path::new(".");
        }
        if let Ok(s) = rustix::fs::statvfs(p) {
            // Root may use the reserved blocks, but a benchmark should not.
            return Some(s.f_bavail.saturating_mul(s.f_frsize));
        }
        p = p.parent()?;
    }
}

/// Refuses to lay out or grow `path` by `grow` bytes when its file system
/// has less free space than that plus a margin (1% of the total or 64 MiB,
/// whichever is less), naming both figures and the fixes.
pub fn check_free_space(path: &Path, grow: u64, what: &str) -> Result<()> {
    if grow == 0 {
        return Ok(());
    }
    let mut p = path;
    let st = loop {
        let q = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        if let Ok(s) = rustix::fs::statvfs(q) {
            break s;
        }
        match p.parent() {
            Some(par) => p = par,
            None => return Ok(()),
        }
    };
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let total = st.f_blocks.saturating_mul(st.f_frsize);
    let margin = (total / 100).min(64 << 20);
    if grow.saturating_add(margin) > free {
        return Err(usage_error(format!(
            "{what} {}: needs {} but its file system has {} free (keeping {} spare); use a smaller --size or --offset, or a file system with room",
            path.display(),
            human(grow),
            human(free),
            human(margin)
        )));
    }
    Ok(())
}

fn human(b: u64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ringlab-files-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_user_file_is_refused_and_a_ringlab_file_replaced() {
        let d = scratch("user");
        let f = d.join("x_bw.1.log");
        fs::write(&f, "precious").unwrap();
        let err = format!(
            "{:#}",
            NewFile::create(&f, "--write-bw-log", &[]).unwrap_err()
        );
        if written_by_ringlab(&f).is_none() {
            assert!(err.contains("keeps no extended attributes"), "{err}");
            return;
        }
        assert!(err.contains("did not write"), "{err}");
        fs::remove_file(&f).unwrap();
        let mut n = NewFile::create(&f, "--write-bw-log", &[]).unwrap();
        n.write_all(b"1, 2, 0, 4096, 0, 0\n").unwrap();
        n.commit().unwrap();
        assert_eq!(written_by_ringlab(&f), Some(true));
        // Ringlab's own file is replaced without asking.
        NewFile::create(&f, "--write-bw-log", &[])
            .unwrap()
            .commit()
            .unwrap();
        assert_eq!(fs::read(&f).unwrap().len(), 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn temps_are_tracked_and_unlinked() {
        let d = scratch("temps");
        let dest = d.join("out");
        let (_f, t) = create_temp(&dest).unwrap();
        assert!(t.path.exists());
        unlink_temps();
        assert!(!t.path.exists());
        drop(t);
        // A stale temp of a dead process is removed; a live one stays.
        let dead = d.join(".out.ringlab-2147483646.tmp");
        let live = d.join(format!(".out.ringlab-{}.tmp", std::process::id()));
        fs::write(&dead, "x").unwrap();
        fs::write(&live, "x").unwrap();
        remove_stale_temps(&dest);
        assert!(!dead.exists());
        assert!(live.exists());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn free_space_is_checked() {
        let d = scratch("free");
        let err = format!(
            "{:#}",
            check_free_space(&d.join("big"), u64::MAX / 2, "--size").unwrap_err()
        );
        assert!(err.contains("free"), "{err}");
        check_free_space(&d.join("small"), 4096, "--size").unwrap();
        fs::remove_dir_all(&d).unwrap();
    }
}
