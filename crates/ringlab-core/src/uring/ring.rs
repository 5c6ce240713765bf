//! The one ring builder: every io_uring ring ringlab sets up (the storage
//! engine, the HTTP drivers, the server, probes) is built here from
//! [`UringOptions`], its setup flags ORed in from the knob table. When the
//! kernel refuses, [`explain_setup_error`] retries flag by flag and names the
//! flag and the release that introduced it.
//!
//! `io_uring_setup` is called directly rather than through the io-uring
//! crate's builder, because the crate has no method for every flag
//! (IORING_SETUP_HYBRID_IOPOLL); the crate then maps the ring from the
//! descriptor and the parameters the kernel filled in.

use super::knobs::{knob, UringOptions, KNOBS};
use io_uring::IoUring;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// IORING_REGISTER_RING_FDS.
const REGISTER_RING_FDS: u32 = 20;

/// `struct io_uring_params` (120 bytes): the fields ringlab sets, then the
/// offsets the kernel fills in (io_sqring_offsets, io_cqring_offsets).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct RawParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    offsets: [u64; 10],
}

const _: () = assert!(std::mem::size_of::<RawParams>() == 120);
const _: () =
    assert!(std::mem::size_of::<RawParams>() == std::mem::size_of::<io_uring::Parameters>());

/// Builds a ring of `entries` submission slots with the setup flags and
/// parameters of `o`; `attach` is the ring whose SQPOLL thread and io-wq to
/// share (IORING_SETUP_ATTACH_WQ), used only when `o.attach_wq`.
pub fn build_ring(entries: u32, o: &UringOptions, attach: Option<RawFd>) -> io::Result<IoUring> {
    let mut flags = o.setup_bits();
    let wq_fd = match attach {
        Some(fd) if o.attach_wq => fd as u32,
        _ => {
            flags &= !super::knobs::setup::ATTACH_WQ;
            0
        }
    };
    let mut p = RawParams {
        sq_entries: 0,
        cq_entries: o.cq_size.unwrap_or(0),
        flags,
        sq_thread_cpu: o.sqpoll_cpu.unwrap_or(0),
        // 0 lets the kernel pick its default idle time (one second).
        sq_thread_idle: o.sqpoll_idle_ms.unwrap_or(0),
        features: 0,
        wq_fd,
        resv: [0; 3],
        offsets: [0; 10],
    };
    // SAFETY: io_uring_setup reads and fills one io_uring_params, which `p`
    // is (same layout, checked in size above), for the duration of the call.
    let rc = unsafe { libc::syscall(libc::SYS_io_uring_setup, entries, &mut p as *mut RawParams) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `p` is an io_uring_params as the kernel filled it in, which
    // the crate documents Parameters to be (repr(transparent) over it).
    let params: io_uring::Parameters = unsafe { std::mem::transmute::<RawParams, _>(p) };
    // SAFETY: rc is the descriptor of the ring just set up, owned by nobody
    // else; `params` are the ones the kernel filled in for it.
    unsafe { IoUring::from_fd(rc as RawFd, params) }
}

/// Registers `ring_fd` with itself (IORING_REGISTER_RING_FDS); returns the
/// registered index, for io_uring_enter with IORING_ENTER_REGISTERED_RING.
pub fn register_ring_fd(ring_fd: RawFd) -> io::Result<i32> {
    #[repr(C)]
    struct RsrcUpdate {
        offset: u32,
        resv: u32,
        data: u64,
    }
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: ring_fd as u64,
    };
    // SAFETY: io_uring_register reads and writes one io_uring_rsrc_update,
    // which `up` is (same layout), for the duration of the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd,
            REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(up.offset as i32)
}

/// Whether this kernel accepts setup flag `flag` (with what it needs):
/// `Ok`, or the kernel's error; `None` for a knob that is not a setup flag.
pub fn try_setup_flag(flag: &str) -> Option<io::Result<()>> {
    let one = UringOptions::single(flag)?;
    if one.attach_wq {
        let first = match build_ring(4, &one, None) {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        return Some(build_ring(4, &one, Some(first.as_raw_fd())).map(drop));
    }
    Some(build_ring(4, &one, None).map(drop))
}

/// Whether this kernel accepts setup flag `flag`, asked once per flag
/// and process (for choosing the default ring).
pub fn kernel_has(flag: &str) -> bool {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<BTreeMap<String, bool>>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(BTreeMap::new()));
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    *seen
        .entry(flag.to_string())
        .or_insert_with(|| try_setup_flag(flag).is_some_and(|r| r.is_ok()))
}

