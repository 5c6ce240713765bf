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
