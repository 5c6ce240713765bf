//! Thin wrappers of the socket calls the drivers and the server make.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// A socket address in the kernel's layout.
pub struct RawAddr {
    pub storage: libc::sockaddr_storage,
    pub len: libc::socklen_t,
}

impl RawAddr {
    pub fn new(addr: &SocketAddr) -> RawAddr {
        // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is larger than sockaddr_in and
                // suitably aligned for it.
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }

    pub fn family(&self) -> libc::c_int {
        self.storage.ss_family as libc::c_int
    }

    pub fn as_ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// A TCP socket with TCP_NODELAY (as wrk), non-blocking if asked.
/// Counts its two system calls in `syscalls`.
pub fn tcp_socket(family: libc::c_int, nonblock: bool, syscalls: &mut u64) -> io::Result<RawFd> {
    let mut ty = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    if nonblock {
        ty |= libc::SOCK_NONBLOCK;
    }
    *syscalls += 2;
    // SAFETY: plain system call with constant arguments.
    let fd = cvt(unsafe { libc::socket(family, ty, 0) })?;
    let one: libc::c_int = 1;
    // SAFETY: `one` outlives the call; the length matches its type.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Starts a non-blocking connect: `Ok(true)` connected at once, `Ok(false)`
/// in progress.
pub fn connect(fd: RawFd, addr: &RawAddr) -> io::Result<bool> {
    // SAFETY: the address points at `addr.len` valid bytes.
    let rc = unsafe { libc::connect(fd, addr.as_ptr(), addr.len) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The pending error of a socket (SO_ERROR), `None` when there is none.
pub fn socket_error(fd: RawFd) -> Option<io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are valid for writes of their sizes.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut err as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc < 0 {
        return Some(io::Error::last_os_error());
    }
    (err != 0).then(|| io::Error::from_raw_os_error(err))
}

pub fn close(fd: RawFd) {
    if fd >= 0 {
        // SAFETY: the caller owns `fd` and never uses it again.
        unsafe { libc::close(fd) };
    }
}

/// `read(2)`: bytes read, 0 at end of stream.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `send(2)` without SIGPIPE.
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// An epoll instance, closed on drop.
pub struct Epoll(pub RawFd);

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain system call.
        Ok(Epoll(cvt(unsafe {
            libc::epoll_create1(libc::EPOLL_CLOEXEC)
        })?))
    }

    pub fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: `ev` is valid for the call.
        cvt(unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) })?;
        Ok(())
    }

    pub fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: `events` is valid for writes of its length.
        let n = unsafe {
            libc::epoll_wait(
                self.0,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(n as usize)
    }
}

/// Whether this kernel has epoll_pwait2 (Linux 5.11): 0 unknown, 1 yes, 2 no.
static PWAIT2: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl Epoll {
    /// epoll_wait with a timeout in nanoseconds (epoll_pwait2, Linux
    /// 5.11), so an open-loop schedule is not rounded up to whole
    /// milliseconds. `Ok(None)` when the kernel lacks epoll_pwait2.
    pub fn wait_ns(
        &self,
        events: &mut [libc::epoll_event],
        timeout_ns: u64,
    ) -> io::Result<Option<usize>> {
        use std::sync::atomic::Ordering;
        if PWAIT2.load(Ordering::Relaxed) == 2 {
            return Ok(None);
        }
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000).min(i64::MAX as u64) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `events` is valid for writes of its length, `ts` for
        // reads; no signal mask (NULL) and its size 0.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.0,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR) => Ok(Some(0)),
                Some(libc::ENOSYS) => {
                    PWAIT2.store(2, Ordering::Relaxed);
                    Ok(None)
                }
                _ => Err(e),
            };
        }
        PWAIT2.store(1, Ordering::Relaxed);
        Ok(Some(n as usize))
    }
}

