//! CPU time and context switches of the calling thread.
//!
//! getrusage(RUSAGE_THREAD) stays on libc: rustix has no getrusage.

use std::io;

/// A snapshot of the calling thread's resource usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

fn timeval_ns(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000
}

impl ThreadUsage {
    /// Reads `getrusage(RUSAGE_THREAD)` for the calling thread.
    pub fn now() -> io::Result<ThreadUsage> {
        // SAFETY: getrusage writes into the zeroed struct we pass; no other
        // memory is touched.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ThreadUsage {
            user_ns: timeval_ns(ru.ru_utime),
            sys_ns: timeval_ns(ru.ru_stime),
            voluntary_switches: ru.ru_nvcsw as u64,
            involuntary_switches: ru.ru_nivcsw as u64,
        })
    }

    /// Usage between an earlier snapshot and this one.
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_accumulates_cpu_time_and_sleeping_switches_voluntarily() {
        let start = ThreadUsage::now().unwrap();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 30 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let used = ThreadUsage::now().unwrap().since(&start);
        assert!(used.user_ns + used.sys_ns > 0, "{used:?}");
        assert!(used.voluntary_switches >= 1, "{used:?}");
    }
}
