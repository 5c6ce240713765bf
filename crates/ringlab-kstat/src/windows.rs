//! Per-request tracepoints counted in windows (the default evidence).
//!
//! Attaching a program to `raw_syscalls:sys_enter` puts every system call
//! of every process on the kernel's slow path (the syscall-work flag) and
//! runs the program on each: at depth 1 on zram (one `io_uring_enter` a
//! request) that was about 1.4% of the CPU in a profile, most of the
//! default evidence's cost. A program on a tracepoint hit once a request
//! (`io_uring_queue_async_work` where every read goes to io-wq, as on zram;
//! `io_uring_poll_arm` for a socket that has no data yet) costs its call
//! and the program on each hit, about 0.3-0.5% there. So by default these
//! programs are attached for windows of [`WINDOW`] (one every
//! [`EARLY_PERIOD`] for the first [`EARLY_WINDOWS`], then one every
//! [`PERIOD`]), by a thread of its own, and the per-op figures divide the
//! counts inside the windows by the operations completed inside them. `--evidence full`
//! counts the whole run, as does asking for the knob a count proves.
//! The thread's own calls inside a window (reading the counters, its
//! sleep) are a handful per window against thousands of operations.
//!
//! Why the windows thin out after the first 3 s: each window costs its
//! attaching and detaching (three raw tracepoint links made and closed,
//! about 1.3 ms of this thread's CPU, and the kernel patches its
//! tracepoint sites on every CPU), and for its 100 ms every process's
//! system calls take the slow path. On zram, co-running with t/io_uring
//! on one CPU (bench/zram-cost.sh, 12 co-runs each, counted from the 2nd
//! to the 5th second, 2026-12-07), ringlab's threads besides the job and
//! io-wq took 36 ns a read at depth 1 and 15 at depth 8 with batches of 8
//! with a window every second, 18 and 10 with this layout. The first
//! three stay a second apart: the first opens as the run starts
//! (connections still being made, rings warming up), and a short run's
//! figure should not rest on that one alone. A 100 ms window on a device
//! doing 100k operations a second holds 10k of them.

use crate::bpf::{skips_between, Counted, SkipCounts, TgidCounters, IO_URING_ENTER};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The operations completed so far in the run (all jobs).
pub type OpsNow = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How long each window counts.
pub const WINDOW: Duration = Duration::from_millis(100);
/// The first windows open a second apart, the first at the start of the
/// run; the later ones every [`PERIOD`].
pub const EARLY_PERIOD: Duration = Duration::from_secs(1);
/// How many windows open [`EARLY_PERIOD`] apart.
pub const EARLY_WINDOWS: u32 = 3;
/// How often a window opens after the first [`EARLY_WINDOWS`].
pub const PERIOD: Duration = Duration::from_secs(4);

/// The time from the start of window `k` (0 the first) to the start of
/// the next.
pub fn period_after(k: u32) -> Duration {
    if k + 1 < EARLY_WINDOWS {
        EARLY_PERIOD
    } else {
        PERIOD
    }
}

/// The windows' layout, in words, after "windows".
pub const LAYOUT: &str = "of 100 ms, one a second for the first 3 s, then one every 4 s";

/// How the windows were laid out, for a run's text: `windows` is the
/// result's `sampled_windows` (absent in results made when a window
/// opened every second of the run).
pub fn describe(windows: Option<u32>) -> String {
    match windows {
        None => format!("{} ms windows of every second", WINDOW.as_millis()),
        Some(n) => format!("{n} window{} {LAYOUT}", if n == 1 { "" } else { "s" }),
    }
}

/// What the windows counted.
#[derive(Clone, Debug)]
pub struct Totals {
    /// Counts inside the windows, by tracepoint (and
    /// [`crate::bpf::IO_URING_ENTER`] where `raw_syscalls:sys_enter` is
    /// counted).
    pub counts: std::collections::BTreeMap<&'static str, u64>,
    /// Tracepoints that could not be attached, with the reason.
    pub failed: Vec<(&'static str, String)>,
    /// Operations completed inside the windows.
    pub ops: u64,
    pub windows: u32,
    /// Hits the kernel skipped running a counter for during the run
    /// (nonzero only), by tracepoint: see [`TgidCounters::skipped`]; each
    /// is at most one event of this process the count is short.
    pub skipped: SkipCounts,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            counts: Default::default(),
            failed: Vec::new(),
            ops: 0,
            windows: 0,
            skipped: Ok(Default::default()),
        }
    }
}

