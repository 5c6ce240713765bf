//! Resource limits a run needs, raised where the process may, or a usage
//! error that says how.

use crate::error::usage_error;
use anyhow::Result;

/// Raises RLIMIT_NOFILE so that `need` descriptors fit: the soft limit up
/// to the hard one, or both where the process may (root). `lower` names the
/// flag that needs fewer (`--numjobs`).
pub fn ensure_fd_limit(need: u64, lower: &str) -> Result<()> {
    // SAFETY: getrlimit writes into the struct we pass.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= need {
        return Ok(());
    }
    for max in [lim.rlim_max.max(need), lim.rlim_max] {
        if need > max {
            continue;
        }
        let want = libc::rlimit {
            rlim_cur: need,
            rlim_max: max,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            return Ok(());
        }
    }
    Err(usage_error(format!(
        "about {need} file descriptors are needed but the limit is {} (hard {}): raise it with 'ulimit -n {need}' (as root, or in /etc/security/limits.conf) or lower {lower}",
        lim.rlim_cur, lim.rlim_max
    )))
}
