//! What this machine has, for the recipes' `requires` and placeholders:
//! CPUs, root, NUMA nodes, the block device under a path and its poll
//! queues, the CPU that takes its interrupts, the timer tick, nginx.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Machine {
    pub cpus: Vec<u32>,
    pub root: bool,
    pub numa_nodes: usize,
    pub kernel: String,
    /// CONFIG_HZ, or why it could not be read.
    pub hz: Result<u32, String>,
    pub nginx: Option<PathBuf>,
}

impl Machine {
    pub fn probe() -> Machine {
        Machine {
            cpus: ringlab_core::cpus::allowed_cpus(),
            // SAFETY: geteuid has no arguments and cannot fail.
            root: rustix::process::geteuid().is_root(),
            numa_nodes: numa_nodes(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            hz: config_hz(),
            nginx: find_in_path("nginx"),
        }
    }

    pub fn tick_ns(&self) -> Option<f64> {
        self.hz.as_ref().ok().map(|hz| 1e9 / f64::from(*hz))
    }

    /// Why `requirement` is not met here, or `None` when it is.
    pub fn missing(&self, requirement: &str, target: &Path) -> Option<String> {
        if let Some(n) = requirement.strip_prefix("cpus>=") {
            let n: usize = n.parse().unwrap_or(usize::MAX);
            return (self.cpus.len() < n).then(|| {
                format!(
                    "needs {n} CPUs and this process may run on {} ({}); run it on a machine (or cpuset) with {n} or more",
                    self.cpus.len(),
                    ringlab_core::cpus::format_cpu_list(&self.cpus)
                )
            });
        }
        if let Some(n) = requirement.strip_prefix("numa>=") {
            let n: usize = n.parse().unwrap_or(usize::MAX);
            return (self.numa_nodes < n).then(|| {
                format!(
                    "needs {n} NUMA nodes and this machine has {} (/sys/devices/system/node)",
                    self.numa_nodes
                )
            });
        }
        match requirement {
            "root" => (!self.root).then(|| {
                "needs root (perf counters, tracefs, pinning kernel threads): run it as root"
                    .to_string()
            }),
            "poll-queues" => poll_queues_missing(target),
            "raw-device" => {
                use std::os::unix::fs::FileTypeExt;
                let block = std::fs::metadata(target).is_ok_and(|m| m.file_type().is_block_device());
                (!block && !Path::new("/dev/zram0").exists()).then(|| {
                    "needs a raw block device: name one with --target (it is only read), or load zram (modprobe zram) so /dev/zram0 exists".to_string()
                })
            }
            "rocksdb" => find_in_path("db_bench").is_none().then(|| {
                "needs RocksDB's db_bench (not found in PATH): apt-get install librocksdb-dev rocksdb-tools liburing-dev g++, then rebuild ringlab (cargo build) so that its RocksDB plugin is built".to_string()
            }),
            other => Some(format!("unknown requirement {other}")),
        }
    }
}

fn numa_nodes() -> usize {
    std::fs::read_dir("/sys/devices/system/node")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("node") && n[4..].chars().all(|c| c.is_ascii_digit())
                })
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