/// A timerfd (CLOCK_MONOTONIC), for precise sleeps where epoll_pwait2 is
/// missing.
pub struct TimerFd(pub RawFd);

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain system call.
        Ok(TimerFd(cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?))
    }

    /// Fires once after `ns` (0 disarms, so it is at least 1).
    pub fn arm(&self, ns: u64) -> io::Result<()> {
        let ns = ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` is valid for reads; the old value is not wanted.
        cvt(unsafe { libc::timerfd_settime(self.0, 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Consumes an expiry so the descriptor stops being readable.
    pub fn clear(&self) {
        let mut buf = [0u8; 8];
        let _ = read(self.0, &mut buf);
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        close(self.0);
    }
}

/// Sets this thread's timer slack (default 50 µs) so that a timed wait
/// wakes when asked, not up to 50 µs later: open-loop schedules and
/// script delays need it.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a value, no pointer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

impl Drop for Epoll {
    fn drop(&mut self) {
        close(self.0);
    }
}

/// Raises RLIMIT_NOFILE to hold `need` descriptors, or says how.
pub fn ensure_fd_limit(need: u64) -> Result<(), String> {
    // SAFETY: getrlimit writes into the struct we pass.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    if lim.rlim_cur >= need {
        return Ok(());
    }
    let mut want = libc::rlimit {
        rlim_cur: need,
        rlim_max: lim.rlim_max.max(need),
    };
    // SAFETY: setrlimit reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        return Ok(());
    }
    want.rlim_max = lim.rlim_max;
    if need <= lim.rlim_max {
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            return Ok(());
        }
    }
    Err(format!(
        "{need} file descriptors are needed but the limit is {} (hard {}): raise it with 'ulimit -n {need}' (as root, or in /etc/security/limits.conf) or lower --connections",
        lim.rlim_cur, lim.rlim_max
    ))
}

/// Why the kernel refused io_uring (`io_uring_setup` failed with EPERM or
/// ENOSYS) and what to do, for `what` (e.g. "serve --io uring"), naming
/// `fix` (the flag that avoids io_uring); `None` for other errors.
pub fn io_uring_refused(e: &io::Error, what: &str, fix: &str) -> Option<String> {
    let why = refusal(e.raw_os_error()?, ringlab_kstat::host::io_uring_disabled())?;
    Some(format!("{what}: {why}, or use {fix}"))
}

/// Why io_uring_setup failed with `errno`, given kernel.io_uring_disabled.
fn refusal(errno: i32, sysctl: Option<u32>) -> Option<String> {
    Some(match errno {
        libc::EPERM => match sysctl {
            Some(2) => "io_uring is disabled on this host (kernel.io_uring_disabled=2): run `sysctl kernel.io_uring_disabled=0` as root".to_string(),
            Some(1) => "io_uring is limited to the group in kernel.io_uring_group (kernel.io_uring_disabled=1): join that group or run as root".to_string(),
            _ => format!(
                "io_uring_setup was refused (EPERM) although kernel.io_uring_disabled={} allows it: a seccomp filter (container runtime, systemd SystemCallFilter) blocks io_uring; run outside it",
                sysctl.map_or("(absent)".to_string(), |v| v.to_string())
            ),
        },
        libc::ENOSYS => "io_uring is not available (io_uring_setup: ENOSYS): the kernel was built without CONFIG_IO_URING or a seccomp filter hides it".to_string(),
        _ => return None,
    })
}

/// Writes out what C stdio holds for stdout: the Lua scripts' print() and
/// io.write() go through it, fully buffered on a pipe, while ringlab's own
/// report goes through Rust's stdout; flushing at the points wrk's single
/// stdio stream would be in order keeps the script's lines where wrk puts
/// them.
pub fn flush_c_stdio() {
    // SAFETY: fflush(NULL) flushes every open output stream of the C
    // library; it takes no pointer of ours and is thread-safe in glibc.
    unsafe {
        libc::fflush(std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_uring_refusals_name_the_cause() {
        let has = |errno, sysctl, want: &str| {
            let why = refusal(errno, sysctl).unwrap();
            assert!(why.contains(want), "{errno} {sysctl:?}: {why}");
        };
        has(libc::EPERM, Some(2), "kernel.io_uring_disabled=2");
        has(libc::EPERM, Some(1), "kernel.io_uring_group");
        has(libc::EPERM, Some(0), "seccomp");
        has(libc::EPERM, None, "seccomp");
        has(libc::ENOSYS, Some(0), "CONFIG_IO_URING");
        assert_eq!(refusal(libc::EINVAL, Some(0)), None);
        let e = io::Error::from_raw_os_error(libc::EPERM);
        let line = io_uring_refused(&e, "serve --io uring", "--io epoll").unwrap();
        assert!(line.starts_with("serve --io uring: ") && line.ends_with(", or use --io epoll"));
    }
}