type Stop = Arc<(Mutex<bool>, Condvar)>;

pub struct Windows {
    stop: Stop,
    thread: Option<JoinHandle<Result<Totals, String>>>,
}

/// Waits `d` or until stopped; whether stopped.
fn wait(stop: &Stop, d: Duration) -> bool {
    let deadline = Instant::now() + d;
    let (lock, cv) = &**stop;
    let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
    while !*stopped {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        stopped = cv
            .wait_timeout(stopped, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    true
}

impl Windows {
    /// Loads the counters of `tracepoints` for thread group `tgid` and
    /// starts the windows (the first opens now); `ops_now` gives the run's
    /// operations so far. `Err` when none could be loaded.
    pub fn start(
        tgid: u32,
        tracepoints: &[&'static str],
        ops_now: OpsNow,
    ) -> Result<Windows, String> {
        let points = Counted::named(tracepoints);
        let (mut c, failed) = TgidCounters::attach(tgid, &points)?;
        // Slot i counts points[i]; the io_uring_enter count of sys_enter
        // is in slot points.len().
        let mut slots: Vec<(&'static str, u32)> = Vec::new();
        for (i, p) in points.iter().enumerate() {
            if failed.iter().any(|(name, _)| *name == p.tracepoint) {
                continue;
            }
            slots.push((p.tracepoint, i as u32));
            if p.with_io_uring_enter {
                slots.push((IO_URING_ENTER, points.len() as u32));
            }
        }
        let stop: Stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ringlab-windows".into())
            .spawn(move || {
                let mut t = Totals {
                    failed,
                    ..Totals::default()
                };
                let read = |c: &TgidCounters| -> Result<Vec<u64>, String> {
                    slots
                        .iter()
                        .map(|&(_, slot)| c.read(slot).map_err(|e| e.to_string()))
                        .collect()
                };
                let skipped_at_start = c.skipped();
                loop {
                    c.reattach()?;
                    let before = read(&c)?;
                    let o0 = ops_now();
                    let stopped = wait(&stop2, WINDOW);
                    let after = read(&c)?;
                    let o1 = ops_now();
                    c.detach();
                    for ((name, _), (a, b)) in slots.iter().zip(after.iter().zip(&before)) {
                        *t.counts.entry(name).or_insert(0) += a.saturating_sub(*b);
                    }
                    t.ops += o1.saturating_sub(o0);
                    let gap = period_after(t.windows) - WINDOW;
                    t.windows += 1;
                    if stopped || wait(&stop2, gap) {
                        t.skipped = skips_between(&skipped_at_start, c.skipped());
                        return Ok(t);
                    }
                }
            })
            .map_err(|e| format!("starting the sampling thread: {e}"))?;
        Ok(Windows {
            stop,
            thread: Some(thread),
        })
    }

    /// Ends the windows (the one open now ends here) and returns their
    /// counts.
    pub fn finish(mut self) -> Result<Totals, String> {
        {
            let (lock, cv) = &*self.stop;
            *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
            cv.notify_all();
        }
        match self.thread.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => Err("the sampling thread ended abnormally".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_reads_as_run_and_old_results_read_as_every_second() {
        assert_eq!(describe(None), "100 ms windows of every second");
        assert_eq!(
            describe(Some(4)),
            "4 windows of 100 ms, one a second for the first 3 s, then one every 4 s"
        );
        assert_eq!(
            describe(Some(1)),
            "1 window of 100 ms, one a second for the first 3 s, then one every 4 s"
        );
        assert_eq!(WINDOW, Duration::from_millis(100));
    }

    #[test]
    fn three_windows_a_second_apart_then_one_every_four_seconds() {
        let mut at = Duration::ZERO;
        let starts: Vec<u64> = (0..6)
            .map(|k| {
                let s = at;
                at += period_after(k);
                s.as_secs()
            })
            .collect();
        assert_eq!(starts, [0, 1, 2, 6, 10, 14]);
        assert_eq!(EARLY_WINDOWS, 3);
        assert_eq!(EARLY_PERIOD, Duration::from_secs(1));
        assert_eq!(PERIOD, Duration::from_secs(4));
    }
}