/// CONFIG_HZ from /boot/config-RELEASE or /proc/config.gz.
pub fn config_hz() -> Result<u32, String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let boot = format!("/boot/config-{release}");
    let text = match std::fs::read_to_string(&boot) {
        Ok(t) => t,
        Err(_) => {
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .stderr(std::process::Stdio::null())
                .output();
            match out {
                Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
                _ => {
                    return Err(format!(
                        "neither {boot} nor /proc/config.gz (CONFIG_IKCONFIG_PROC) could be read"
                    ))
                }
            }
        }
    };
    text.lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "the kernel config has no CONFIG_HZ line".to_string())
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The whole-disk name (`vda`, `nvme0n1`) of the device holding `path`.
pub fn disk_of(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let dev = if meta.file_type_is_block() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // A partition's directory holds `partition`; its parent is the disk.
    let disk = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

trait BlockType {
    fn file_type_is_block(&self) -> bool;
}

impl BlockType for std::fs::Metadata {
    fn file_type_is_block(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        self.file_type().is_block_device()
    }
}

fn poll_queues_missing(target: &Path) -> Option<String> {
    let Some(disk) = disk_of(target) else {
        return Some(format!(
            "the block device under {} could not be found in /sys/dev/block; name a file or device on an NVMe drive with --target",
            target.display()
        ));
    };
    let io_poll = std::fs::read_to_string(format!("/sys/block/{disk}/queue/io_poll"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "absent".into());
    if io_poll == "1" {
        return None;
    }
    Some(format!(
        "{disk} has no poll queues (/sys/block/{disk}/queue/io_poll = {io_poll}), so IORING_SETUP_IOPOLL is refused: give the driver poll queues (nvme.poll_queues=N on the kernel command line or `modprobe nvme poll_queues=N`; virtio_blk.poll_queues=N for virtio disks) and name a file or device on that drive with --target"
    ))
}

/// The CPU that takes most of the block device interrupts (`virtioN-req`,
/// `nvmeNqM`), from /proc/interrupts.
pub fn block_irq_cpu() -> Option<u32> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let mut lines = text.lines();
    let header: Vec<u32> = lines
        .next()?
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut per_cpu = vec![0u64; header.len()];
    for line in lines {
        let name = line.split_whitespace().last().unwrap_or("");
        let block = (name.starts_with("virtio") && name.contains("-req"))
            || (name.starts_with("nvme") && name.contains('q'));
        if !block {
            continue;
        }
        let counts = line.split_whitespace().skip(1).take(header.len());
        for (i, c) in counts.enumerate() {
            per_cpu[i] += c.parse::<u64>().unwrap_or(0);
        }
    }
    let (i, &n) = per_cpu.iter().enumerate().max_by_key(|(_, n)| **n)?;
    (n > 0).then(|| header[i])
}

/// How quiet the machine was: load average, runnable tasks and CPU steal,
/// read from /proc before and after each sweep of a recipe.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcSample {
    pub load1: Option<f64>,
    /// Tasks runnable right now (procs_running of /proc/stat), this reader
    /// included.
    pub runnable: Option<u64>,
    /// (steal, all) jiffies summed over CPUs since boot.
    steal_total: Option<(u64, u64)>,
    /// Busy jiffies (user, nice, system) summed over CPUs since boot.
    busy: Option<u64>,
    /// CPU time of this process, its waited-for children (the runs) and
    /// the background process, ns.
    ours_ns: Option<u64>,
}

/// Other work above this share of all CPUs' time during a sweep makes the
/// machine busy: a timing verdict from it is not decided.
pub const BUSY_OTHER_PERCENT: f64 = 10.0;

/// User plus system CPU time of a `getrusage` target, ns.
fn rusage_ns(who: libc::c_int) -> Option<u64> {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// utime + stime of a live process (all its threads), ns.
fn proc_cpu_ns(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line: 12 and 13 here.
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * jiffy_ns())
}

fn jiffy_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / if hz > 0 { hz as u64 } else { 100 }
}

impl ProcSample {
    /// Now; `background`: a process of ours that runs beside the sweeps
    /// (its CPU time is ours, not other work).
    pub fn take(background: Option<u32>) -> ProcSample {
        let load1 = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok());
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let runnable = stat
            .lines()
            .find_map(|l| l.strip_prefix("procs_running "))
            .and_then(|v| v.trim().parse().ok());
        // user nice system idle iowait irq softirq steal [guest...]: guest
        // time is already inside user.
        let cpu: Vec<u64> = stat
            .lines()
            .find(|l| l.starts_with("cpu "))
            .map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let steal_total = (cpu.len() >= 8).then(|| (cpu[7], cpu.iter().take(8).sum()));
        // irq and softirq time is left out: most of it is the runs' own
        // (block completions, loopback networking for the HTTP recipes),
        // charged to no process.
        let busy = (cpu.len() >= 3).then(|| cpu[0] + cpu[1] + cpu[2]);
        let ours_ns = (|| {
            let bg = match background {
                Some(pid) => proc_cpu_ns(pid)?,
                None => 0,
            };
            Some(rusage_ns(libc::RUSAGE_SELF)? + rusage_ns(libc::RUSAGE_CHILDREN)? + bg)
        })();
        ProcSample {
            load1,
            runnable,
            steal_total,
            busy,
            ours_ns,
        }
    }
}

