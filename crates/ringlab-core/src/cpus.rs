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
        let lo: u32 = lo.parse().map_err(|_| bad())?;
        let hi: u32 = hi.parse().map_err(|_| bad())?;
        if hi < lo || hi - lo > 4096 {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    if cpus.is_empty() {
        return Err(bad());
    }
    Ok(cpus)
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
