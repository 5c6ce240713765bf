//! CPU lists (`0,2-3`) as fio's `cpus_allowed` writes them, the CPUs this
//! process may use, and pinning a thread to one CPU.

use crate::error::usage_error;
use anyhow::{bail, Result};
use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};

/// Parses `0,2-3` into `[0, 2, 3]` (order kept, as jobs take CPUs in turn).
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    let bad = || {
        usage_error(format!(
            "--cpus {text}: not a CPU list; write CPU numbers and ranges like 1 or 0,2-3"
        ))
    };
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let number = |n: &str| -> Result<u64> {
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // All digits: only a number too large for u64 fails here.
            n.parse::<u64>().or(Ok(u64::MAX))
        };
        let hi_text = hi;
        let (lo, hi) = (number(lo)?, number(hi)?);
        if hi < lo {
            return Err(usage_error(format!(
                "--cpus {text}: the range {lo}-{hi_text} is backwards: write the lower CPU first"
            )));
        }
        // Whether a CPU is one this process may use is the caller's check
        // (it names the allowed ones); here only what no machine has.
        if hi > u32::MAX as u64 {
            return Err(usage_error(format!(
                "--cpus {text}: CPU {hi_text} does not exist: this machine has {} CPUs (0-{})",
                configured_cpus(),
                configured_cpus() - 1
            )));
        }
        if hi - lo >= MAX_RANGE {
            return Err(usage_error(format!(
                "--cpus {text}: the range {lo}-{hi_text} is too large ({} CPUs): this machine has {} CPUs; name the CPUs it has, like 0-{}",
                hi - lo + 1,
                configured_cpus(),
                configured_cpus() - 1
            )));
        }
        cpus.extend(lo as u32..=hi as u32);
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    Ok(cpus)
}

/// The most CPUs one range may name: far more than any machine has
/// (Linux's NR_CPUS is at most 8192), small enough to expand.
const MAX_RANGE: u64 = 8192;

/// CPUs the system has (configured, online or not): the highest CPU number
/// in /sys/devices/system/cpu/possible plus one, the file glibc's
/// `sysconf(_SC_NPROCESSORS_CONF)` reads; -1 when it cannot be read.
fn configured_cpus() -> i64 {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|t| {
            t.trim()
                .split([',', '-'])
                .filter_map(|n| n.trim().parse::<i64>().ok())
                .max()
        })
        .map_or(-1, |max| max + 1)
}

/// CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<u32> {
    let Ok(set) = sched_getaffinity(None) else {
        return Vec::new();
    };
    (0..CpuSet::MAX_CPU)
        .filter(|&c| set.is_set(c))
        .map(|c| c as u32)
        .collect()
}

/// Formats CPUs as ranges: `0-3,6`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: u32) -> Result<()> {
    if cpu as usize >= CpuSet::MAX_CPU {
        bail!(
            "cannot pin job thread to CPU {cpu}: an affinity mask holds CPUs 0 to {}",
            CpuSet::MAX_CPU - 1
        );
    }
    let mut set = CpuSet::new();
    set.set(cpu as usize);
    if let Err(e) = sched_setaffinity(None, &set) {
        bail!(
            "cannot pin job thread to CPU {cpu}: {}",
            std::io::Error::from(e)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_too_large_or_backwards_say_so() {
        let msg = |t: &str| format!("{:#}", parse_cpu_list(t).unwrap_err());
        assert!(msg("0-100000000").contains("the range 0-100000000 is too large"));
        assert!(msg("99999999999999999999999").contains("does not exist"));
        assert!(msg("3-1").contains("backwards"));
        assert!(msg("1,a").contains("not a CPU list"));
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(parse_cpu_list(" 3 , 1 ").unwrap(), vec![3, 1]);
        for bad in ["", "a", "3-1", "1,", "-1", "0-100000"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
    }

    #[test]
    fn pinning_moves_the_thread_to_an_allowed_cpu() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_to_cpu(last).unwrap();
            assert_eq!(allowed_cpus(), [last]);
            let e = pin_to_cpu(1 << 20).unwrap_err().to_string();
            assert!(e.contains("affinity mask holds CPUs 0 to"), "{e}");
        })
        .join()
        .unwrap();
    }
}
