//! The I/O loop's clock: CLOCK_MONOTONIC read straight from the vDSO, in
//! nanoseconds as a `u64`.
//!
//! `std::time::Instant` reads the same clock, but every `elapsed()` adds a
//! checked timespec subtraction and a `Duration` conversion: about 20 ns
//! a request at depth 1 in a profile (zram, 2026-11-25), where the three
//! clock reads that time one request are the loop's largest user-space
//! cost. The kernel's tracepoint timestamps (`bpf_ktime_get_ns`) are on
//! this clock too, so stamps join them without conversion.

/// CLOCK_MONOTONIC now, in nanoseconds.
#[inline]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; CLOCK_MONOTONIC
    // exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A clock started at a moment: nanoseconds since then.
#[derive(Clone, Copy, Debug)]
pub struct Mono {
    /// CLOCK_MONOTONIC nanoseconds of this clock's zero.
    pub zero_ns: u64,
}

impl Mono {
    /// A clock whose zero is now.
    pub fn start() -> Mono {
        Mono { zero_ns: mono_ns() }
    }

    /// Nanoseconds since the zero (0 for a reading taken before it).
    #[inline]
    pub fn elapsed_ns(&self) -> u64 {
        mono_ns().saturating_sub(self.zero_ns)
    }

    /// A CLOCK_MONOTONIC reading (from [`mono_ns`]) on this clock.
    #[inline]
    pub fn since_zero(&self, mono: u64) -> u64 {
        mono.saturating_sub(self.zero_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_instants_clock() {
        // Instant reads CLOCK_MONOTONIC on Linux: an interval measured by
        // both agrees to well under a millisecond.
        let c = Mono::start();
        let i = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let a = i.elapsed().as_nanos() as u64;
        let b = c.elapsed_ns();
        assert!(b >= 20_000_000, "{b}");
        assert!(a.abs_diff(b) < 1_000_000, "instant {a} mono {b}");
        assert_eq!(c.since_zero(c.zero_ns.saturating_sub(5)), 0);
    }
}
