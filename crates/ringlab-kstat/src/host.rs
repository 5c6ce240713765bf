//! Facts about the host that every result carries.

use ringlab_stats::HostInfo;
use std::fs;

/// Kernel release, CPU model, online CPUs and `kernel.io_uring_disabled`.
pub fn host_info() -> HostInfo {
    HostInfo {
        hostname: uname_field(|u| &u.nodename),
        kernel: uname_field(|u| &u.release),
        cpu_model: cpu_model(),
        cpus_online: online_cpus(),
        io_uring_disabled: io_uring_disabled(),
    }
}

fn uname_field(pick: impl Fn(&libc::utsname) -> &[libc::c_char; 65]) -> String {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".to_string();
    }
    let field = pick(&u);
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn online_cpus() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

/// `kernel.io_uring_disabled`: 0 enabled, 1 only for `kernel.io_uring_group`,
/// 2 disabled. `None` on kernels without the sysctl (before 6.6).
pub fn io_uring_disabled() -> Option<u32> {
    fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_facts_are_read() {
        let h = host_info();
        assert!(
            h.kernel.chars().next().unwrap().is_ascii_digit(),
            "{}",
            h.kernel
        );
        assert!(h.cpus_online >= 1);
        assert!(!h.hostname.is_empty());
    }
}
