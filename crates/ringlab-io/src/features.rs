//! `ringlab features`: what this kernel and a device support, found by
//! trying (setup flags, registrations) and asking (IORING_REGISTER_PROBE,
//! sysfs, /proc/interrupts), never by guessing from the version number.

use anyhow::Result;
use ringlab_core::uring::knobs::{Kind, KNOBS};
use ringlab_core::uring::ring::{supported_opcodes, try_registration, try_setup_flag};
use ringlab_core::usage;
use ringlab_kstat::device::{block_device_info, disk_of_path, BlockDeviceInfo};
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

/// Names of io_uring opcodes by code (include/uapi/linux/io_uring.h).
const OPCODE_NAMES: &[&str] = &[
    "NOP",
    "READV",
    "WRITEV",
    "FSYNC",
    "READ_FIXED",
    "WRITE_FIXED",
    "POLL_ADD",
    "POLL_REMOVE",
    "SYNC_FILE_RANGE",
    "SENDMSG",
    "RECVMSG",
    "TIMEOUT",
    "TIMEOUT_REMOVE",
    "ACCEPT",
    "ASYNC_CANCEL",
    "LINK_TIMEOUT",
    "CONNECT",
    "FALLOCATE",
    "OPENAT",
    "CLOSE",
    "FILES_UPDATE",
    "STATX",
    "READ",
    "WRITE",
    "FADVISE",
    "MADVISE",
    "SEND",
    "RECV",
    "OPENAT2",
    "EPOLL_CTL",
    "SPLICE",
    "PROVIDE_BUFFERS",
    "REMOVE_BUFFERS",
    "TEE",
    "SHUTDOWN",
    "RENAMEAT",
    "UNLINKAT",
    "MKDIRAT",
    "SYMLINKAT",
    "LINKAT",
    "MSG_RING",
    "FSETXATTR",
    "SETXATTR",
    "FGETXATTR",
    "GETXATTR",
    "SOCKET",
    "URING_CMD",
    "SEND_ZC",
    "SENDMSG_ZC",
    "READ_MULTISHOT",
    "WAITID",
    "FUTEX_WAIT",
    "FUTEX_WAKE",
    "FUTEX_WAITV",
    "FIXED_FD_INSTALL",
    "FTRUNCATE",
    "BIND",
    "LISTEN",
    "RECV_ZC",
    "EPOLL_WAIT",
    "READV_FIXED",
    "WRITEV_FIXED",
    "PIPE",
];

