//! Tracepoint counters through `perf_event_open` (counting mode, no
//! sampling, no BPF): one descriptor per tracepoint for the process and the
//! threads it creates afterwards (`inherit`), or one per CPU for
//! system-wide events.
//!
//! perf_event_open and its ioctls stay hand-rolled (through
//! perf-event-open-sys): rustix has no wrapper for them. Everything else
//! here (mount, read, gettid) goes through rustix.

use perf_event_open_sys::{bindings, ioctls, perf_event_open};
use rustix::mount::MountFlags;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const TRACEFS: &str = "/sys/kernel/tracing";

/// Where tracefs is found: its own mount point, or inside debugfs.
const TRACEFS_ROOTS: [&str; 2] = [TRACEFS, "/sys/kernel/debug/tracing"];

/// Why tracefs could not be made available, or `None` once its event
/// directory is there. Like perf, which mounts tracefs on first use, ringlab
/// mounts it at /sys/kernel/tracing when no tracefs is mounted (a fresh VM
/// often has none): tracepoint ids are read from there, and without them no
/// tracepoint can be counted. Tried once per process.
fn tracefs_problem() -> Option<String> {
    static PROBLEM: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PROBLEM
        .get_or_init(|| {
            let events = |root: &str| std::path::Path::new(&format!("{root}/events")).is_dir();
            if TRACEFS_ROOTS.iter().any(|r| events(r)) {
                return None;
            }
            // Mounted, yet its events cannot be seen: the mount point is
            // closed to this user (the kernel mounts it mode 0700).
            if let Some(root) = TRACEFS_ROOTS.iter().find(|r| is_tracefs_mount(r)) {
                return Some(unreadable_tracefs(root));
            }
            let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
            let mounted = rustix::mount::mount("nodev", TRACEFS, "tracefs", flags, None);
            match mounted {
                Ok(()) if events(TRACEFS) => None,
                Ok(()) => Some(format!(
                    "mounted tracefs at {TRACEFS} but it has no events directory: kernel without CONFIG_TRACING?"
                )),
                Err(e) => Some(mount_failed(e.into())),
            }
        })
        .clone()
}

/// Whether a tracefs is mounted at `root`, per /proc/self/mounts (which
/// any user can read, unlike the mount point itself).
fn is_tracefs_mount(root: &str) -> bool {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts.lines().any(|l| {
        let mut f = l.split_whitespace();
        let (point, fstype) = (f.nth(1), f.next());
        point == Some(root) && fstype == Some("tracefs")
    })
}

fn unreadable_tracefs(root: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let how = match fs::metadata(root) {
        Ok(m) => format!("mode {:04o}, owner uid {}", m.mode() & 0o7777, m.uid()),
        Err(e) => e.to_string(),
    };
    format!(
        "tracefs is mounted at {root} but this user cannot read it ({how}; the kernel's default lets only root in): run as root, or open it up (chmod 0755 {root}) and allow counting (CAP_PERFMON or kernel.perf_event_paranoid=-1)"
    )
}

fn mount_failed(e: io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "tracefs is not mounted and mounting it needs root ({e}): run as root, or mount -t tracefs nodev {TRACEFS}"
        ),
        _ => format!(
            "tracefs is not mounted and mounting it at {TRACEFS} failed ({e}): kernel without CONFIG_TRACING, or mount it elsewhere and bind it there"
        ),
    }
}

pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// A shared mapping of a kernel buffer (a perf event's ring, a BPF ring
/// buffer map), unmapped when dropped.
pub(crate) struct SharedMapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping belongs to this value alone; whoever owns it is the
// only one to read it through `ptr`.
unsafe impl Send for SharedMapping {}

impl SharedMapping {
    /// Maps `len` bytes of `fd` at `offset`, MAP_SHARED, read-only unless
    /// `writable`.
    pub(crate) fn new(fd: i32, len: usize, writable: bool, offset: usize) -> io::Result<Self> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping of a descriptor the caller holds open;
        // nothing else is at the address the kernel picks.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMapping {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, with its length.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A field's offset in a tracepoint's raw record, from its format file
/// (`events/SYSTEM/EVENT/format` under tracefs).
pub(crate) fn field_offset(tracepoint: &str, field: &str) -> Result<usize, String> {
    let (path, text) = event_file(tracepoint, "format")?;
    for line in text.lines() {
        let mut parts = line.trim().split(';').map(str::trim);
        let Some(decl) = parts.next().and_then(|d| d.strip_prefix("field:")) else {
            continue;
        };
        if decl.split_whitespace().last() != Some(field) {
            continue;
        }
        if let Some(off) = parts.find_map(|p| p.strip_prefix("offset:")) {
            return off
                .parse()
                .map_err(|_| format!("{path}: offset of {field} is not a number"));
        }
    }
    Err(format!("{path} has no field {field}"))
}

/// The id of tracepoint `system:event`, from tracefs.
pub fn event_id(name: &str) -> Result<u64, String> {
    let (path, text) = event_file(name, "id")?;
    text.trim()
        .parse()
        .map_err(|_| format!("{path} does not hold a number"))
}

/// One file of tracepoint `system:event`'s tracefs directory (`id`,
/// `format`): its path and text. Mounts tracefs first where none is
/// mounted, and looks in each place tracefs is found.
fn event_file(name: &str, file: &str) -> Result<(String, String), String> {
    let (system, event) = name
        .split_once(':')
        .ok_or_else(|| format!("{name} is not system:event"))?;
    if let Some(problem) = tracefs_problem() {
        return Err(problem);
    }
    let mut last_err = String::new();
    for root in TRACEFS_ROOTS {
        let path = format!("{root}/events/{system}/{event}/{file}");
        match fs::read_to_string(&path) {
            Ok(text) => return Ok((path, text)),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                last_err = format!(
                    "cannot read {path} ({e}): tracefs is readable by root only; run as root"
                );
            }
            Err(e) if last_err.is_empty() => {
                last_err = format!(
                    "tracepoint missing ({path}: {e}): this kernel lacks it (tracefs is mounted, the event is not there)"
                );
            }
            Err(_) => {}
        }
    }
    Err(last_err)
}

