//! fio's options that act on a job's thread or on the other jobs, read by
//! the fio personality: `exitall` / `exit_what` (which jobs end when one
//! ends, backend.c `fio_terminate_threads`), `numa_cpu_nodes` /
//! `numa_mem_policy` (the job's CPUs and memory policy), and the refusal
//! of `zonemode=zbd` with the device's zoned model named.

use anyhow::Result;
use ringlab_core::usage_error;
use ringlab_io::fio::options::{self, Written};
use std::path::Path;

/// fio's exit_what: the jobs ended when a job ends under exitall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its group (fio's default).
    Group,
    /// Every job running now, of every group; later batches still run.
    Stonewall,
    /// Every job, and none starts after.
    All,
}

impl ExitWhat {
    pub fn name(self) -> &'static str {
        match self {
            ExitWhat::Group => "group",
            ExitWhat::Stonewall => "stonewall",
            ExitWhat::All => "all",
        }
    }
}

/// fio's numa_cpu_nodes and numa_mem_policy of one job, checked against
/// this machine's nodes.
#[derive(Clone, Debug, Default)]
pub struct Numa {
    /// The CPUs of the nodes named.
    pub cpus: Option<Vec<usize>>,
    /// set_mempolicy's mode and node mask.
    pub mem: Option<(i32, Vec<usize>)>,
    /// As written, for the evidence.
    pub shown: Vec<String>,
}

const NODE_DIR: &str = "/sys/devices/system/node";

fn canonical(key: &str) -> String {
    options::find(key)
        .map(|o| o.name.to_string())
        .unwrap_or_else(|| key.replace('-', "_"))
}

fn value(o: &Written) -> String {
    o.value.clone().unwrap_or_default().trim().to_string()
}

/// A node list: `0`, `0-1`, `0,2`, `all`, each node checked to exist.
fn nodes(o: &Written, text: &str) -> Result<Vec<usize>> {
    let present = present_nodes();
    if text == "all" {
        return Ok(present);
    }
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let parse = |t: &str| {
            t.trim().parse::<usize>().map_err(|_| {
                usage_error(format!(
                    "{}={text}: {t} is not a node number (fio's node lists: 0, 0-1, 0,2 or all)",
                    o.origin.name(&o.key)
                ))
            })
        };
        let (a, b) = (parse(a)?, parse(b)?);
        for n in a..=b.max(a) {
            if !present.contains(&n) {
                return Err(usage_error(format!(
                    "{}={text}: NUMA node {n} does not exist on this machine ({} has node{} {}); fio refuses it too when it runs ('numa_parse_nodestring failed')",
                    o.origin.name(&o.key),
                    NODE_DIR,
                    if present.len() == 1 { "" } else { "s" },
                    present.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
                )));
            }
            out.push(n);
        }
    }
    if out.is_empty() {
        return Err(usage_error(format!(
            "{}={text}: no node named",
            o.origin.name(&o.key)
        )));
    }
    Ok(out)
}

/// The NUMA nodes this machine has (node0 when sysfs shows none).
fn present_nodes() -> Vec<usize> {
    let mut v: Vec<usize> = std::fs::read_dir(NODE_DIR)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("node"))
                        .and_then(|n| n.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    if v.is_empty() {
        v.push(0);
    }
    v.sort_unstable();
    v
}