/// One knob and whether this kernel took it.
#[derive(Debug, Serialize)]
pub struct KnobSupport {
    pub flag: String,
    pub kernel_name: String,
    pub since: String,
    pub supported: bool,
    /// The kernel's answer when refused.
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Features {
    pub kernel: String,
    /// `kernel.io_uring_disabled`; `null` where the sysctl does not exist.
    pub io_uring_disabled: Option<u32>,
    /// Why io_uring cannot be used at all, if it cannot.
    pub io_uring_error: Option<String>,
    pub setup_flags: Vec<KnobSupport>,
    pub registrations: Vec<KnobSupport>,
    pub opcodes: Vec<String>,
    /// RLIMIT_MEMLOCK soft limit in bytes; `null` = unlimited.
    pub memlock_limit_bytes: Option<u64>,
    pub device: Option<BlockDeviceInfo>,
}

fn support(flag: &str, kernel_name: &str, since: &str, r: std::io::Result<()>) -> KnobSupport {
    KnobSupport {
        flag: flag.to_string(),
        kernel_name: kernel_name.to_string(),
        since: since.to_string(),
        supported: r.is_ok(),
        error: r.err().map(|e| e.to_string()),
    }
}

fn memlock_limit() -> Option<u64> {
    // SAFETY: getrlimit fills the struct we own.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    (rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur)
}

/// Finds out what this kernel (and the device behind `target`) supports.
pub fn features(target: Option<&Path>) -> Result<Features> {
    let device = match target {
        Some(p) => {
            if !p.exists() {
                usage!(
                    "{} does not exist: name a block device, or a file or directory on one",
                    p.display()
                );
            }
            match disk_of_path(p) {
                Some(disk) => Some(block_device_info(&disk)),
                None => usage!(
                    "{} is not on a block device (tmpfs, overlay or a network file system?): name a block device, or a file on one",
                    p.display()
                ),
            }
        }
        None => None,
    };
    let host = ringlab_kstat::host_info();
    let opcodes = supported_opcodes();
    let io_uring_error = opcodes.as_ref().err().map(|e| e.to_string());
    // Every setup flag and registration of the knob table, tried.
    let setup_flags = KNOBS
        .iter()
        .filter_map(|k| try_setup_flag(k.flag).map(|r| support(k.flag, k.kernel_name, k.since, r)))
        .collect();
    let registrations = KNOBS
        .iter()
        .filter(|k| k.kind == Kind::Registration)
        .filter_map(|k| {
            try_registration(k.flag).map(|r| support(k.flag, k.kernel_name, k.since, r))
        })
        .collect();
    Ok(Features {
        kernel: host.kernel,
        io_uring_disabled: host.io_uring_disabled,
        io_uring_error,
        setup_flags,
        registrations,
        opcodes: opcodes
            .unwrap_or_default()
            .into_iter()
            .map(|op| {
                OPCODE_NAMES
                    .get(op as usize)
                    .map_or(format!("op{op}"), |n| n.to_string())
            })
            .collect(),
        memlock_limit_bytes: memlock_limit(),
        device,
    })
}

/// Renders the features for people.
pub fn render(f: &Features) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "kernel: {}", f.kernel);
    let _ = writeln!(
        out,
        "kernel.io_uring_disabled: {}",
        f.io_uring_disabled
            .map_or("not present (io_uring allowed)".to_string(), |v| v
                .to_string())
    );
    if let Some(e) = &f.io_uring_error {
        let _ = writeln!(out, "io_uring: unusable here: {e}");
    }
    for (title, list) in [
        ("io_uring setup flags", &f.setup_flags),
        ("io_uring registrations and request flags", &f.registrations),
    ] {
        let _ = writeln!(out, "{title}:");
        for k in list {
            let _ = writeln!(
                out,
                "  --{:<16} {:<34} {:<4} {}",
                k.flag,
                k.kernel_name,
                if k.supported { "yes" } else { "no" },
                match &k.error {
                    Some(e) => format!("(refused: {e}; needs Linux {})", k.since),
                    None => format!("(Linux {})", k.since),
                }
            );
        }
    }
    let _ = writeln!(out, "io_uring opcodes ({}):", f.opcodes.len());
    let mut line = String::from(" ");
    for op in &f.opcodes {
        if line.len() + op.len() > 78 {
            let _ = writeln!(out, "{line}");
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(op);
    }
    if !line.trim().is_empty() {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "RLIMIT_MEMLOCK: {}",
        f.memlock_limit_bytes
            .map_or("unlimited".to_string(), ringlab_stats::units::format_bytes)
    );
    if let Some(d) = &f.device {
        let _ = writeln!(out, "device {}:", d.name);
        let opt = |v: Option<String>| v.unwrap_or_else(|| "unknown (sysfs does not say)".into());
        let _ = writeln!(out, "  scheduler: {}", opt(d.scheduler.clone()));
        let _ = writeln!(
            out,
            "  hardware queues: {}",
            opt(d.hw_queues.map(|n| n.to_string()))
        );
        let _ = writeln!(
            out,
            "  polled I/O (queue/io_poll): {}{}",
            opt(d.io_poll.map(|p| if p { "yes" } else { "no" }.to_string())),
            d.poll_queues
                .map(|n| format!(", driver poll_queues={n}"))
                .unwrap_or_default()
        );
        if d.irqs.is_empty() {
            let _ = writeln!(
                out,
                "  interrupts: none found (a virtual device such as zram, loop or dm completes without its own vectors)"
            );
        }
        for irq in &d.irqs {
            let counts: Vec<String> = irq
                .count_per_cpu
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(cpu, n)| format!("cpu{cpu}={n}"))
                .collect();
            let _ = writeln!(
                out,
                "  irq {} {}: affinity {}, effective {}, so far {}",
                irq.irq,
                irq.name,
                opt(irq.affinity.clone()),
                opt(irq.effective_affinity.clone()),
                if counts.is_empty() {
                    "none".to_string()
                } else {
                    counts.join(" ")
                }
            );
        }
    }
    out
}
