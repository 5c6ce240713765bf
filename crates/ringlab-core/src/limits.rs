//! Resource limits a run needs, raised where the process may, or a usage
//! error that says how.

use crate::error::usage_error;
use anyhow::Result;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Raises RLIMIT_NOFILE so that `need` descriptors fit: the soft limit up
/// to the hard one, or both where the process may (root). `lower` names the
/// flag that needs fewer (`--numjobs`).
pub fn ensure_fd_limit(need: u64, lower: &str) -> Result<()> {
    let lim = getrlimit(Resource::Nofile);
    // None is RLIM_INFINITY.
    let cur = lim.current.unwrap_or(u64::MAX);
    let hard = lim.maximum.unwrap_or(u64::MAX);
    if cur >= need {
        return Ok(());
    }
    for max in [hard.max(need), hard] {
        if need > max {
            continue;
        }
        let want = Rlimit {
            current: Some(need),
            maximum: (max != u64::MAX).then_some(max),
        };
        if setrlimit(Resource::Nofile, want).is_ok() {
            return Ok(());
        }
    }
    Err(usage_error(format!(
        "about {need} file descriptors are needed but the limit is {cur} (hard {hard}): raise it with 'ulimit -n {need}' (as root, or in /etc/security/limits.conf) or lower {lower}"
    )))
}
/// The memory this process may still use: the host's MemAvailable, or less
/// where a memory cgroup limits it (cgroup v2 `memory.max` less
/// `memory.current`, or v1 `memory.limit_in_bytes` less
/// `memory.usage_in_bytes`, on the process's cgroup and every parent).
/// Returns the bytes and what limits them ("the host", "the cgroup").
pub fn memory_available() -> Option<(u64, &'static str)> {
    let host = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t
            .lines()
            .find(|l| l.starts_with("MemAvailable:"))?
            .to_string();
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    let cgroup = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| cgroup_room(&t, std::path::Path::new("/sys/fs/cgroup")));
    match (host, cgroup) {
        (Some(h), Some(c)) if c < h => Some((c, "the memory cgroup's limit")),
        (Some(h), _) => Some((h, "the host")),
        (None, Some(c)) => Some((c, "the memory cgroup's limit")),
        (None, None) => None,
    }
}

/// The smallest room (limit less usage) over the process's memory cgroup
/// and its parents, read under `root`; `None` where nothing limits it.
fn cgroup_room(proc_cgroup: &str, root: &std::path::Path) -> Option<u64> {
    let read = |p: std::path::PathBuf| -> Option<u64> {
        std::fs::read_to_string(p).ok()?.trim().parse().ok()
    };
    let mut best: Option<u64> = None;
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (base, max, cur) = if id == "0" && ctl.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if ctl.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        loop {
            if let Some(limit) = read(dir.join(max)) {
                // v1 reports "no limit" as a huge page-rounded number.
                if limit < (1u64 << 60) {
                    let used = read(dir.join(cur)).unwrap_or(0);
                    let room = limit.saturating_sub(used);
                    best = Some(best.map_or(room, |b| b.min(room)));
                }
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// What limits the threads this process may start: its pids cgroup
/// (`pids.max` and `pids.current`) and RLIMIT_NPROC.
pub fn thread_limits() -> String {
    let mut parts = Vec::new();
    if let Ok(cg) = std::fs::read_to_string("/proc/self/cgroup") {
        for line in cg.lines() {
            let mut it = line.splitn(3, ':');
            let (Some(_), Some(ctl), Some(path)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            let base = if ctl.is_empty() {
                std::path::PathBuf::from("/sys/fs/cgroup")
            } else if ctl.split(',').any(|c| c == "pids") {
                std::path::PathBuf::from("/sys/fs/cgroup/pids")
            } else {
                continue;
            };
            let dir = base.join(path.trim_start_matches('/'));
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
            if let (Some(max), Some(cur)) = (read("pids.max"), read("pids.current")) {
                if max.trim() != "max" {
                    parts.push(format!(
                        "the pids cgroup {} allows {} tasks ({} in use now)",
                        dir.display(),
                        max.trim(),
                        cur.trim()
                    ));
                }
            }
        }
    }
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
    {
        parts.push(format!("RLIMIT_NPROC (ulimit -u) is {}", rl.rlim_cur));
    }
    if parts.is_empty() {
        "a pids cgroup or RLIMIT_NPROC limit".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup_limit_and_its_parents_bound_the_room() {
        let root = std::env::temp_dir().join(format!("ringlab-cg-{}", std::process::id()));
        let leaf = root.join("a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(leaf.join("memory.max"), "max\n").unwrap();
        std::fs::write(root.join("a/memory.max"), "4294967296\n").unwrap();
        std::fs::write(root.join("a/memory.current"), "1073741824\n").unwrap();
        assert_eq!(cgroup_room("0::/a/b\n", &root), Some(3 << 30));
        assert_eq!(cgroup_room("0::/\n", &root), None);
        let v1 = root.join("memory/x");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "2147483648\n").unwrap();
        std::fs::write(v1.join("memory.usage_in_bytes"), "0\n").unwrap();
        assert_eq!(cgroup_room("4:memory:/x\n", &root), Some(2 << 30));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
