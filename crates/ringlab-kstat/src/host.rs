//! Facts about the host that every result carries (uname through rustix;
//! the online CPUs from sysfs, where glibc reads them too).

use ringlab_stats::HostInfo;
use std::ffi::CStr;
use std::fs;

/// Kernel release, CPU model, online CPUs and `kernel.io_uring_disabled`.
pub fn host_info() -> HostInfo {
    HostInfo {
        hostname: text(rustix::system::uname().nodename()),
        kernel: text(rustix::system::uname().release()),
        cpu_model: cpu_model(),
        cpus_online: online_cpu_list().len().max(1) as u32,
        io_uring_disabled: io_uring_disabled(),
    }
}

fn text(field: &CStr) -> String {
    field.to_string_lossy().into_owned()
}

fn cpu_model() -> Option<String> {
    let text = fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// CPUs online now (`/sys/devices/system/cpu/online`: `0-1,4`), the file
/// glibc's `sysconf(_SC_NPROCESSORS_ONLN)` reads too.
pub(crate) fn online_cpu_list() -> Vec<u32> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
            cpus.extend(lo..=hi);
        }
    }
    cpus
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
        assert_eq!(
            h.cpus_online as usize,
            std::fs::read_dir("/sys/devices/system/cpu")
                .unwrap()
                .flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_prefix("cpu")
                        .is_some_and(|d| d.parse::<u32>().is_ok())
                        && std::fs::read_to_string(e.path().join("online"))
                            .map_or(true, |s| s.trim() == "1")
                })
                .count(),
            "online CPUs: those whose online file says 1 (cpu0 may have none)"
        );
        assert!(!h.hostname.is_empty());
    }
}