/// The CPUs of a node (its sysfs cpulist).
fn node_cpus(node: usize) -> Vec<usize> {
    let text =
        std::fs::read_to_string(format!("{NODE_DIR}/node{node}/cpulist")).unwrap_or_else(|_| {
            // No sysfs node directory: one node with every CPU.
            format!(
                "0-{}",
                std::thread::available_parallelism().map_or(0, |n| n.get() - 1)
            )
        });
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// Takes exitall, exit_what, numa_cpu_nodes and numa_mem_policy out of a
/// job's options.
pub fn take(opts: &mut Vec<Written>, exit: &mut (bool, ExitWhat), numa: &mut Numa) -> Result<()> {
    let mut exitall = false;
    let mut what = ExitWhat::Group;
    let mut keep = Vec::new();
    for o in opts.drain(..) {
        match canonical(&o.key).as_str() {
            "exitall" => {
                exitall = !matches!(value(&o).as_str(), "0" | "false" | "off");
            }
            "exit_what" => {
                what = match value(&o).as_str() {
                    "group" | "" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    v => {
                        return Err(usage_error(format!(
                            "{}={v}: fio's values are group, stonewall, all",
                            o.origin.name(&o.key)
                        )))
                    }
                }
            }
            "numa_cpu_nodes" => {
                let v = value(&o);
                let mut cpus: Vec<usize> = nodes(&o, &v)?.into_iter().flat_map(node_cpus).collect();
                cpus.sort_unstable();
                cpus.dedup();
                numa.cpus = Some(cpus);
                numa.shown.push(format!("numa_cpu_nodes={v}"));
            }
            "numa_mem_policy" => {
                let v = value(&o);
                let (mode, list) = v.split_once(':').unwrap_or((v.as_str(), ""));
                let need = |list: &str| -> Result<Vec<usize>> {
                    if list.trim().is_empty() {
                        return Err(usage_error(format!(
                            "{}={v}: {mode} needs a node list ({mode}:NODES)",
                            o.origin.name(&o.key)
                        )));
                    }
                    nodes(&o, list.trim())
                };
                numa.mem = Some(match mode.trim() {
                    "default" => (libc::MPOL_DEFAULT, Vec::new()),
                    "local" => (libc::MPOL_LOCAL, Vec::new()),
                    "prefer" => {
                        let n = need(list)?;
                        if n.len() != 1 {
                            return Err(usage_error(format!(
                                "{}={v}: prefer takes one node (fio's rule)",
                                o.origin.name(&o.key)
                            )));
                        }
                        (libc::MPOL_PREFERRED, n)
                    }
                    "bind" => (libc::MPOL_BIND, need(list)?),
                    "interleave" => (libc::MPOL_INTERLEAVE, need(list)?),
                    m => {
                        return Err(usage_error(format!(
                            "{}={v}: {m} is not one of fio's modes (default, prefer, bind, interleave, local)",
                            o.origin.name(&o.key)
                        )))
                    }
                });
                numa.shown.push(format!("numa_mem_policy={v}"));
            }
            _ => keep.push(o),
        }
    }
    if numa.cpus.is_some()
        && keep
            .iter()
            .any(|o| matches!(canonical(&o.key).as_str(), "cpus_allowed" | "cpumask"))
    {
        return Err(usage_error(
            "numa_cpu_nodes and cpus_allowed both choose the job's CPUs: give one of them",
        ));
    }
    *opts = keep;
    *exit = (exitall, what);
    Ok(())
}

impl Numa {
    /// Applies the CPUs and memory policy to the calling thread; the job's
    /// threads, started from it, inherit both.
    pub fn apply(&self) -> Result<()> {
        if let Some(cpus) = &self.cpus {
            // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes
            // within it for CPUs below CPU_SETSIZE.
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            for &c in cpus.iter().filter(|c| **c < libc::CPU_SETSIZE as usize) {
                // SAFETY: c is below CPU_SETSIZE (filtered above).
                unsafe { libc::CPU_SET(c, &mut set) };
            }
            // SAFETY: the set is a valid cpu_set_t of the size passed.
            let rc =
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            if rc != 0 {
                anyhow::bail!(
                    "numa_cpu_nodes: sched_setaffinity to CPUs {cpus:?} failed: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        if let Some((mode, nodes)) = &self.mem {
            let mut mask = [0u64; 16];
            for &n in nodes.iter().filter(|n| **n < 1024) {
                mask[n / 64] |= 1 << (n % 64);
            }
            let (ptr, maxnode) = if nodes.is_empty() {
                (std::ptr::null::<u64>(), 0usize)
            } else {
                (mask.as_ptr(), 1025usize)
            };
            // SAFETY: set_mempolicy reads at most maxnode-1 bits from the
            // mask, which holds 1024.
            let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, *mode, ptr, maxnode) };
            if rc != 0 {
                anyhow::bail!(
                    "numa_mem_policy: set_mempolicy(mode {mode}, nodes {nodes:?}) failed: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        Ok(())
    }
}

/// fio's zonemode=zbd needs a zoned block device; ringlab has no zbd mode,
/// so it refuses it naming what the target is and which devices here are
/// zoned.
pub fn refuse_zbd(opts: &[Written], target: &Path) -> Result<()> {
    let Some(o) = opts
        .iter()
        .rev()
        .find(|o| canonical(&o.key) == "zonemode")
        .filter(|o| value(o) == "zbd")
    else {
        return Ok(());
    };
    let dev = target
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let zoned_of = |d: &str| {
        std::fs::read_to_string(format!("/sys/block/{d}/queue/zoned"))
            .map(|z| z.trim().to_string())
            .unwrap_or_else(|e| format!("unreadable: {e}"))
    };
    let no_zbd =
        "ringlab has no equivalent of fio's zbd mode (write pointers, zone resets, max_open_zones)";
    let what = match dev {
        Some(d) if Path::new(&format!("/sys/block/{d}")).exists() => {
            let zoned = zoned_of(&d);
            if zoned == "host-managed" || zoned == "host-aware" {
                format!("{} is zoned (/sys/block/{d}/queue/zoned is '{zoned}'), but {no_zbd}: it would write where the device refuses", target.display())
            } else {
                format!("{} is not a zoned block device (/sys/block/{d}/queue/zoned is '{zoned}'), and {no_zbd}", target.display())
            }
        }
        _ => {
            let mut seen: Vec<String> = std::fs::read_dir("/sys/block")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .map(|d| format!("{d}: {}", zoned_of(&d)))
                        .collect()
                })
                .unwrap_or_default();
            seen.sort();
            format!(
                "{} {}, so it has no /sys/block/X/queue/zoned to read (here: {}); {no_zbd}",
                target.display(),
                if target.exists() {
                    "is not a block device"
                } else {
                    "does not exist"
                },
                if seen.is_empty() {
                    "no block devices".to_string()
                } else {
                    seen.join(", ")
                }
            )
        }
    };
    let shown = o.origin.name(&o.key);
    Err(usage_error(format!("{shown}=zbd: {what}")))
}

/// The stop flags of the jobs of one batch, and fio's exitall between them.
pub struct Exits {
    flags: Vec<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    ended: Vec<std::sync::atomic::AtomicBool>,
    /// Why a job was stopped by another's end.
    by: Vec<std::sync::Mutex<Option<String>>>,
    jobs: Vec<(String, u32, (bool, ExitWhat))>,
    exitall: bool,
    stop_later: std::sync::atomic::AtomicBool,
    done: std::sync::atomic::AtomicBool,
}

impl Exits {
    /// `jobs`: name, group and (exitall, exit_what) of each member;
    /// `exitall`: set in any job of the run (fio's flag is global).
    pub fn new(jobs: &[(String, u32, (bool, ExitWhat))], exitall: bool) -> Exits {
        use std::sync::atomic::AtomicBool;
        Exits {
            flags: jobs
                .iter()
                .map(|_| std::sync::Arc::new(AtomicBool::new(false)))
                .collect(),
            ended: jobs.iter().map(|_| AtomicBool::new(false)).collect(),
            by: jobs.iter().map(|_| std::sync::Mutex::new(None)).collect(),
            jobs: jobs.to_vec(),
            exitall,
            stop_later: AtomicBool::new(false),
            done: AtomicBool::new(false),
        }
    }

    /// Member `k`'s stop flag (its run's `interrupted`).
    pub fn flag(&self, k: usize) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.flags[k].clone()
    }

    /// Passes an interruption (SIGINT, SIGTERM) on to every member until
    /// all have ended.
    pub fn forward(&self, interrupted: &std::sync::atomic::AtomicBool) {
        use std::sync::atomic::Ordering;
        while !self.done.load(Ordering::SeqCst) {
            if interrupted.load(Ordering::SeqCst) {
                for f in &self.flags {
                    f.store(true, Ordering::SeqCst);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Member `k` ended: under exitall, fio_terminate_threads(its group,
    /// its exit_what).
    pub fn ended(&self, k: usize) {
        use std::sync::atomic::Ordering;
        self.ended[k].store(true, Ordering::SeqCst);
        if !self.exitall {
            return;
        }
        let (name, group, (_, what)) = &self.jobs[k];
        if *what == ExitWhat::All {
            self.stop_later.store(true, Ordering::SeqCst);
        }
        for (m, (_, g, _)) in self.jobs.iter().enumerate() {
            let hit = match what {
                ExitWhat::Group => g == group,
                ExitWhat::Stonewall | ExitWhat::All => true,
            };
            if m == k || !hit || self.ended[m].load(Ordering::SeqCst) {
                continue;
            }
            let mut by = self.by[m].lock().unwrap_or_else(|p| p.into_inner());
            if by.is_none() && !self.flags[m].load(Ordering::SeqCst) {
                *by = Some(format!(
                    "ended by exitall when [{name}] finished (exit_what={}), as fio does: the figures cover the run up to then",
                    what.name()
                ));
                self.flags[m].store(true, Ordering::SeqCst);
            }
        }
    }

    /// Every member has ended: the forwarder stops.
    pub fn all_ended(&self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether member `k` was stopped by another's end.
    pub fn stopped(&self, k: usize) -> bool {
        self.by[k]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// exit_what=all ended a job: no later batch starts.
    pub fn stop_later(&self) -> bool {
        self.stop_later.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Member `k`'s result, its interruption warning replaced by the
    /// reason when exitall ended it.
    pub fn explain(&self, k: usize, mut r: ringlab_stats::RunResult) -> ringlab_stats::RunResult {
        let by = self.by[k].lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(why) = by {
            r.warnings.retain(|w| !w.starts_with("interrupted:"));
            r.warnings.push(why);
        }
        r
    }
}
