//! The I/O loop's clock, in nanoseconds as a `u64`: the CPU's time stamp
//! counter where the kernel itself times with it (fio's default
//! `clocksource=cpu`), else CLOCK_MONOTONIC read from the vDSO.
//!
//! Three clock reads time one request (issue, hand-over, completion), and
//! at depth 1 on a fast device they were the loop's largest user-space
//! cost. Measured on the development machine (2026-11-25, `clock_gettime`
//! in a loop against `rdtsc` in a loop): CLOCK_MONOTONIC 23.4 ns a read, a
//! bare `rdtsc` 9.6 ns, `rdtscp` 18.6 ns. The `quanta` crate does the same
//! job but fences each read (about 16 ns here), which is most of what this
//! saves; hence these few lines. A bare `rdtsc` may run some cycles
//! early or late against the instructions around it: nothing beside
//! microsecond latencies, and what fio does.
//!
//! The counter is used only where the kernel trusts it: its clocksource is
//! `tsc` (the kernel checked that the counters of all CPUs agree and
//! watches them) and the CPU says its counter runs at a constant rate
//! through sleep states (`constant_tsc`, `nonstop_tsc`). Ticks become
//! nanoseconds by a rate measured against CLOCK_MONOTONIC once per
//! process (about 2 ms, to within some parts per million: see
//! [`tsc_rate`]); a latency is a difference of two nearby readings, so the
//! rate's error is a fraction of a nanosecond in it.
//!
//! The kernel's tracepoint timestamps (`bpf_ktime_get_ns`) are on
//! CLOCK_MONOTONIC: stamps that are joined with them (the stage
//! latencies, a completion thread's stamps) need a [`Clock`] on
//! CLOCK_MONOTONIC ([`Source::Mono`]), which [`Clock::start`] gives.

use std::sync::OnceLock;

/// CLOCK_MONOTONIC now, in nanoseconds.
#[inline]
pub fn mono_ns() -> u64 {
    // CLOCK_MONOTONIC exists on every Linux.
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// Clock `clock` now, in nanoseconds; `None` where it cannot be read (a
/// thread's CPU-time clock once the thread is gone).
#[inline]
pub fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The time stamp counter now (0 where there is none).
#[inline]
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64; it is used only
        // once tsc_rate() found the counter usable.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Which clock a job times with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Source {
    /// The time stamp counter where [`tsc_rate`] finds it usable, else
    /// CLOCK_MONOTONIC (fio's default, `clocksource=cpu` when reliable).
    #[default]
    Auto,
    /// The time stamp counter; [`Clock::start`] refuses where it is not
    /// usable (fio's `clocksource=cpu`).
    Tsc,
    /// CLOCK_MONOTONIC (fio's `clocksource=clock_gettime`).
    Mono,
}

impl Source {
    /// The clock `Auto` comes to here, or the one asked for.
    pub fn resolved(self) -> Source {
        match self {
            Source::Auto if tsc_rate().is_ok() => Source::Tsc,
            Source::Auto => Source::Mono,
            s => s,
        }
    }

    /// The name a result gives the clock that timed the run.
    pub fn name(self) -> &'static str {
        match self.resolved() {
            Source::Tsc => "tsc",
            _ => "clock_gettime",
        }
    }
}

/// Nanoseconds per tick of the time stamp counter in 32.32 fixed point,
/// measured once per process, or why the counter is not used.
pub fn tsc_rate() -> Result<u64, &'static str> {
    static RATE: OnceLock<Result<u64, &'static str>> = OnceLock::new();
    *RATE.get_or_init(|| {
        if !cfg!(target_arch = "x86_64") {
            return Err("no time stamp counter on this architecture");
        }
        let source = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .unwrap_or_default();
        if source.trim() != "tsc" {
            return Err("the kernel's clocksource is not tsc");
        }
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flags = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        if !has("constant_tsc") || !has("nonstop_tsc") {
            return Err("the CPU's time stamp counter is not constant_tsc and nonstop_tsc");
        }
        // Two (CLOCK_MONOTONIC, counter) pairs 2 ms apart, each the
        // tightest of a few brackets: each end is off by a few ns, so the
        // rate by some parts per million.
        let pair = || {
            (0..8)
                .map(|_| {
                    let a = mono_ns();
                    let t = tsc();
                    let b = mono_ns();
                    (b - a, a + (b - a) / 2, t)
                })
                .min()
                .map(|(_, m, t)| (m, t))
                .unwrap_or((mono_ns(), tsc()))
        };
        let (m0, t0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (m1, t1) = pair();
        if t1 <= t0 || m1 <= m0 {
            return Err("the time stamp counter did not advance with CLOCK_MONOTONIC");
        }
        let rate = (u128::from(m1 - m0) << 32) / u128::from(t1 - t0);
        u64::try_from(rate).map_err(|_| "the time stamp counter runs slower than 1 tick/ns")
    })
}