/// Why perf_event_open refused, in words a user can act on.
fn open_error(e: io::Error) -> String {
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "no permission ({e}): tracepoint counting needs root or CAP_PERFMON, or kernel.perf_event_paranoid=-1 (it is {paranoid})"
        ),
        Some(libc::ENOENT) | Some(libc::ENODEV) => {
            format!("tracepoint not available for counting ({e})")
        }
        Some(libc::EMFILE) => format!("out of file descriptors ({e}): raise `ulimit -n`"),
        Some(libc::ENOSYS) => {
            "perf_event_open is not available (ENOSYS): kernel without CONFIG_PERF_EVENTS, or a seccomp filter".to_string()
        }
        _ => format!("perf_event_open failed: {e}"),
    }
}

/// One tracepoint counted on one or more descriptors (one per CPU for
/// system-wide events), summed on read.
pub struct TracepointCounter {
    pub name: String,
    fds: Vec<OwnedFd>,
}

impl TracepointCounter {
    /// Opens `name` (`system:event`) disabled: for the calling thread and
    /// the threads it creates from now on (and the kernel helper threads
    /// those cause), or on every CPU in `system_wide`.
    pub fn open(name: &str, system_wide: bool) -> Result<TracepointCounter, String> {
        let targets: Vec<(libc::pid_t, libc::c_int)> = if system_wide {
            online_cpus()
                .into_iter()
                .map(|c| (-1, c as libc::c_int))
                .collect()
        } else {
            // The calling thread, and every thread it creates from now on.
            vec![(rustix::thread::gettid().as_raw_nonzero().get(), -1)]
        };
        Self::open_on(name, &targets, !system_wide)
    }

    /// Opens `name` disabled on each of the threads `tids` and the threads
    /// they create from now on. A thread that has exited meanwhile is left
    /// out; an error only if none could be counted.
    pub fn open_threads(name: &str, tids: &[libc::pid_t]) -> Result<TracepointCounter, String> {
        let targets: Vec<_> = tids.iter().map(|&t| (t, -1)).collect();
        Self::open_on(name, &targets, true)
    }

    fn open_on(
        name: &str,
        targets: &[(libc::pid_t, libc::c_int)],
        inherit: bool,
    ) -> Result<TracepointCounter, String> {
        let id = event_id(name)?;
        let mut attr = bindings::perf_event_attr {
            type_: bindings::PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<bindings::perf_event_attr>() as u32,
            config: id,
            ..Default::default()
        };
        attr.set_disabled(1);
        attr.set_inherit(u64::from(inherit));
        let mut fds = Vec::with_capacity(targets.len());
        let mut last_err = None;
        for &(pid, cpu) in targets {
            // SAFETY: attr is a fully initialised perf_event_attr.
            let fd = unsafe {
                perf_event_open(&mut attr, pid, cpu, -1, bindings::PERF_FLAG_FD_CLOEXEC as _)
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                // A thread gone between listing and opening has nothing
                // left to count.
                if pid > 0 && e.raw_os_error() == Some(libc::ESRCH) {
                    continue;
                }
                last_err = Some(open_error(e));
                break;
            }
            // SAFETY: a new descriptor owned by nobody else.
            fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        match last_err {
            Some(e) => Err(e),
            None if fds.is_empty() => Err(format!("{name}: no thread left to count")),
            None => Ok(TracepointCounter {
                name: name.to_string(),
                fds,
            }),
        }
    }

    fn each(&self, f: unsafe fn(libc::c_int, libc::c_uint) -> libc::c_int) {
        for fd in &self.fds {
            // SAFETY: fd is a perf event descriptor we own.
            unsafe { f(fd.as_raw_fd(), 0) };
        }
    }

    /// Starts counting from zero.
    pub fn enable(&self) {
        self.each(ioctls::RESET);
        self.each(ioctls::ENABLE);
    }

    pub fn disable(&self) {
        self.each(ioctls::DISABLE);
    }

    /// The count so far (children included).
    pub fn read(&self) -> io::Result<u64> {
        let mut total = 0u64;
        for fd in &self.fds {
            // One u64 (read_format 0).
            let mut v = [0u8; 8];
            let n = rustix::io::read(fd, &mut v)?;
            if n != 8 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("a perf counter read gave {n} bytes, not 8"),
                ));
            }
            total += u64::from_ne_bytes(v);
        }
        Ok(total)
    }
}

/// CPUs online now.
pub fn online_cpus() -> Vec<u32> {
    crate::host::online_cpu_list()
}