/// Quietness over one sweep: the figures and the warnings they raise.
pub fn quietness(
    what: &str,
    before: &ProcSample,
    after: &ProcSample,
    cpus: usize,
) -> serde_json::Value {
    let steal_percent = match (before.steal_total, after.steal_total) {
        (Some((s0, t0)), Some((s1, t1))) if t1 > t0 => {
            Some((s1.saturating_sub(s0)) as f64 * 100.0 / (t1 - t0) as f64)
        }
        _ => None,
    };
    let mut warnings = Vec::new();
    // The CPU time the machine spent busy during the sweep less what this
    // process, its runs and its background process used: other work. (The
    // load average is recorded but decides nothing: it is a one-minute
    // average that still holds the previous sweep's own runs.)
    let other_cpu_percent = match (
        before.busy,
        after.busy,
        before.steal_total,
        after.steal_total,
        before.ours_ns,
        after.ours_ns,
    ) {
        (Some(b0), Some(b1), Some((_, t0)), Some((_, t1)), Some(o0), Some(o1)) if t1 > t0 => {
            let busy_ns = b1.saturating_sub(b0) as f64 * jiffy_ns() as f64;
            let ours = o1.saturating_sub(o0) as f64;
            let all_ns = (t1 - t0) as f64 * jiffy_ns() as f64;
            Some(((busy_ns - ours).max(0.0) * 100.0 / all_ns).min(100.0))
        }
        _ => None,
    };
    if let Some(o) = other_cpu_percent.filter(|o| *o > BUSY_OTHER_PERCENT) {
        warnings.push(format!(
            "other processes used {o:.0}% of the {cpus} CPU(s)' time during the runs"
        ));
    }
    if let Some(r) = before.runnable.filter(|r| *r > 1) {
        warnings.push(format!("{} other task(s) runnable before the runs", r - 1));
    }
    if let Some(s) = steal_percent.filter(|s| *s > 2.0) {
        warnings.push(format!(
            "the hypervisor took {s:.1}% of CPU time (steal) during the runs"
        ));
    }
    serde_json::json!({
        "sweep": what,
        "load1_before": before.load1,
        "load1_after": after.load1,
        "runnable_before": before.runnable,
        "steal_percent": steal_percent,
        "other_cpu_percent": other_cpu_percent,
        "warnings": warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_work_is_the_busy_time_less_ours() {
        let at = |busy: u64, all: u64, ours_ns: u64| ProcSample {
            load1: Some(3.0),
            runnable: Some(1),
            steal_total: Some((0, all)),
            busy: Some(busy),
            ours_ns: Some(ours_ns),
        };
        let j = jiffy_ns();
        // 1000 jiffies of all CPUs, 600 busy, 500 of them ours: 10% other.
        let q = quietness("s", &at(0, 0, 0), &at(600, 1000, 500 * j), 2);
        assert!(
            (q["other_cpu_percent"].as_f64().unwrap() - 10.0).abs() < 1e-9,
            "{q}"
        );
        assert!(q["warnings"].as_array().unwrap().is_empty(), "{q}");
        // The same busy time, 200 jiffies ours: 40% other, a warning; the
        // load average alone (3.0: our own previous sweep) warns of nothing.
        let q = quietness("s", &at(0, 0, 0), &at(600, 1000, 200 * j), 2);
        assert!(
            (q["other_cpu_percent"].as_f64().unwrap() - 40.0).abs() < 1e-9,
            "{q}"
        );
        let w = q["warnings"].as_array().unwrap();
        assert_eq!(w.len(), 1, "{q}");
        assert!(w[0].as_str().unwrap().contains("40%"), "{q}");
    }

    #[test]
    fn requirements_name_what_is_missing() {
        let m = Machine {
            cpus: vec![0],
            root: false,
            numa_nodes: 1,
            kernel: "6.1".into(),
            hz: Err("no config".into()),
            nginx: None,
        };
        let t = Path::new("/");
        assert!(m.missing("cpus>=2", t).unwrap().contains("needs 2 CPUs"));
        assert!(m.missing("cpus>=1", t).is_none());
        assert!(m.missing("numa>=2", t).unwrap().contains("1"));
        assert!(m.missing("root", t).unwrap().contains("root"));
        assert!(m.missing("tea", t).unwrap().contains("unknown"));
    }
}