/// Tries a registration on a fresh default ring; `None` for a knob that is
/// not a registration.
pub fn try_registration(flag: &str) -> Option<io::Result<()>> {
    let ring = match IoUring::new(4) {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    let s = ring.submitter();
    Some(match flag {
        "register-ring" => register_ring_fd(ring.as_raw_fd()).map(drop),
        // 0,0 asks for the current limits without changing them.
        "iowq-max-workers" => s.register_iowq_max_workers(&mut [0, 0]),
        "fixed-files" => {
            std::fs::File::open("/dev/null").and_then(|f| s.register_files(&[f.as_raw_fd()]))
        }
        "fixed-buffers" => {
            let mut page = vec![0u8; 4096];
            let iov = libc::iovec {
                iov_base: page.as_mut_ptr().cast(),
                iov_len: page.len(),
            };
            // SAFETY: the page outlives the ring, which is dropped first.
            let r = unsafe { s.register_buffers(&[iov]) };
            drop(ring);
            drop(page);
            return Some(r);
        }
        _ => return None,
    })
}

/// The opcodes this kernel supports (IORING_REGISTER_PROBE), by code.
pub fn supported_opcodes() -> io::Result<Vec<u8>> {
    let ring = IoUring::new(4)?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    Ok((0..=u8::MAX).filter(|&op| probe.is_supported(op)).collect())
}

/// Tries each setup flag `o` asks for alone (with what it needs) and
/// returns the first the kernel refuses with EINVAL.
pub fn refused_setup_flag(o: &UringOptions) -> Option<&'static str> {
    o.setup_flag_names().into_iter().find(|flag| {
        try_setup_flag(flag)
            .is_some_and(|r| r.is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)))
    })
}

/// The running kernel's release, for messages.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown release".to_string())
}

/// `kernel.io_uring_disabled`; `None` where the sysctl does not exist.
fn io_uring_disabled() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Why `io_uring_setup` failed for the ring of `o`, and what to do;
/// `instead` is the command's way around io_uring (`--engine sync`,
/// `--io epoll`).
pub fn explain_setup_error(e: &io::Error, o: &UringOptions, instead: &str) -> String {
    let sysctl = io_uring_disabled();
    match e.raw_os_error() {
        Some(libc::EPERM) if o.sqpoll && sysctl.unwrap_or(0) == 0 => {
            "io_uring_setup refused --sqpoll (EPERM): before Linux 5.11 SQPOLL needs root \
             (CAP_SYS_ADMIN); run as root, or drop --sqpoll"
                .to_string()
        }
        Some(libc::EPERM) => match sysctl {
            Some(2) => format!(
                "io_uring is disabled on this host (kernel.io_uring_disabled=2): \
                 run `sysctl kernel.io_uring_disabled=0` as root, or use {instead}"
            ),
            Some(1) => format!(
                "io_uring is limited to the group in kernel.io_uring_group \
                 (kernel.io_uring_disabled=1): join that group, run as root, or use {instead}"
            ),
            _ => format!(
                "io_uring_setup was refused (EPERM) although kernel.io_uring_disabled allows it: \
                 a seccomp filter (container runtime, systemd SystemCallFilter) blocks io_uring; \
                 run outside it or use {instead}"
            ),
        },
        Some(libc::ENOSYS) => format!(
            "io_uring is not available (io_uring_setup: ENOSYS): the kernel was built without \
             CONFIG_IO_URING or a seccomp filter hides it; use {instead}"
        ),
        Some(libc::ENOMEM) => "io_uring_setup: not enough locked memory for the rings (kernels \
                               before 5.12 charge them to RLIMIT_MEMLOCK): raise `ulimit -l` or \
                               make the ring smaller"
            .to_string(),
        Some(libc::EINVAL) if !o.setup_flag_names().is_empty() => {
            let kernel = kernel_release();
            match refused_setup_flag(o) {
                Some(flag) => {
                    let k = knob(flag);
                    format!(
                        "io_uring_setup refused --{flag} ({}, EINVAL): this kernel ({kernel}) lacks it; it needs Linux {}",
                        k.map_or("", |k| k.kernel_name),
                        k.map_or("?", |k| k.since)
                    )
                }
                None => {
                    let names = o.setup_flag_names();
                    let why: Vec<String> = KNOBS
                        .iter()
                        .filter(|k| names.contains(&k.flag) && !k.refused.is_empty())
                        .map(|k| format!("--{} refuses {}", k.flag, k.refused))
                        .collect();
                    format!(
                        "io_uring_setup refused the combination {} (EINVAL) on this kernel ({kernel}), though each alone works{}",
                        names
                            .iter()
                            .map(|n| format!("--{n}"))
                            .collect::<Vec<_>>()
                            .join(" "),
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", why.join("; "))
                        }
                    )
                }
            }
        }
        _ => format!("io_uring setup failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_rings_with_table_flags() {
        let ring = match build_ring(8, &UringOptions::default(), None) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped builds_rings_with_table_flags: io_uring unusable here: {e}");
                return;
            }
        };
        assert_eq!(ring.params().sq_entries(), 8);
        let o = UringOptions {
            cq_size: Some(64),
            ..Default::default()
        };
        let r = build_ring(8, &o, None).unwrap();
        assert_eq!(r.params().cq_entries(), 64);
    }

    #[test]
    fn every_setup_flag_can_be_probed() {
        for k in KNOBS.iter().filter(|k| k.setup_bit().is_some()) {
            let r = try_setup_flag(k.flag).expect("setup flags are probed");
            if let Err(e) = r {
                eprintln!("skipped probing --{}: this kernel refuses it: {e}", k.flag);
            }
        }
    }

    #[test]
    fn einval_names_the_flag_or_the_combination() {
        let o = UringOptions {
            sqpoll: true,
            coop_taskrun: true,
            ..Default::default()
        };
        let e = io::Error::from_raw_os_error(libc::EINVAL);
        let msg = explain_setup_error(&e, &o, "--engine sync");
        assert!(
            msg.contains("--sqpoll") && msg.contains("--coop-taskrun"),
            "{msg}"
        );
    }
}
