//! Children that cannot outlive ringlab: every command ringlab starts (a
//! sweep's runs, a recipe's background server, db_bench) is prepared by
//! [`die_with_parent`].

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Prepares `cmd` so that its process gets SIGTERM when ringlab dies,
/// however it dies (SIGKILL included: `PR_SET_PDEATHSIG`), and is not
/// started at all if ringlab died before that took effect; with `cpus`, it
/// runs on those CPUs only.
///
/// The death signal follows the thread that forks: spawn from a thread that
/// lives as long as the child (the main thread, or the one that waits).
pub fn die_with_parent(cmd: &mut Command, cpus: &[u32]) {
    use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
    use rustix::thread::{sched_setaffinity, CpuSet};
    let parent = Pid::from_raw(std::process::id() as i32);
    let pin = !cpus.is_empty();
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c as usize);
    }
    // SAFETY: only prctl, getppid and sched_setaffinity (rustix's raw
    // system calls, no allocation), async-signal-safe, between fork and
    // exec.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::TERM))?;
            if getppid() != parent {
                return Err(rustix::io::Errno::SRCH.into());
            }
            if pin {
                sched_setaffinity(None, &set)?;
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_runs_with_its_death_signal() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "grep -q . /proc/self/status"]);
        die_with_parent(&mut cmd, &[0]);
        assert!(cmd.status().unwrap().success());
    }
}