/// A clock started at a moment: nanoseconds since then.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// CLOCK_MONOTONIC nanoseconds of this clock's zero.
    pub zero_ns: u64,
    /// On the time stamp counter: its reading at the zero and the rate.
    tsc: Option<(u64, u64)>,
}

impl Clock {
    /// A clock on CLOCK_MONOTONIC whose zero is now.
    pub fn start_mono() -> Clock {
        Clock {
            zero_ns: mono_ns(),
            tsc: None,
        }
    }

    /// A clock on `source` whose zero is now; `Tsc` where the counter is
    /// not usable is an error that says why.
    pub fn start(source: Source) -> Result<Clock, String> {
        let rate = match source {
            Source::Mono => return Ok(Clock::start_mono()),
            Source::Auto => tsc_rate().ok(),
            Source::Tsc => Some(tsc_rate().map_err(|why| {
                format!("the time stamp counter cannot time this run: {why}; use the clock_gettime clocksource")
            })?),
        };
        Ok(match rate {
            Some(rate) => Clock {
                zero_ns: mono_ns(),
                tsc: Some((tsc(), rate)),
            },
            None => Clock::start_mono(),
        })
    }

    /// Which clock this is.
    pub fn source(&self) -> Source {
        if self.tsc.is_some() {
            Source::Tsc
        } else {
            Source::Mono
        }
    }

    /// Nanoseconds since the zero (0 for a reading taken before it).
    #[inline]
    pub fn elapsed_ns(&self) -> u64 {
        match self.tsc {
            Some((zero, rate)) => {
                ((u128::from(tsc().saturating_sub(zero)) * u128::from(rate)) >> 32) as u64
            }
            None => mono_ns().saturating_sub(self.zero_ns),
        }
    }

    /// A CLOCK_MONOTONIC reading (from [`mono_ns`]) on this clock. Exact on
    /// a CLOCK_MONOTONIC clock; on the counter it is off by the rate's error
    /// times the time since the zero, so stamps meant to be compared with
    /// this clock's readings come from a [`Source::Mono`] clock.
    #[inline]
    pub fn since_zero(&self, mono: u64) -> u64 {
        mono.saturating_sub(self.zero_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mono_clock_is_instants_clock() {
        // Instant reads CLOCK_MONOTONIC on Linux: an interval measured by
        // both agrees to well under a millisecond.
        let c = Clock::start_mono();
        let i = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let a = i.elapsed().as_nanos() as u64;
        let b = c.elapsed_ns();
        assert!(b >= 20_000_000, "{b}");
        assert!(a.abs_diff(b) < 1_000_000, "instant {a} mono {b}");
        assert_eq!(c.since_zero(c.zero_ns.saturating_sub(5)), 0);
        assert_eq!(c.source(), Source::Mono);
    }

    #[test]
    fn the_counter_clock_keeps_time_with_clock_monotonic() {
        let Ok(c) = Clock::start(Source::Auto) else {
            panic!("Auto never fails");
        };
        if c.source() == Source::Mono {
            // Not a skip of the whole: Auto fell back, as it must where
            // the counter is not usable, and Tsc says why.
            let why = tsc_rate().expect_err("Auto fell back, so the counter is unusable");
            let e = Clock::start(Source::Tsc).expect_err("Tsc refused");
            assert!(e.contains(why), "{e}");
            return;
        }
        // 50 ms on both clocks agree to 0.1% (the rate is measured over
        // 2 ms to some parts per million).
        let m = Clock::start_mono();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (t, b) = (c.elapsed_ns(), m.elapsed_ns());
        assert!(t.abs_diff(b) < b / 1000, "tsc {t} mono {b}");
        assert_eq!(Source::Auto.name(), "tsc");
    }
}
